"""The kubelet's graceful node shutdown: node condition, pod kills by priority, admission, the end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_api.pods import is_pod_ready
from dsctl_sim import nodes
from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.kubelet import Kubelet
from dsctl_sim.controllers.nodeshutdown import group_index, kill_seconds, plan_groups
from dsctl_sim.controllers.testing import make_pod, wait_for
from dsctl_sim.errors import BadRequest, Conflict
from dsctl_sim.storage import Storage

GRACE = 5.0
CRITICAL = 2_000_000_000
NOT_READY = {("node.kubernetes.io/not-ready", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute")}
TOLERATE_ALL = [{"operator": "Exists"}]

Sim = tuple[Storage, ControlPlane, FakeClock]


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock, node_monitor_grace_seconds=GRACE,
                                max_termination_seconds=30.0)
    storage.create("nodes", nodes.make_node("n1", index=1, now=clock.now()))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _kubelet(plane: ControlPlane) -> Kubelet:
    assert plane.kubelet is not None
    return plane.kubelet


def _pod(storage: Storage, name: str) -> dict[str, Any]:
    pod = storage.get("pods", "default", name)
    assert pod is not None, f"pod {name} is gone"
    return pod


def _phase(storage: Storage, name: str) -> str:
    return str(_pod(storage, name)["status"].get("phase"))


def _ready(storage: Storage) -> dict[str, Any]:
    node = storage.get("nodes", None, "n1")
    assert node is not None
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def _taints(storage: Storage) -> set[tuple[str, str]]:
    node = storage.get("nodes", None, "n1")
    assert node is not None
    return {(t["key"], t["effect"]) for t in node.get("spec", {}).get("taints") or []}


async def _advance(plane: ControlPlane, clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    await plane.settle()


async def _start(storage: Storage, plane: ControlPlane, name: str, **spec: Any) -> None:
    body = make_pod(name, node_name="n1", tolerations=TOLERATE_ALL)
    body["spec"].update(spec)
    storage.create("pods", body)
    await wait_for(lambda: is_pod_ready(_pod(storage, name)), what=f"{name} Ready")
    await plane.settle()


@pytest.mark.parametrize(
    ("grace", "critical", "groups"),
    [
        pytest.param(30, 10, [(0, 20), (CRITICAL, 10)], id="split"),
        pytest.param(30, 0, [(0, 30), (CRITICAL, 0)], id="no-critical-time"),
        pytest.param(30, 30, [(0, 0), (CRITICAL, 30)], id="all-critical"),
        pytest.param(0, 0, [], id="off"),
        pytest.param(10, 20, [], id="critical-longer-is-off"),
    ],
)
def test_shutdown_settings_become_priority_groups(
    grace: float, critical: float, groups: list[tuple[int, float]]
) -> None:
    """shutdownGracePeriod and shutdownGracePeriodCriticalPods split as the kubelet's migrateConfig does."""
    assert [(g.priority, g.seconds) for g in plan_groups(grace, critical)] == groups


@pytest.mark.parametrize(
    ("priority", "own_grace", "group", "seconds"),
    [
        pytest.param(None, None, 0, 20.0, id="default-priority"),
        pytest.param(-5, None, 0, 20.0, id="negative-priority"),
        pytest.param(CRITICAL - 1, None, 0, 20.0, id="just-below-critical"),
        pytest.param(CRITICAL, None, 1, 10.0, id="system-cluster-critical"),
        pytest.param(CRITICAL + 1000, None, 1, 10.0, id="system-node-critical"),
        pytest.param(None, 3, 0, 3.0, id="own-grace-shorter"),
        pytest.param(None, 60, 0, 20.0, id="own-grace-longer"),
    ],
)
def test_pods_fall_into_groups_and_keep_the_shorter_grace(
    priority: int | None, own_grace: int | None, group: int, seconds: float
) -> None:
    """Critical pods (priority >= 2000000000) go last; a pod's own shorter grace wins."""
    groups = plan_groups(30, 10)
    spec: dict[str, Any] = {}
    if priority is not None:
        spec["priority"] = priority
    if own_grace is not None:
        spec["terminationGracePeriodSeconds"] = own_grace
    pod = {"spec": spec}
    index = group_index(groups, pod)
    assert (index, kill_seconds(groups[index], pod)) == (group, seconds)


async def test_shutdown_reports_the_node_not_ready_and_sets_no_taint_itself(sim: Sim) -> None:
    """Ready False, reason KubeletNotReady, message "node is shutting down"; the only taints are the
    node lifecycle's not-ready ones, and a Shutdown event is recorded on the node."""
    storage, plane, _ = sim
    await _start(storage, plane, "app")
    status = _kubelet(plane).shutdown("n1", grace_seconds=4, critical_seconds=2)
    assert status["shuttingDown"] is True and status["running"] is True
    ready = _ready(storage)
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "KubeletNotReady", "node is shutting down")
    await wait_for(lambda: _taints(storage) == NOT_READY, what="not-ready taints")
    events, _ = storage.list("events", namespace="default")
    assert ("Node", "Shutdown") in {(e["involvedObject"]["kind"], e["reason"]) for e in events}


