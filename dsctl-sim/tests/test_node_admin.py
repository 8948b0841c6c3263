"""The node lifecycle admin API over HTTP: ``/sim/nodes/{name}/kubelet`` and ``/shutdown``, and SimAdmin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from dsctl_sim.cli import options_from_args, register
from dsctl_sim.cluster import SimCluster, SimOptions
from dsctl_sim.controllers.testing import wait_for
from dsctl_sim.departing import KARPENTER_DISRUPTED_TAINT, karpenter_disrupted_taint, to_be_deleted_taint
from dsctl_sim.process import SimAdmin
from simapi import Api


@pytest.fixture
async def live() -> AsyncIterator[Api]:
    """A simulator with its control plane, fast pods and a short node-monitor grace period."""
    sim = SimCluster(SimOptions(nodes=2, pod_startup_seconds=0, seed=3, node_monitor_grace_seconds=0.3))
    await sim.start()
    try:
        async with aiohttp.ClientSession() as http:
            yield Api(sim, http)
    finally:
        await sim.stop()


def _ready(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


async def _node(api: Api, name: str = "node-0") -> dict[str, Any]:
    out: dict[str, Any] = await api.ok("GET", f"/api/v1/nodes/{name}")
    return out


async def test_put_kubelet_stops_and_starts_it(live: Api) -> None:
    """PUT {"running": false}: GET shows it stopped and the node turns Unknown; true brings it back."""
    stopped = await live.ok("PUT", "/sim/nodes/node-0/kubelet", {"running": False})
    assert stopped["running"] is False and stopped["stoppedAt"] and stopped["shuttingDown"] is False
    assert await live.ok("GET", "/sim/nodes/node-0/kubelet") == stopped

    def unknown() -> dict[str, Any] | None:
        ready = _ready(live.sim.storage.get("nodes", None, "node-0") or {})
        return ready if ready["status"] == "Unknown" else None

    ready = await wait_for(unknown, what="node-0 Unknown")
    assert ready["message"] == "Kubelet stopped posting node status."
    started = await live.ok("PUT", "/sim/nodes/node-0/kubelet", {"running": True})
    assert started == {"node": "node-0", "running": True, "stoppedAt": None, "shuttingDown": False}
    assert _ready(await _node(live))["status"] == "True"


async def test_post_shutdown_answers_202_and_takes_the_node_down(live: Api) -> None:
    """The body's settings are optional; the node reports "node is shutting down" at once."""
    status, body = await live.call("POST", "/sim/nodes/node-1/shutdown",
                                   {"shutdownGracePeriodSeconds": 2, "shutdownGracePeriodCriticalPodsSeconds": 1})
    assert status == 202 and body["node"] == "node-1"
    ready = _ready(await _node(live, "node-1"))
    assert (ready["status"], ready["message"]) == ("False", "node is shutting down")
    status, _ = await live.call("POST", "/sim/nodes/node-0/shutdown")
    assert status == 202


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        pytest.param("PUT", "/sim/nodes/nope/kubelet", {"running": False}, 404, id="unknown-node"),
        pytest.param("GET", "/sim/nodes/nope/kubelet", None, 404, id="unknown-node-get"),
        pytest.param("POST", "/sim/nodes/nope/shutdown", {}, 404, id="unknown-node-shutdown"),
        pytest.param("PUT", "/sim/nodes/node-0/kubelet", {"running": "no"}, 400, id="running-not-bool"),
        pytest.param("PUT", "/sim/nodes/node-0/kubelet", [1], 400, id="body-not-object"),
        pytest.param("POST", "/sim/nodes/node-0/shutdown", {"shutdownGracePeriodSeconds": -1}, 400,
                     id="negative-grace"),
        pytest.param("POST", "/sim/nodes/node-0/shutdown",
                     {"shutdownGracePeriodSeconds": 1, "shutdownGracePeriodCriticalPodsSeconds": 2}, 400,
                     id="critical-longer"),
        pytest.param("DELETE", "/sim/nodes/node-0/kubelet", None, 405, id="wrong-method"),
        pytest.param("GET", "/sim/nodes/node-0/reboot", None, 404, id="unknown-action"),
    ],
)
async def test_bad_node_admin_requests(live: Api, method: str, path: str, body: Any, code: int) -> None:
    """Unknown nodes 404, bad bodies 400 with a clear message, wrong verbs 405."""
    status, out = await live.call(method, path, body)
    assert status == code, out
    assert out["message"]


