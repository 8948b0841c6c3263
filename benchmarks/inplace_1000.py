"""In-place against recreate over 1,000 nodes, same ``maxUnavailable``: wall time and API writes.

Setup as ``rollout_1000.py``: ``dsctl_sim serve`` and ``dsctl run`` in their own processes,
1,000 nodes, pods Ready 1 s after they (re)start, the sim's 1 s termination cap, and a
DaemonSet with ``maxUnavailable: 10%``. Each mode runs in a fresh cluster: after the first
rollout settles, the image changes, and a ``RolloutObserver`` follows the update until every
node runs one Ready pod of the new revision whose kubelet reports the new image.

- ``recreate``: ``rollingUpdateType`` unset (``Standard``): old pods are deleted, new ones
  created, scheduled and started. Lower bound: waves x (termination + startup).
- ``inplace``: ``dsctl.io/rolling-update-type: InPlaceIfPossible``: each pod is patched, its
  kubelet restarts the container. Lower bound: waves x startup.

API writes are counted two ways over the update window: the controller's own write requests
from the sim's request log (by verb and resource; reads are listed apart), and every write
the cluster stored (the resourceVersion delta: the controller's writes plus the scheduler's
bindings, the kubelets' status writes, graceful deletion and events).

Outputs ``benchmarks/results/inplace_1000.json`` and prints a side-by-side table.
Usage: ``python -m benchmarks inplace [--nodes 1000] [--max-unavailable 10%] [--startup 1.0]``.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from typing import Any

from benchmarks.harness.bounds import SIM_TERMINATION_CAP, rolling_update_bound
from benchmarks.harness.procs import proc_cpu_seconds
from benchmarks.harness.results import RESULTS
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.poll import eventually
from tests.support.requestaudit import is_controller_agent, read_all_requests
from tests.support.simproc import SimProcess

NEW_IMAGE = "registry.example/agent:2.0"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


async def _all_running(client: KubeClient, image: str, nodes: int) -> bool:
    """Every pod Ready with ``image`` in its spec and in its kubelet's container status."""
    pods = (await client.list(PODS, namespace="default"))["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    if len(live) != nodes:
        return False
    for pod in live:
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        images = [c.get("image") for c in status.get("containerStatuses") or []]
        if not ready or pod["spec"]["containers"][0]["image"] != image or images != [image]:
            return False
    return True


async def _resource_version(sim: SimProcess) -> int:
    stats = await sim.stats()
    return int(stats.get("resourceVersion") or 0)


async def run_mode(mode: str, *, nodes: int, max_unavailable: str, startup: float) -> dict[str, Any]:
    """One fresh cluster, one update in ``mode``; the figures."""
    sim_args = ["--pod-startup-seconds", str(startup), "--log-level", "warning"]
    async with SimProcess(nodes=nodes, args=sim_args, startup_timeout=120) as sim, \
            ControllerProcess(sim.kubeconfig, args=["--log-level", "info"]) as ctl:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=2000)
        try:
            ds = daemonset("agent", strategy=rolling(max_unavailable=max_unavailable))
            if mode == "inplace":
                ds["metadata"]["annotations"] = {"dsctl.io/rolling-update-type": "InPlaceIfPossible"}
            await client.create(DAEMONSETS, ds, namespace="default")
            async with RolloutObserver(client, "agent") as first:
                await first.wait_rolled_out(300)
            await eventually(lambda: _all_running(client, "registry.example/agent:1.0", nodes), timeout=120,
                             interval=0.5, message="first rollout running")
            _, cursor = await read_all_requests(sim)
            rv0 = await _resource_version(sim)
            assert ctl.proc is not None
            cpu0 = proc_cpu_seconds(ctl.proc.pid)
            before = {p["metadata"]["uid"] for p in (await client.list(PODS, namespace="default"))["items"]}
            async with RolloutObserver(client, "agent") as obs:
                t0 = time.monotonic()
                await update_template(client, "agent", image=NEW_IMAGE)
                await obs.wait_rolled_out(600)
                await eventually(lambda: _all_running(client, NEW_IMAGE, nodes), timeout=120, interval=0.1,
                                 message="new image running everywhere")
                wall = time.monotonic() - t0
            cpu = proc_cpu_seconds(ctl.proc.pid) - cpu0
            rv1 = await _resource_version(sim)
            records, _ = await read_all_requests(sim, since=cursor)
            after = {p["metadata"]["uid"] for p in (await client.list(PODS, namespace="default"))["items"]}
        finally:
            await client.close()
    mine = [r for r in records if is_controller_agent(str(r.get("user_agent") or ""))]
    writes = Counter(f"{r.get('verb')} {r.get('resource')}{'/' + r['subresource'] if r.get('subresource') else ''}"
                     for r in mine if r.get("verb") in WRITE_VERBS)
    reads = Counter(f"{r.get('verb')} {r.get('resource')}" for r in mine
                    if r.get("verb") in ("get", "list"))
    # In place, a pod is restarted, never terminated: its wave costs the start-up alone.
    termination = 0.0 if mode == "inplace" else SIM_TERMINATION_CAP
    limits = rolling_update_bound(nodes, max_unavailable, startup=startup, termination=termination)
    budget, waves, bound = limits.budget, limits.waves, limits.seconds
    return {
        "mode": mode, "nodes": nodes, "max_unavailable": max_unavailable, "budget": budget, "waves": waves,
        "lower_bound_seconds": round(bound, 2), "wall_seconds": round(wall, 2), "ratio": round(wall / bound, 3),
        "controller_writes": sum(writes.values()), "controller_writes_by_kind": dict(sorted(writes.items())),
        "controller_reads_by_kind": dict(sorted(reads.items())),
        "stored_writes": rv1 - rv0, "controller_cpu_seconds": round(cpu, 2),
        "pods_kept": len(before & after), "max_unavailable_seen": obs.max_unavailable_seen,
        "violations": [str(v) for v in obs.violations], "controller_errors": len(ctl.errors()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks inplace", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-unavailable", default="10%")
    parser.add_argument("--startup", type=float, default=1.0, help="pod startup seconds in the sim")
    parser.add_argument("--name", default="inplace_1000", help="basename of the JSON in results/")
    args = parser.parse_args(argv)
    results = [asyncio.run(run_mode(mode, nodes=args.nodes, max_unavailable=args.max_unavailable,
                                    startup=args.startup))
               for mode in ("recreate", "inplace")]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(results, indent=1) + "\n")
    keys = [k for k in results[0] if k != "mode"]
    print(f"{'':>26}  {'recreate':>28}  {'inplace':>28}")
    for key in keys:
        left, right = (json.dumps(r[key]) if isinstance(r[key], (dict, list)) else str(r[key]) for r in results)
        print(f"{key:>26}  {left:>28}  {right:>28}")
    return 1 if any(r["violations"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
