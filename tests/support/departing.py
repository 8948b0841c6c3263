"""The departing-nodes scenario, shared by its integration test (a short window) and its
benchmark-style run (``benchmarks/departing_window.py``, the full minute).

A DaemonSet that tolerates every taint runs on every node. Then each departing signal is put on
two nodes: on one the running pod is left alone, on the other the pod goes (killed by the
shutdown, or deleted by a user) so that a controller without the hold would create one:

- ``node-0``: the kubelet's graceful shutdown (its pods are killed, Failed);
- ``node-1``/``node-2``: cluster-autoscaler's ``ToBeDeletedByClusterAutoscaler``;
- ``node-3``/``node-4``: Karpenter's ``karpenter.sh/disrupted``;
- ``fin-0``/``fin-1``: Nodes deleted while Karpenter's finalizer holds them.

For the window every pod ADDED is recorded by target node. The result says what was created on a
departing node, which running pods changed, and what the controller reports.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, PODS
from dsctl_sim.departing import karpenter_disrupted_taint, to_be_deleted_taint
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.nodelife import PodCreates, add_finalized_node, add_taint
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

__all__ = ["KEPT", "REPLACED_ELSEWHERE", "SIM_ARGS", "DepartingResult", "run_departing"]

SIM_ARGS = ["--pod-startup-seconds", "0.1", "--max-termination-seconds", "0.1",
            # The shut-down node stays Ready False "node is shutting down" for the whole window, as a
            # real one does until it powers off and its heartbeat is missed.
            "--node-monitor-grace-seconds", "600"]
KEPT = ("node-1", "node-3", "fin-0")
"""Departing nodes whose running pod must be left alone."""
REPLACED_ELSEWHERE = ("node-0", "node-2", "node-4", "fin-1")
"""Departing nodes whose pod went: a controller without the hold would create one."""


@dataclass
class DepartingResult:
    """What the window showed."""

    created_on_departing: dict[str, list[str]] = field(default_factory=dict)
    changed_running: dict[str, str] = field(default_factory=dict)
    failed_left: list[str] = field(default_factory=list)
    window: float = 0.0


def _agent() -> dict[str, Any]:
    body = daemonset("agent", tolerations=[{"operator": "Exists"}])
    body["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
    return body


async def _pods_by_node(kube: KubeClient) -> dict[str, dict[str, Any]]:
    return {target_of(p): p for p in await daemon_pods(kube, "agent", include_terminating=True)}


async def run_departing(sim: SimProcess, kube: KubeClient, *, window: float) -> DepartingResult:
    """Run the scenario (the controller must be running) and watch ``window`` seconds."""
    for name in ("fin-0", "fin-1"):
        await add_finalized_node(kube, name)
    await kube.create(DAEMONSETS, _agent(), namespace="default")
    nodes = [n["metadata"]["name"] for n in (await kube.list(NODES))["items"]]

    async def everywhere() -> bool:
        pods = await _pods_by_node(kube)
        return all(n in pods and is_ready(pods[n]) for n in nodes)

    await eventually(everywhere, timeout=30, message="a Ready pod on every node")
    before = await _pods_by_node(kube)
    result = DepartingResult(window=window)
    async with PodCreates(kube) as creates:
        signalled = time.monotonic()
        await sim.shutdown_node("node-0", grace_seconds=1, critical_grace_seconds=0)
        for name in ("node-1", "node-2"):
            await add_taint(kube, name, to_be_deleted_taint(time.time()))
        for name in ("node-3", "node-4"):
            await add_taint(kube, name, karpenter_disrupted_taint())
        for name in ("fin-0", "fin-1"):
            await kube.delete(NODES, name)
        for name in ("node-2", "node-4", "fin-1"):
            await kube.delete(PODS, before[name]["metadata"]["name"], namespace="default")
        await asyncio.sleep(window)  # the window itself: creates are recorded as they happen
        for name in (*KEPT, *REPLACED_ELSEWHERE):
            made = creates.on(name, since=signalled)
            if made:
                result.created_on_departing[name] = made
    after = await _pods_by_node(kube)
    for name in KEPT:
        pod = after.get(name)
        if pod is None or pod["metadata"]["uid"] != before[name]["metadata"]["uid"] \
                or pod["metadata"].get("deletionTimestamp") or not is_ready(pod):
            result.changed_running[name] = "gone" if pod is None else pod["metadata"]["name"]
    failed = after.get("node-0")
    if failed is not None and (failed.get("status") or {}).get("phase") == "Failed":
        result.failed_left.append(failed["metadata"]["name"])
    return result