async def test_shutdown_of_a_stopped_kubelet_is_409(live: Api) -> None:
    """A kubelet that is not running cannot shut its node down."""
    await live.ok("PUT", "/sim/nodes/node-0/kubelet", {"running": False})
    status, out = await live.call("POST", "/sim/nodes/node-0/shutdown", {})
    assert status == 409 and "stopped" in out["message"]


async def test_no_control_plane_means_no_kubelet(api: Api) -> None:
    """Without the control plane there is no kubelet to drive: 409."""
    status, out = await api.call("PUT", "/sim/nodes/node-0/kubelet", {"running": False})
    assert status == 409 and "kubelet" in out["message"]


def test_node_monitor_grace_flag() -> None:
    """``--node-monitor-grace-seconds`` reaches SimOptions; it defaults to a few seconds."""
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert options_from_args(parser.parse_args(["serve"])).node_monitor_grace_seconds == 3.0
    args = parser.parse_args(["serve", "--node-monitor-grace-seconds", "0.5"])
    assert options_from_args(args).node_monitor_grace_seconds == 0.5
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--node-monitor-grace-seconds", "-1"])


def test_max_termination_flag() -> None:
    """``--max-termination-seconds`` reaches SimOptions; it defaults to 1 s."""
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    assert options_from_args(parser.parse_args(["serve"])).max_termination_seconds == 1.0
    args = parser.parse_args(["serve", "--max-termination-seconds", "0.05"])
    assert options_from_args(args).max_termination_seconds == 0.05
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--max-termination-seconds", "-1"])


async def test_sim_admin_helpers(live: Api) -> None:
    """SimAdmin drives the kubelet and the departing-node signals as the tools set them."""
    admin = SimAdmin(live.url)
    assert (await asyncio.to_thread(admin.set_kubelet, "node-0", running=False))["running"] is False
    assert (await asyncio.to_thread(admin.kubelet, "node-0"))["running"] is False
    await asyncio.to_thread(admin.set_kubelet, "node-0", running=True)
    # No pod to kill: the shutdown is over as soon as it starts, and the kubelet is stopped.
    assert (await asyncio.to_thread(admin.shutdown_node, "node-1", grace_seconds=1,
                                    critical_grace_seconds=0))["running"] is False
    await asyncio.to_thread(admin.add_taint, "node-0", to_be_deleted_taint(1_800_000_000))
    await asyncio.to_thread(admin.add_taint, "node-0", karpenter_disrupted_taint())
    taints = (await _node(live))["spec"]["taints"]
    assert {"key": "ToBeDeletedByClusterAutoscaler", "value": "1800000000", "effect": "NoSchedule"} in taints
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints
    await asyncio.to_thread(admin.remove_taint, "node-0", KARPENTER_DISRUPTED_TAINT)
    assert [t["key"] for t in (await _node(live))["spec"]["taints"]] == ["ToBeDeletedByClusterAutoscaler"]
    await asyncio.to_thread(admin.add_node, "leaving", finalizers=["karpenter.sh/termination"])
    await asyncio.to_thread(admin.delete_node, "leaving")
    assert (await _node(live, "leaving"))["metadata"]["deletionTimestamp"]
    await asyncio.to_thread(admin.remove_finalizers, "leaving")
    status, _ = await live.call("GET", "/api/v1/nodes/leaving")
    assert status == 404
