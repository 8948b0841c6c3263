"""Priority on new nodes: pod priority resolution, the handlers' ranking, and the join order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from dsctl.controller.handlers import Handlers
from dsctl.controller.joinorder import JoinOrder
from dsctl.controller.state import RuntimeState
from dsctl.daemonset.podpriority import global_default_priority, pod_priority

CLASSES = {"system-node-critical": {"metadata": {"name": "system-node-critical"}, "value": 2000001000},
           "low": {"metadata": {"name": "low"}, "value": -10}}


def _ds(name: str, *, pcn: str | None = None, priority: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if pcn is not None:
        spec["priorityClassName"] = pcn
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


@pytest.mark.parametrize(
    ("ds", "default", "expected"),
    [
        pytest.param(_ds("a", pcn="system-node-critical"), 0, 2000001000, id="class-resolved"),
        pytest.param(_ds("a", pcn="low", priority=50), 0, -10, id="class-wins-over-priority"),
        pytest.param(_ds("a", pcn="missing", priority=50), 0, 50, id="unknown-class-falls-back-to-priority"),
        pytest.param(_ds("a", priority=7), 100, 7, id="explicit-priority"),
        pytest.param(_ds("a"), 100, 100, id="global-default"),
        pytest.param(_ds("a"), 0, 0, id="nothing-is-zero"),
        pytest.param(_ds("a", pcn="missing"), 0, 0, id="unknown-class-nothing-else"),
    ],
)
def test_pod_priority(ds: dict[str, Any], default: int, expected: int) -> None:
    """priorityClassName through the cache, then spec.priority, then the global default."""
    assert pod_priority(ds, priority_class=CLASSES.get, global_default=default) == expected


def test_global_default_priority() -> None:
    """The globalDefault class's value; none marked gives 0."""
    assert global_default_priority([{"value": 5}, {"value": 9, "globalDefault": True}]) == 9
    assert global_default_priority(CLASSES.values()) == 0


def _node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}, "resourceVersion": "1"}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_node_add_ranks_daemonsets_by_pod_priority() -> None:
    """A joining node wakes its DaemonSets through the priority lane, and reports them to the join order."""
    sets: list[Mapping[str, Any]] = [_ds("logs"), _ds("cni", pcn="system-node-critical"), _ds("metrics", priority=5)]
    plain: list[str] = []
    ranked: list[tuple[str, int]] = []
    state = RuntimeState.create(clock=lambda: 0.0)
    handlers = Handlers(ds_kind="DaemonSet", get_daemonset=lambda key: None, list_daemonsets=lambda: sets,
                        pods_on_node=lambda node: [], state=state,
                        enqueue=plain.append, enqueue_after=lambda key, delay: None,
                        enqueue_prioritized=lambda key, p: ranked.append((key, p)),
                        priority_of=lambda ds: pod_priority(ds, priority_class=CLASSES.get),
                        monotonic=lambda: 0.0)
    handlers.on_node_add(_node("n1"))
    expected = [("default/logs", 0), ("default/cni", 2000001000), ("default/metrics", 5)]
    assert ranked == expected and not plain
    assert state.join_order.deferred("default/logs", 0, ["n1"], now=0.0) == {"n1"}
    handlers.on_node_delete(_node("n1"))
    assert not state.join_order.holds_node("n1")


@pytest.mark.parametrize(
    ("steps", "asked", "deferred"),
    [
        pytest.param([], ("logs", 0, 1.0), set(), id="nothing-joined"),
        pytest.param([("join", 0.0)], ("logs", 0, 1.0), {"n1"}, id="waits-for-critical"),
        pytest.param([("join", 0.0)], ("cni", 100, 1.0), set(), id="critical-never-waits"),
        pytest.param([("join", 0.0), ("synced", "cni", 0.5)], ("metrics", 5, 1.0), set(), id="after-critical-synced"),
        pytest.param([("join", 0.0), ("synced", "cni", 0.5)], ("logs", 0, 1.0), {"n1"}, id="lowest-waits-for-middle"),
        pytest.param([("join", 1.0), ("synced", "cni", 0.5)], ("logs", 0, 1.5), {"n1"},
                     id="a-sync-begun-before-the-join-does-not-count"),
        pytest.param([("join", 0.0)], ("logs", 0, 10.0), set(), id="hold-lapses"),
        pytest.param([("join", 0.0)], ("metrics", 5, 1.0), {"n1"}, id="middle-waits-for-top"),
    ],
)
def test_join_order(steps: list[tuple[Any, ...]], asked: tuple[str, int, float], deferred: set[str]) -> None:
    """Creates on a joined node wait until every higher-priority DaemonSet synced once after the join."""
    order = JoinOrder(hold=10.0)
    for step in steps:
        if step[0] == "join":
            order.node_wanted("n1", [("cni", 100), ("metrics", 5), ("logs", 0)], now=step[1])
        else:
            order.synced(step[1], started=step[2])
    key, priority, now = asked
    assert order.deferred(key, priority, ["n1", "n2"], now=now) == deferred


def test_join_of_equal_priorities_records_nothing() -> None:
    """When every DaemonSet has the same priority there is nothing to wait for."""
    order = JoinOrder()
    order.node_wanted("n1", [("a", 0), ("b", 0)], now=0.0)
    assert len(order) == 0


def test_hold_back_drops_deferred_creates_and_requeues() -> None:
    """Creates on a node waiting for a higher priority leave the plan, which comes back soon."""
    from dsctl.daemonset.podplan import Plan
    from dsctl.tuning import JOIN_RECHECK_SECONDS

    order = JoinOrder()
    order.node_wanted("n1", [("cni", 100), ("logs", 0)], now=0.0)
    plan = order.hold_back("logs", 0, Plan(creates=("n0", "n1")), now=1.0)
    assert plan.creates == ("n0",) and plan.requeue_after == JOIN_RECHECK_SECONDS
    order.synced("cni", started=0.5)
    assert order.hold_back("logs", 0, Plan(creates=("n1",)), now=1.0).creates == ("n1",)
