"""Node membership: one daemon pod per node, following joins, leaves and DaemonSet deletion."""

from __future__ import annotations

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES
from tests.support.builders import daemonset, node
from tests.support.clusterview import daemon_pods, ds_status, is_ready, node_names, pods_per_node
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

DAEMON_TOLERATIONS = {
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
}


async def test_one_pod_per_node_with_affinity_and_tolerations(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """5 nodes give 5 pods, one per node, each pinned by matchFields and carrying daemon tolerations."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    nodes = await node_names(kube)

    async def one_each() -> bool:
        return dict(await pods_per_node(kube, "agent")) == dict.fromkeys(nodes, 1)

    await eventually(one_each, message="one pod per node")
    for pod in await daemon_pods(kube, "agent"):
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        assert len(terms) == 1
        assert terms[0]["matchFields"][0]["key"] == "metadata.name"
        tolerations = {(t.get("key"), t.get("effect")) for t in pod["spec"]["tolerations"]}
        assert tolerations >= DAEMON_TOLERATIONS
        assert pod["metadata"]["generateName"] == "agent-"
        assert pod["metadata"]["labels"]["controller-revision-hash"]
        ref = pod["metadata"]["ownerReferences"][0]
        assert ref["controller"] is True and ref["blockOwnerDeletion"] is True and ref["kind"] == "DaemonSet"

    async def all_ready() -> dict[str, object] | None:
        status = await ds_status(kube, "agent")
        done = status.get("numberReady") == 5 and status.get("numberAvailable") == 5
        return status if done else None

    status = await eventually(all_ready, message="status to report 5 ready")
    assert status["desiredNumberScheduled"] == 5
    assert status["currentNumberScheduled"] == 5
    assert status["updatedNumberScheduled"] == 5
    assert status["numberMisscheduled"] == 0
    assert status.get("numberUnavailable", 0) == 0
    assert status["observedGeneration"] == 1


async def test_node_join_and_leave(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """A joining node gets its pod; a deleted node's pod goes, and status follows."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _count(kube, "agent", 5), message="5 pods")

    await kube.create(NODES, node("node-new"))
    await eventually(lambda: _has_pod_on(kube, "agent", "node-new"), message="pod on the new node")
    await eventually(lambda: _status_is(kube, "agent", desiredNumberScheduled=6, numberReady=6),
                     message="status desired=6 ready=6")

    await kube.delete(NODES, "node-0")
    await eventually(lambda: _no_pod_on(kube, "agent", "node-0"), message="pod of node-0 gone")
    await eventually(lambda: _status_is(kube, "agent", desiredNumberScheduled=5, currentNumberScheduled=5),
                     message="status desired=5")


async def test_deleting_the_daemonset_removes_its_pods(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """Deleting the DaemonSet removes every pod it owned (garbage collection by owner)."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _count(kube, "agent", 5), message="5 pods")
    await kube.delete(DAEMONSETS, "agent", namespace="default", propagation_policy="Background")

    async def none_left() -> bool:
        return not await daemon_pods(kube, "agent", include_terminating=True)

    await eventually(none_left, message="all pods deleted")


async def test_pods_become_ready(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Pods the controller creates are bound by the scheduler and become Ready."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

    async def all_ready() -> bool:
        pods = await daemon_pods(kube, "agent")
        return len(pods) == 5 and all(is_ready(p) and p["spec"].get("nodeName") for p in pods)

    await eventually(all_ready, message="5 ready, bound pods")


async def _count(kube: KubeClient, ds: str, expected: int) -> bool:
    per_node = await pods_per_node(kube, ds)
    return sum(per_node.values()) == expected and all(v == 1 for v in per_node.values())


async def _has_pod_on(kube: KubeClient, ds: str, node_name: str) -> bool:
    return (await pods_per_node(kube, ds)).get(node_name, 0) == 1


async def _no_pod_on(kube: KubeClient, ds: str, node_name: str) -> bool:
    return (await pods_per_node(kube, ds)).get(node_name, 0) == 0


async def _status_is(kube: KubeClient, ds: str, **expected: int) -> bool:
    status = await ds_status(kube, ds)
    return all(status.get(k, 0) == v for k, v in expected.items())
