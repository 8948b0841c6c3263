"""Placement: nodeSelector, affinity, taints and tolerations decide where daemon pods run."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES
from tests.support.builders import daemonset, node
from tests.support.clusterview import ds_status, pods_per_node
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


async def _nodes_with_pods(kube: KubeClient, ds: str) -> set[str]:
    return {name for name, count in (await pods_per_node(kube, ds)).items() if count}


async def _label(kube: KubeClient, name: str, labels: dict[str, str | None]) -> None:
    await kube.patch(NODES, name, {"metadata": {"labels": labels}})


async def _taint(kube: KubeClient, name: str, taints: list[dict[str, Any]]) -> None:
    await kube.patch(NODES, name, {"spec": {"taints": taints}})


async def test_node_selector_and_relabel(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Only selected nodes get pods; relabelling a node moves the pod."""
    await _label(kube, "node-0", {"role": "edge"})
    await _label(kube, "node-1", {"role": "edge"})
    await kube.create(DAEMONSETS, daemonset("edge", node_selector={"role": "edge"}), namespace="default")
    await eventually(lambda: _is(kube, "edge", {"node-0", "node-1"}), message="pods on node-0 and node-1")

    await _label(kube, "node-1", {"role": None})
    await _label(kube, "node-2", {"role": "edge"})
    await eventually(lambda: _is(kube, "edge", {"node-0", "node-2"}), message="pod moved from node-1 to node-2")

    async def status_ok() -> bool:
        s = await ds_status(kube, "edge")
        return s.get("desiredNumberScheduled") == 2 and s.get("numberMisscheduled", 0) == 0
    await eventually(status_ok, message="desired=2, misscheduled=0")


async def test_required_affinity(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Required node affinity with NotIn keeps pods off the excluded nodes."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn",
                               "values": ["node-3", "node-4"]}]}]}}}
    await kube.create(DAEMONSETS, daemonset("aff", affinity=affinity), namespace="default")
    await eventually(lambda: _is(kube, "aff", {"node-0", "node-1", "node-2"}), message="pods on node-0..2")


async def test_noschedule_keeps_running_pod_noexecute_evicts(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """NoSchedule blocks new pods but keeps running ones; NoExecute removes the running pod."""
    await kube.create(NODES, node("tainted", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]))
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    all_but = {f"node-{i}" for i in range(5)}
    await eventually(lambda: _is(kube, "agent", all_but), message="no pod on the tainted node")

    await _taint(kube, "node-0", [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])

    async def misscheduled() -> bool:
        s = await ds_status(kube, "agent")
        return s.get("numberMisscheduled") == 1 and s.get("desiredNumberScheduled") == 4
    await eventually(misscheduled, message="node-0 counted misscheduled, pod kept")
    assert "node-0" in await _nodes_with_pods(kube, "agent")

    await _taint(kube, "node-0", [{"key": "dedicated", "value": "db", "effect": "NoExecute"}])
    await eventually(lambda: _is(kube, "agent", all_but - {"node-0"}), message="pod evicted from node-0")


async def test_toleration_makes_node_eligible(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """A matching toleration lets the daemon run on a tainted node."""
    await _taint(kube, "node-0", [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]
    await kube.create(DAEMONSETS, daemonset("agent", tolerations=tolerations), namespace="default")
    await eventually(lambda: _is(kube, "agent", {f"node-{i}" for i in range(5)}), message="pods on all nodes")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"spec": {"unschedulable": True}}, id="cordoned"),
        pytest.param({"spec": {"taints": [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]}},
                     id="memory-pressure"),
        pytest.param({"spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}},
                     id="not-ready-taint"),
    ],
)
async def test_daemon_tolerated_conditions_still_get_pods(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess, change: dict[str, Any]
) -> None:
    """Cordoned, pressure-tainted and not-ready-tainted nodes still get daemon pods."""
    body = node("special")
    body["spec"].update(change["spec"])
    await kube.create(NODES, body)
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _has(kube, "agent", "special"), message="pod on the special node")


async def test_not_ready_node_keeps_its_pod(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """A node that goes NotReady keeps its daemon pod; status counts it as not ready."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _ready_is(kube, "agent", 5), message="5 ready")
    live = await kube.get(NODES, "node-0")
    live["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    await kube.update_status(NODES, live)
    await eventually(lambda: _ready_is(kube, "agent", 4), message="4 ready after node-0 went NotReady")
    assert "node-0" in await _nodes_with_pods(kube, "agent")


async def _is(kube: KubeClient, ds: str, expected: set[str]) -> bool:
    per_node = await pods_per_node(kube, ds)
    return set(per_node) == expected and all(v == 1 for v in per_node.values())


async def _has(kube: KubeClient, ds: str, node_name: str) -> bool:
    return (await pods_per_node(kube, ds)).get(node_name) == 1


async def _ready_is(kube: KubeClient, ds: str, ready: int) -> bool:
    return (await ds_status(kube, ds)).get("numberReady") == ready
