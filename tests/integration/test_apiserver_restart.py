"""An apiserver restart in the middle of a rollout: the controller rides it out in the same process.

The simulator closes its listening socket for a few seconds (``POST /sim/restart``): watches are
cut and every request meets ``connection refused``. The controller must keep its process (same
PID), keep telling the truth on its probes (alive, and ready because its caches stay synced, as
client-go's ``HasSynced`` does), re-establish its watches once the server is back, and finish
the rollout with exactly one daemon pod per node.
"""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

DOWN_SECONDS = 3.0


async def probe_codes(ctl: ControllerProcess, seen: dict[str, set[int]], stop: asyncio.Event) -> None:
    """Poll /healthz and /readyz until ``stop``, recording every status code answered."""
    while not stop.is_set():
        for path in ("/healthz", "/readyz"):
            with contextlib.suppress(aiohttp.ClientError):
                status, _ = await ctl.get(path)
                seen[path].add(status)
        await asyncio.sleep(0.1)  # a sampling interval, not a wait for a result


async def restart_finished(sim: SimProcess) -> bool:
    """True once the simulator has been down and is serving again."""
    try:
        status, body = await sim.request("GET", "/sim/restarts")
    except aiohttp.ClientError:
        return False
    return status == 200 and bool(body["items"]) and all(o["up"] for o in body["items"])


@pytest.mark.parametrize("sim", [{"nodes": 12}], indirect=True)
async def test_rollout_survives_an_apiserver_restart(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """A 3 s apiserver outage mid-rollout: same PID, probes green, rollout completes, one pod per node."""
    await kube.create(DAEMONSETS, daemonset("agent", strategy=rolling(max_unavailable=2)), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
    pid = controller.proc.pid if controller.proc else 0
    before = (await sim.stats())["requests"]
    seen: dict[str, set[int]] = {"/healthz": set(), "/readyz": set()}
    stop = asyncio.Event()
    async with RolloutObserver(kube, "agent") as obs:
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await obs.wait_for(lambda o: bool(o.nodes_with_hash(o.current_hash)), timeout=20,
                           message="the rollout under way")
        prober = asyncio.create_task(probe_codes(controller, seen, stop), name="test-probe-poller")
        await sim.request("POST", f"/sim/restart?seconds={DOWN_SECONDS}")
        await eventually(lambda: restart_finished(sim), timeout=30, interval=0.3, message="the restart over")
        await obs.wait_rolled_out(60)
        stop.set()
        await prober
    obs.assert_clean()
    assert obs.max_pods_on_node == 1, "no node may hold two daemon pods (no surge configured)"
    assert controller.proc is not None and controller.proc.returncode is None and controller.proc.pid == pid
    assert seen == {"/healthz": {200}, "/readyz": {200}}, f"probes answered {seen} during the outage"
    outage = (await sim.request("GET", "/sim/restarts"))[1]["items"][0]
    log = (await sim.requests(since=before))["items"]
    rewatched = [r for r in log if r["verb"] == "watch" and r["user_agent"].startswith("dsctl/")
                 and r["time"] >= outage["up"]]
    assert {r["resource"] for r in rewatched} >= {"daemonsets", "pods", "nodes", "controllerrevisions"}
    writes_after = [r for r in log if r["verb"] in ("create", "delete") and r["resource"] == "pods"
                    and r["user_agent"].startswith("dsctl/") and r["time"] >= outage["up"]]
    assert writes_after, "syncs must resume after the restart"
