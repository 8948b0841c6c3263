"""Priority on new nodes: the system-node-critical DaemonSet's pod is the first created on each
node that joins, ahead of nine others created before it (FIFO would put it last).

Each DaemonSet lives in its own namespace, so the simulator's request log (a pod POST names its
namespace in the path) gives the order in which the pods of one joining node were created.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NAMESPACES, NODES, PODS
from tests.support.builders import daemonset, node
from tests.support.clusterview import target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

AGENTS = [f"agent-{i}" for i in range(9)]
CRITICAL = "cni"


async def pods_on(kube: KubeClient, node_name: str) -> int:
    """Live pods targeting ``node_name``, in every namespace."""
    return sum(1 for p in (await kube.list(PODS))["items"] if target_of(p) == node_name)


async def creation_order(sim: SimProcess, since: int) -> tuple[list[str], int]:
    """Namespaces of the pod creates the simulator answered after cursor ``since``, in order."""
    log = await sim.requests(since=since)
    order = [r["namespace"] for r in log["items"]
             if r["verb"] == "create" and r["resource"] == "pods" and not r["subresource"] and r["code"] == 201]
    return order, int(log["next"])


def _ds(name: str, *, priority_class: str | None = None) -> dict[str, Any]:
    body = daemonset("agent", namespace=name)
    if priority_class:
        body["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return body


@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_critical_pod_is_created_first_on_every_new_node(sim: SimProcess, kube: KubeClient,
                                                               controller: ControllerProcess) -> None:
    """On 5 joining nodes, the system-node-critical DaemonSet (created last) gets position 1 of 10."""
    for name in [*AGENTS, CRITICAL]:
        await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        await kube.create(DAEMONSETS, _ds(name, priority_class="system-node-critical" if name == CRITICAL else None),
                          namespace=name)
    await eventually(lambda: _count(pods_on(kube, "node-0"), 10), message="ten pods on the first node")
    cursor = (await sim.requests(since=0, limit=0))["next"]
    positions = []
    for i in range(5):
        joined = f"joined-{i}"
        await kube.create(NODES, node(joined))
        await eventually(_pods_on_is(kube, joined, 10), message=f"ten pods on {joined}")
        order, cursor = await creation_order(sim, cursor)
        assert sorted(order) == sorted([*AGENTS, CRITICAL]), order
        positions.append(order.index(CRITICAL) + 1)
    assert positions == [1] * 5


def _pods_on_is(kube: KubeClient, node_name: str, expected: int) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return await pods_on(kube, node_name) == expected
    return probe


async def _count(value: Any, expected: int) -> bool:
    return bool(await value == expected)
