"""Node lifecycle and PodDisruptionBudget events: what wakes which DaemonSet, and what is dropped."""

from __future__ import annotations

from typing import Any

import pytest

from .handlerkit import NS, Cluster, ds, node, owner_ref, pod

EVERYWHERE = ds("everywhere", tolerations=[{"operator": "Exists"}])
GPU = ds("gpu", node_selector={"gpu": "true"})
ELSEWHERE = ds("elsewhere", node_selector={"zone": "edge"})
READY = node("n1", rv="1")
KARPENTER = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]


@pytest.mark.parametrize(("new", "woken"), [
    pytest.param(node("n1", rv="2", heartbeat="2026-12-01T00:00:10Z"), [], id="heartbeat"),
    pytest.param(node("n1", rv="2", ready="False", since="2026-12-01T00:00:05Z"),
                 ["default/everywhere", "default/elsewhere"], id="ready-flip"),
    pytest.param(node("n1", rv="2", ready="False", since="2026-12-01T00:00:05Z", message="node is shutting down"),
                 ["default/everywhere", "default/elsewhere"], id="graceful-shutdown"),
    pytest.param(node("n1", rv="2", taints=KARPENTER), ["default/everywhere", "default/elsewhere"],
                 id="departing-taint-flips-no-eligibility-of-a-tolerant-one"),
    pytest.param(node("n1", rv="2", deleting=True), ["default/everywhere", "default/elsewhere"], id="deleting"),
])
def test_a_lifecycle_change_wakes_whoever_has_a_stake_in_the_node(new: dict[str, Any], woken: list[str]) -> None:
    """A Ready flip or departing signal wakes the DaemonSets that should run there and the owners of its pods;
    a heartbeat wakes nothing and does no per-DaemonSet work."""
    cluster = Cluster(daemonsets=[EVERYWHERE, GPU, ELSEWHERE],
                      pods=[pod("elsewhere-x", owner=owner_ref(ELSEWHERE), labels={"app": "elsewhere"})])
    cluster.changes.take("default/gpu")  # the log collects for a DaemonSet once it has planned
    cluster.handlers().on_node_update(READY, new)
    assert sorted(set(cluster.queue.keys)) == sorted(woken)
    if not woken:
        assert cluster.lists == 0
    else:
        assert cluster.changes.take("default/gpu") == frozenset({"n1"})


def test_a_heartbeat_on_a_not_ready_node_is_still_dropped() -> None:
    """NotReady for a while: each heartbeat moves only lastHeartbeatTime, and is dropped."""
    cluster = Cluster(daemonsets=[EVERYWHERE])
    down = node("n1", rv="5", ready="Unknown", since="2026-12-01T00:00:05Z")
    cluster.handlers().on_node_update(down, node("n1", rv="6", ready="Unknown", since="2026-12-01T00:00:05Z",
                                                 heartbeat="2026-12-01T00:01:00Z"))
    assert cluster.queue.calls == [] and cluster.lists == 0


def _budget(name: str, *, owner: dict[str, Any] | None, rv: str = "1", min_available: int = 3,
            healthy: int = 3) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-pdb-{name}", "resourceVersion": rv}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta,
            "spec": {"minAvailable": min_available}, "status": {"currentHealthy": healthy}}


def test_budget_events_wake_the_owner_or_the_namesake() -> None:
    """Owned budgets wake their DaemonSet; one named after a DaemonSet wakes it too; others nothing."""
    cluster = Cluster(daemonsets=[EVERYWHERE, GPU])
    handlers = cluster.handlers()
    handlers.on_budget_add(_budget("agent-budget", owner=owner_ref(EVERYWHERE)))
    handlers.on_budget_add(_budget("gpu", owner=None))
    handlers.on_budget_delete(_budget("unrelated", owner=None))
    assert cluster.queue.keys == ["default/everywhere", "default/gpu"]


def test_a_budget_status_update_is_dropped() -> None:
    """The disruption controller rewrites the status on every pod change: that wakes nobody; a spec change does."""
    cluster = Cluster(daemonsets=[EVERYWHERE])
    handlers = cluster.handlers()
    old = _budget("everywhere", owner=owner_ref(EVERYWHERE))
    handlers.on_budget_update(old, _budget("everywhere", owner=owner_ref(EVERYWHERE), rv="2", healthy=2))
    assert cluster.queue.calls == []
    handlers.on_budget_update(old, _budget("everywhere", owner=owner_ref(EVERYWHERE), rv="3", min_available=9))
    assert cluster.queue.keys == ["default/everywhere", "default/everywhere"]
