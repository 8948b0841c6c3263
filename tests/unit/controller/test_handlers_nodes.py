"""Node events: heartbeats cost nothing, and a real change wakes only the DaemonSets whose eligibility flips."""

from __future__ import annotations

from typing import Any

import pytest

from .handlerkit import Cluster, ds, node, owner_ref, pod

EVERYWHERE = ds("everywhere", priority=5)
GPU = ds("gpu", node_selector={"gpu": "true"}, priority=100)
EDGE = ds("edge", node_selector={"zone": "edge"})
TOLERANT = ds("tolerant", tolerations=[{"key": "dedicated", "operator": "Exists"}])
CLUSTER = [EVERYWHERE, GPU, EDGE, TOLERANT]

NO_SCHEDULE = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
NO_EXECUTE = [{"key": "other", "effect": "NoExecute"}]

PLAIN = node("n1", labels={"zone": "core"}, rv="1")


def _changed(**kwargs: Any) -> dict[str, Any]:
    return node("n1", rv="2", **kwargs)


@pytest.mark.parametrize(("new", "calls"), [
    pytest.param(_changed(labels={"zone": "core"}, heartbeat="2026-12-01T00:00:10Z"), [], id="heartbeat"),
    pytest.param(_changed(labels={"zone": "core", "unrelated": "x"}), [], id="label-change-flipping-nothing"),
    pytest.param(_changed(labels={"zone": "core", "gpu": "true"}), [("add", "default/gpu")],
                 id="label-makes-one-eligible"),
    pytest.param(_changed(labels={"zone": "edge", "gpu": "true"}), [("add", "default/gpu"), ("add", "default/edge")],
                 id="label-makes-two-eligible"),
    pytest.param(_changed(labels={"zone": "core"}, taints=NO_SCHEDULE),
                 [("add", "default/everywhere")], id="taint-makes-the-intolerant-ineligible"),
])
def test_node_update_from_plain(new: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """Without a priority lane, exactly the DaemonSets whose verdict flips are enqueued, in listing order."""
    cluster = Cluster(daemonsets=list(CLUSTER))
    cluster.handlers().on_node_update(PLAIN, new)
    assert cluster.queue.calls == calls


def test_heartbeat_does_no_per_daemonset_work() -> None:
    """A status-only node update is dropped before the DaemonSets are even listed."""
    cluster = Cluster(daemonsets=list(CLUSTER))
    cluster.handlers(prioritized=True).on_node_update(PLAIN, _changed(labels={"zone": "core"}, heartbeat="later"))
    assert cluster.queue.calls == [] and cluster.lists == 0


@pytest.mark.parametrize(("old", "new", "calls"), [
    pytest.param(PLAIN, _changed(labels={"zone": "edge", "gpu": "true"}),
                 [("add_prioritized", "default/gpu", 100), ("add_prioritized", "default/edge", 0)],
                 id="becoming-eligible-goes-by-priority"),
    pytest.param(node("n1", labels={"zone": "edge", "gpu": "true"}), _changed(labels={"zone": "core"}),
                 [("add", "default/gpu"), ("add", "default/edge")], id="becoming-ineligible-goes-plain"),
    pytest.param(node("n1", labels={"zone": "edge"}), _changed(labels={"gpu": "true"}),
                 [("add", "default/edge"), ("add_prioritized", "default/gpu", 100)],
                 id="mixed-flips-plain-first"),
])
def test_node_update_with_priority_lane(old: dict[str, Any], new: dict[str, Any],
                                        calls: list[tuple[Any, ...]]) -> None:
    """A node that becomes eligible wakes its DaemonSets in the priority lane; one that stops being so, plainly."""
    cluster = Cluster(daemonsets=list(CLUSTER))
    cluster.handlers(prioritized=True).on_node_update(old, new)
    assert cluster.queue.calls == calls


@pytest.mark.parametrize(("prioritized", "joined", "calls"), [
    pytest.param(False, PLAIN, [("add", "default/everywhere"), ("add", "default/tolerant")], id="plain-lane"),
    pytest.param(True, PLAIN,
                 [("add_prioritized", "default/everywhere", 5), ("add_prioritized", "default/tolerant", 0)],
                 id="priority-lane"),
    pytest.param(True, node("n1", labels={"gpu": "true"}, taints=NO_SCHEDULE),
                 [("add_prioritized", "default/tolerant", 0)], id="taint-keeps-the-intolerant-away"),
    pytest.param(False, node("n1", labels={"gpu": "true"}, taints=NO_SCHEDULE + NO_EXECUTE),
                 [], id="nothing-tolerates-it"),
])
def test_node_add(prioritized: bool, joined: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """A joining node wakes every DaemonSet that should run there, and no other."""
    cluster = Cluster(daemonsets=list(CLUSTER))
    cluster.handlers(prioritized=prioritized).on_node_add(joined)
    assert cluster.queue.calls == calls


def test_node_delete_wakes_pod_owners_and_eligible_daemonsets_once() -> None:
    """A node leaving syncs the owners of its pods and every DaemonSet it was eligible for, each once, sorted."""
    gone = node("n1", labels={"zone": "core"})
    pods = [pod("e1", owner=owner_ref(EDGE)), pod("t1", owner=owner_ref(TOLERANT)),
            pod("x1", owner=owner_ref(ds("stale"))), pod("o1", labels={"app": "gpu"}),
            pod("g2", owner=owner_ref(GPU), node_name="n2")]
    cluster = Cluster(daemonsets=list(CLUSTER), pods=pods)
    cluster.handlers(prioritized=True).on_node_delete(gone)
    assert cluster.queue.calls == [("add", "default/edge"), ("add", "default/everywhere"), ("add", "default/tolerant")]


def test_a_deleted_node_leaves_no_verdict_behind() -> None:
    """The verdicts a node delete computes are forgotten with the node, so nothing about it is kept."""
    cluster = Cluster(daemonsets=list(CLUSTER))
    handlers = cluster.handlers()
    handlers.on_node_add(PLAIN)
    assert cluster.state.plans.holds_node("n1")
    handlers.on_node_delete(PLAIN)
    assert not cluster.state.plans.holds_node("n1")

