"""Node health as taints, NoExecute eviction, and removal of pods whose node is deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.testing import make_node, make_pod, set_node_ready, wait_for
from dsctl_sim.storage import Storage

Sim = tuple[Storage, ControlPlane, FakeClock]

DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
]


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(
        storage, pod_startup_seconds=0, clock=clock, orphan_pod_delay=2.0
    )
    storage.create("nodes", make_node("n1"))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _taints(storage: Storage, node: str = "n1") -> set[tuple[str, str]]:
    obj = storage.get("nodes", None, node)
    assert obj is not None
    return {(t["key"], t["effect"]) for t in obj.get("spec", {}).get("taints") or []}


def _set_ready(storage: Storage, status: str, node: str = "n1") -> None:
    obj = storage.get("nodes", None, node)
    assert obj is not None
    storage.update("nodes", set_node_ready(obj, status), subresource="status")


def _exists(storage: Storage, name: str) -> bool:
    return storage.get("pods", "default", name) is not None


def _deleting(storage: Storage, name: str) -> bool:
    pod = storage.get("pods", "default", name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


NOT_READY = {("node.kubernetes.io/not-ready", "NoSchedule"),
             ("node.kubernetes.io/not-ready", "NoExecute")}
UNREACHABLE = {("node.kubernetes.io/unreachable", "NoSchedule"),
               ("node.kubernetes.io/unreachable", "NoExecute")}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param("False", NOT_READY, id="not-ready"),
        pytest.param("Unknown", UNREACHABLE, id="unreachable"),
    ],
)
async def test_ready_condition_drives_taints(
    sim: Sim, status: str, expected: set[tuple[str, str]]
) -> None:
    """Ready False/Unknown adds the matching NoSchedule+NoExecute taints; True removes them."""
    storage, _, _ = sim
    _set_ready(storage, status)
    await wait_for(lambda: _taints(storage) == expected, what="taints added")
    node = storage.get("nodes", None, "n1")
    assert node is not None
    no_execute = [t for t in node["spec"]["taints"] if t["effect"] == "NoExecute"]
    assert no_execute[0]["timeAdded"]
    _set_ready(storage, "True")
    await wait_for(lambda: not _taints(storage), what="taints removed")


async def test_foreign_taints_are_kept(sim: Sim) -> None:
    """Taints the lifecycle loop does not manage survive its updates."""
    storage, _, _ = sim
    storage.create("nodes", make_node("n2", taints=[{"key": "team", "effect": "NoSchedule"}]))
    _set_ready(storage, "False", node="n2")
    await wait_for(lambda: _taints(storage, "n2") == NOT_READY | {("team", "NoSchedule")},
                   what="taints merged")


async def test_cordon_adds_the_unschedulable_taint(sim: Sim) -> None:
    """spec.unschedulable is mirrored by node.kubernetes.io/unschedulable:NoSchedule."""
    storage, _, _ = sim
    node = storage.get("nodes", None, "n1")
    assert node is not None
    storage.update("nodes", {**node, "spec": {"unschedulable": True}})
    await wait_for(
        lambda: _taints(storage) == {("node.kubernetes.io/unschedulable", "NoSchedule")},
        what="cordon taint",
    )


async def test_node_without_ready_condition_is_left_alone(sim: Sim) -> None:
    """A bare node (no Ready condition) keeps hand-made not-ready taints and runs pods."""
    storage, plane, _ = sim
    taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    storage.create("nodes", make_node("bare", ready=None, taints=[taint]))
    await plane.settle()
    assert _taints(storage, "bare") == {("node.kubernetes.io/not-ready", "NoSchedule")}


async def test_not_ready_node_evicts_intolerant_pods_only(sim: Sim) -> None:
    """NotReady evicts ordinary pods; pods tolerating not-ready (daemon pods) stay."""
    storage, plane, _ = sim
    storage.create("pods", make_pod("plain", node_name="n1"))
    storage.create("pods", make_pod("daemon", node_name="n1", tolerations=DAEMON_TOLERATIONS))
    await plane.settle()
    _set_ready(storage, "False")
    await wait_for(lambda: _deleting(storage, "plain"), what="eviction")
    await plane.settle()
    assert not _deleting(storage, "daemon")


async def test_toleration_seconds_bounds_the_stay(sim: Sim) -> None:
    """A pod tolerating not-ready for 30 s is evicted 30 s after the taint appears."""
    storage, plane, clock = sim
    tolerations: list[dict[str, Any]] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 30}
    ]
    storage.create("pods", make_pod("p", node_name="n1", tolerations=tolerations))
    await plane.settle()
    _set_ready(storage, "False")
    await wait_for(lambda: _taints(storage) >= NOT_READY, what="taints")
    await plane.settle()
    clock.advance(29)
    await plane.settle()
    assert not _deleting(storage, "p")
    clock.advance(1)
    await wait_for(lambda: _deleting(storage, "p"), what="eviction")


async def test_taint_removed_before_deadline_cancels_eviction(sim: Sim) -> None:
    """If the node recovers within tolerationSeconds, the pod stays."""
    storage, plane, clock = sim
    tolerations: list[dict[str, Any]] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 30}
    ]
    storage.create("pods", make_pod("p", node_name="n1", tolerations=tolerations))
    await plane.settle()
    _set_ready(storage, "False")
    await wait_for(lambda: _taints(storage) >= NOT_READY, what="taints")
    await plane.settle()
    clock.advance(10)
    _set_ready(storage, "True")
    await wait_for(lambda: not _taints(storage), what="taints removed")
    await plane.settle()
    clock.advance(60)
    await plane.settle()
    assert not _deleting(storage, "p")


async def test_deleting_a_node_removes_its_pods(sim: Sim) -> None:
    """Pods bound to a deleted node are removed after the orphan delay; others stay."""
    storage, plane, clock = sim
    storage.create("nodes", make_node("n2"))
    storage.create("pods", make_pod("on-n1", node_name="n1"))
    storage.create("pods", make_pod("on-n2", node_name="n2"))
    await plane.settle()
    storage.delete("nodes", None, "n1")
    await plane.settle()
    clock.advance(1.9)
    await plane.settle()
    assert _exists(storage, "on-n1")
    clock.advance(0.1)
    await wait_for(lambda: not _exists(storage, "on-n1"), what="orphan removal")
    await plane.settle()
    assert _exists(storage, "on-n2")


async def test_node_recreated_within_the_delay_keeps_its_pods(sim: Sim) -> None:
    """A node deleted and re-created under the same name before the delay keeps its pods."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", node_name="n1"))
    await plane.settle()
    storage.delete("nodes", None, "n1")
    storage.create("nodes", make_node("n1"))
    await plane.settle()
    clock.advance(5)
    await plane.settle()
    assert _exists(storage, "p")