async def test_pods_are_killed_by_priority_and_stay_as_failed(sim: Sim) -> None:
    """Regular pods are terminated first with their group's grace, critical pods after; each keeps its
    object with phase Failed, reason Terminated and the DisruptionTarget condition."""
    storage, plane, clock = sim
    await _start(storage, plane, "app")
    await _start(storage, plane, "quick", terminationGracePeriodSeconds=1)
    await _start(storage, plane, "agent", priority=CRITICAL + 1000)
    _kubelet(plane).shutdown("n1", grace_seconds=6, critical_seconds=2)
    await _advance(plane, clock, 1)
    assert (_phase(storage, "quick"), _phase(storage, "app"), _phase(storage, "agent")) == (
        "Failed", "Running", "Running")
    await _advance(plane, clock, 3)
    assert (_phase(storage, "app"), _phase(storage, "agent")) == ("Failed", "Running")
    await _advance(plane, clock, 2)
    assert _phase(storage, "agent") == "Failed"
    for name in ("app", "quick", "agent"):
        status = _pod(storage, name)["status"]
        assert (status["reason"], status["message"]) == (
            "Terminated", "Pod was terminated in response to imminent node shutdown.")
        target = next(c for c in status["conditions"] if c["type"] == "DisruptionTarget")
        assert (target["status"], target["reason"], target["message"]) == (
            "True", "TerminationByKubelet", "Pod was terminated in response to imminent node shutdown.")
        assert not is_pod_ready(_pod(storage, name))
        assert "deletionTimestamp" not in _pod(storage, name)["metadata"]


async def test_a_pod_bound_during_the_shutdown_is_rejected(sim: Sim) -> None:
    """Phase Failed, reason NodeShutdown, the admit handler's message, no kubelet conditions (it
    never ran), as a DaemonSet controller that re-creates pods sees it (kubernetes 122912)."""
    storage, plane, _ = sim
    await _start(storage, plane, "agent", priority=CRITICAL)
    _kubelet(plane).shutdown("n1", grace_seconds=6, critical_seconds=2)
    await plane.settle()
    storage.create("pods", make_pod("new", node_name="n1", tolerations=TOLERATE_ALL))
    await wait_for(lambda: _phase(storage, "new") == "Failed", what="rejected")
    status = _pod(storage, "new")["status"]
    assert (status["reason"], status["message"]) == (
        "NodeShutdown", "Pod was rejected: Pod was rejected as the node is shutting down.")
    assert not status.get("conditions") and status["qosClass"] == "BestEffort" and status["startTime"]
    events, _ = storage.list("events", namespace="default")
    assert any(e["reason"] == "NodeShutdown" and e["involvedObject"]["name"] == "new" for e in events)


async def test_the_kubelet_stops_at_the_end_of_the_shutdown(sim: Sim) -> None:
    """Once every group is done the kubelet stops: no heartbeat, so the node turns Unknown after the
    grace period; a pod bound then stays Pending."""
    storage, plane, clock = sim
    await _start(storage, plane, "app")
    _kubelet(plane).shutdown("n1", grace_seconds=2, critical_seconds=1)
    await _advance(plane, clock, 1)
    assert _kubelet(plane).agent_status("n1")["running"] is False
    storage.create("pods", make_pod("late", node_name="n1", tolerations=TOLERATE_ALL))
    await _advance(plane, clock, GRACE - 0.01)
    assert _ready(storage)["status"] == "False"
    await _advance(plane, clock, 0.01)
    assert (_ready(storage)["status"], _ready(storage)["reason"]) == ("Unknown", "NodeStatusUnknown")
    assert _phase(storage, "late") == "Pending"


async def test_empty_groups_are_skipped_at_once(sim: Sim) -> None:
    """With no critical pod, the shutdown ends as soon as the regular pods are killed."""
    storage, plane, clock = sim
    await _start(storage, plane, "app", terminationGracePeriodSeconds=1)
    _kubelet(plane).shutdown("n1", grace_seconds=10, critical_seconds=5)
    await _advance(plane, clock, 1)
    assert _kubelet(plane).agent_status("n1")["running"] is False


async def test_a_zero_period_stops_the_kubelet_at_once(sim: Sim) -> None:
    """Graceful shutdown off (shutdownGracePeriod 0): the node just goes away; pods keep their status."""
    storage, plane, _ = sim
    await _start(storage, plane, "app")
    status = _kubelet(plane).shutdown("n1", grace_seconds=0, critical_seconds=0)
    assert (status["running"], status["shuttingDown"]) == (False, False)
    assert _phase(storage, "app") == "Running" and _ready(storage)["status"] == "True"


async def test_starting_the_kubelet_cancels_a_shutdown(sim: Sim) -> None:
    """A cancelled shutdown: node Ready again, killed pods stay Failed, new pods are admitted."""
    storage, plane, clock = sim
    await _start(storage, plane, "app", terminationGracePeriodSeconds=1)
    await _start(storage, plane, "agent", priority=CRITICAL)
    _kubelet(plane).shutdown("n1", grace_seconds=6, critical_seconds=4)
    await _advance(plane, clock, 1)
    _kubelet(plane).set_running("n1", running=True)
    await _advance(plane, clock, 10)
    assert _ready(storage)["status"] == "True"
    assert (_phase(storage, "app"), _phase(storage, "agent")) == ("Failed", "Running")
    await _start(storage, plane, "new")


@pytest.mark.parametrize(
    ("before", "error"),
    [
        pytest.param("stopped", Conflict, id="stopped-kubelet"),
        pytest.param("shutting-down", Conflict, id="twice"),
        pytest.param("bad-settings", BadRequest, id="critical-longer"),
    ],
)
async def test_refused_shutdowns(sim: Sim, before: str, error: type[Exception]) -> None:
    """A stopped kubelet cannot shut down, nor one already shutting down; settings must make sense."""
    _, plane, _ = sim
    kubelet = _kubelet(plane)
    if before == "stopped":
        kubelet.set_running("n1", running=False)
    elif before == "shutting-down":
        kubelet.shutdown("n1", grace_seconds=5, critical_seconds=1)
    with pytest.raises(error):
        kubelet.shutdown("n1", grace_seconds=5, critical_seconds=10 if before == "bad-settings" else 1)
