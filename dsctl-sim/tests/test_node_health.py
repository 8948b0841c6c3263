"""A stopped kubelet: the node turns Unknown after the grace period, its pods freeze, and all resumes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_api.pods import is_pod_ready
from dsctl_sim import nodes
from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.kubelet import Kubelet
from dsctl_sim.controllers.testing import make_node, make_pod, wait_for
from dsctl_sim.errors import NotFound
from dsctl_sim.storage import Storage

GRACE = 5.0
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
]
UNREACHABLE = {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}

Sim = tuple[Storage, ControlPlane, FakeClock]


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock, node_monitor_grace_seconds=GRACE,
                                max_termination_seconds=1.0)
    storage.create("nodes", nodes.make_node("n1", index=1, now=clock.now()))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _kubelet(plane: ControlPlane) -> Kubelet:
    assert plane.kubelet is not None
    return plane.kubelet


def _node(storage: Storage, name: str = "n1") -> dict[str, Any]:
    node = storage.get("nodes", None, name)
    assert node is not None
    return node


def _conditions(storage: Storage, name: str = "n1") -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in _node(storage, name)["status"]["conditions"]}


def _taints(storage: Storage, name: str = "n1") -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in _node(storage, name).get("spec", {}).get("taints") or []}


def _pod(storage: Storage, name: str = "p") -> dict[str, Any]:
    pod = storage.get("pods", "default", name)
    assert pod is not None, f"pod {name} is gone"
    return pod


async def _advance(plane: ControlPlane, clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    await plane.settle()


async def _running_pod(storage: Storage, plane: ControlPlane, name: str = "p", **kw: Any) -> dict[str, Any]:
    storage.create("pods", make_pod(name, node_name="n1", tolerations=DAEMON_TOLERATIONS, **kw))
    await wait_for(lambda: is_pod_ready(_pod(storage, name)), what=f"{name} Ready")
    await plane.settle()
    return _pod(storage, name)


async def test_stopped_kubelet_turns_its_node_unknown_after_the_grace_period(sim: Sim) -> None:
    """Nothing changes within the grace; then Ready and the pressure conditions go Unknown in
    kube-controller-manager's words, heartbeats kept, and the unreachable taints follow."""
    storage, plane, clock = sim
    await plane.settle()
    before = _conditions(storage)
    _kubelet(plane).set_running("n1", running=False)
    await _advance(plane, clock, GRACE - 0.01)
    assert _conditions(storage) == before and not _taints(storage)
    await _advance(plane, clock, 0.01)
    after = _conditions(storage)
    for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        assert (after[kind]["status"], after[kind]["reason"], after[kind]["message"]) == (
            "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."), kind
        assert after[kind]["lastHeartbeatTime"] == before[kind]["lastHeartbeatTime"]
        assert after[kind]["lastTransitionTime"] != before[kind]["lastTransitionTime"]
    await wait_for(lambda: _taints(storage) == UNREACHABLE, what="unreachable taints")
    assert plane.stats()["node-lifecycle"]["unknown"] == 1


async def test_a_bare_node_never_posted_status(sim: Sim) -> None:
    """A node that never had conditions gets them Unknown with reason NodeStatusNeverUpdated."""
    storage, plane, clock = sim
    storage.create("nodes", make_node("bare", ready=None))
    await plane.settle()
    _kubelet(plane).set_running("bare", running=False)
    await _advance(plane, clock, GRACE)
    ready = _conditions(storage, "bare")["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")
    assert ready["lastHeartbeatTime"] == _node(storage, "bare")["metadata"]["creationTimestamp"]


async def test_pods_of_an_unknown_node_are_marked_not_ready_and_keep_the_rest(sim: Sim) -> None:
    """MarkPodsNotReady: only the Ready condition turns False (reason kept); phase, containers and
    ContainersReady are the kubelet's last report; each pod gets a NodeNotReady event."""
    storage, plane, clock = sim
    before = await _running_pod(storage, plane)
    _kubelet(plane).set_running("n1", running=False)
    await _advance(plane, clock, GRACE)
    await wait_for(lambda: not is_pod_ready(_pod(storage)), what="pod marked not Ready")
    after = _pod(storage)
    old = {c["type"]: c for c in before["status"]["conditions"]}
    new = {c["type"]: c for c in after["status"]["conditions"]}
    assert new["Ready"]["status"] == "False" and "reason" not in new["Ready"]
    assert new["ContainersReady"] == old["ContainersReady"]
    assert after["status"]["phase"] == "Running"
    assert after["status"]["containerStatuses"] == before["status"]["containerStatuses"]
    events, _ = storage.list("events", namespace="default")
    reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in events}
    assert {("Pod", "NodeNotReady"), ("Node", "NodeNotReady")} <= reasons


async def test_pods_stay_put_while_the_kubelet_is_stopped(sim: Sim) -> None:
    """Pending stays Pending, a delete stays Terminating, a fail-after timer does not fire."""
    storage, plane, clock = sim
    await _running_pod(storage, plane, "deleted")
    await _running_pod(storage, plane, "failing", annotations={"sim.dsctl.io/fail-after-seconds": "3"})
    _kubelet(plane).set_running("n1", running=False)
    storage.create("pods", make_pod("late", node_name="n1", tolerations=DAEMON_TOLERATIONS))
    storage.delete("pods", "default", "deleted", grace_period_seconds=1)
    await _advance(plane, clock, 60)
    assert _pod(storage, "late")["status"]["phase"] == "Pending"
    assert _pod(storage, "deleted")["metadata"]["deletionTimestamp"]
    assert _pod(storage, "failing")["status"]["phase"] == "Running"


async def test_a_force_delete_removes_a_pod_of_a_stopped_kubelet(sim: Sim) -> None:
    """Grace 0 does not wait for any kubelet: the object is gone at once."""
    storage, plane, _ = sim
    await _running_pod(storage, plane)
    _kubelet(plane).set_running("n1", running=False)
    storage.delete("pods", "default", "p", grace_period_seconds=30)
    storage.delete("pods", "default", "p", grace_period_seconds=0)
    assert storage.get("pods", "default", "p") is None


async def test_a_restarted_kubelet_makes_everything_resume(sim: Sim) -> None:
    """Node Ready again (taints gone), the pending deletion completes, Pending pods run, pods Ready."""
    storage, plane, clock = sim
    await _running_pod(storage, plane, "kept")
    await _running_pod(storage, plane, "deleted")
    _kubelet(plane).set_running("n1", running=False)
    storage.delete("pods", "default", "deleted", grace_period_seconds=1)
    storage.create("pods", make_pod("late", node_name="n1", tolerations=DAEMON_TOLERATIONS))
    await _advance(plane, clock, GRACE + 1)
    await wait_for(lambda: _taints(storage) == UNREACHABLE, what="unreachable")
    status = _kubelet(plane).set_running("n1", running=True)
    assert status == {"node": "n1", "running": True, "stoppedAt": None, "shuttingDown": False}
    ready = _conditions(storage)["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True", "KubeletReady", "kubelet is posting ready status")
    assert _conditions(storage)["MemoryPressure"]["status"] == "False"
    await wait_for(lambda: not _taints(storage), what="taints removed")
    await _advance(plane, clock, 1)
    assert storage.get("pods", "default", "deleted") is None
    assert is_pod_ready(_pod(storage, "kept")) and is_pod_ready(_pod(storage, "late"))


async def test_a_kubelet_back_within_the_grace_leaves_the_node_alone(sim: Sim) -> None:
    """A short stop is invisible to the node lifecycle: the node stays Ready throughout."""
    storage, plane, clock = sim
    await plane.settle()
    _kubelet(plane).set_running("n1", running=False)
    await _advance(plane, clock, GRACE / 2)
    _kubelet(plane).set_running("n1", running=True)
    await _advance(plane, clock, GRACE)
    assert _conditions(storage)["Ready"]["status"] == "True"
    assert plane.stats()["node-lifecycle"]["unknown"] == 0


async def test_stop_and_start_are_idempotent_and_need_the_node(sim: Sim) -> None:
    """Stopping twice keeps the first stop time; an unknown node is NotFound."""
    _, plane, clock = sim
    first = _kubelet(plane).set_running("n1", running=False)
    clock.advance(1)
    assert _kubelet(plane).set_running("n1", running=False) == first
    assert first["running"] is False and first["stoppedAt"]
    with pytest.raises(NotFound):
        _kubelet(plane).set_running("nope", running=False)
    await plane.settle()
    assert plane.stats()["kubelet"]["stopped"] == 1


async def test_a_deleted_node_forgets_its_stopped_kubelet(sim: Sim) -> None:
    """A node registered again under the same name comes with a running kubelet."""
    storage, plane, clock = sim
    _kubelet(plane).set_running("n1", running=False)
    await plane.settle()
    storage.delete("nodes", None, "n1")
    await plane.settle()
    storage.create("nodes", nodes.make_node("n1", index=1, now=clock.now()))
    await _advance(plane, clock, GRACE * 2)
    assert _kubelet(plane).agent_status("n1")["running"] is True
    assert _conditions(storage)["Ready"]["status"] == "True"
