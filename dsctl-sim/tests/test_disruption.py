"""PodDisruptionBudget status: the pure arithmetic, then the disruption controller loop on a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim import nodes
from dsctl_sim.controllers import ANN_NEVER_READY, ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.nodelifecycle import DEFAULT_GRACE_SECONDS
from dsctl_sim.controllers.testing import make_node, make_pod, wait_for
from dsctl_sim.disruption import DELETION_TIMEOUT, PDB_KEY, budget_status, matching_budgets
from dsctl_sim.eviction import BudgetRefusal, evict
from dsctl_sim.storage import Storage

NOW = 1_800_000_000.0


def pod(name: str, *, ready: bool = True, terminating: bool = False, owned: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "web"}}
    if terminating:
        meta["deletionTimestamp"] = format_rfc3339(NOW)
    if owned:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u",
                                    "controller": True}]
    return {"metadata": meta, "status": {"phase": "Running",
                                         "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pdb(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", "generation": 3},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}, "status": status or {}}


@pytest.mark.parametrize(
    ("spec", "pods", "expected", "desired", "healthy", "allowed"),
    [
        pytest.param({"minAvailable": 2}, [pod("a"), pod("b"), pod("c")], 3, 2, 3, 1, id="min-available-int"),
        pytest.param({"minAvailable": 3}, [pod("a"), pod("b"), pod("c")], 3, 3, 3, 0, id="min-available-all"),
        pytest.param({"minAvailable": 1}, [pod("a"), pod("b", ready=False)], 2, 1, 1, 0, id="unready-not-healthy"),
        pytest.param({"minAvailable": 1}, [pod("a"), pod("b", terminating=True)], 2, 1, 1, 0,
                     id="terminating-not-healthy"),
        pytest.param({"minAvailable": 0}, [], 0, 0, 0, 0, id="no-pods-no-disruption"),
        pytest.param({"maxUnavailable": 1}, [pod("a"), pod("b")], 0, 0, 2, 0, id="max-unavailable-unmanaged"),
    ],
)
def test_budget_status_arithmetic(  # noqa: PLR0917
    spec: dict[str, Any], pods: list[dict[str, Any]], expected: int, desired: int, healthy: int, allowed: int
) -> None:
    """expectedPods, desiredHealthy, currentHealthy and disruptionsAllowed as the disruption controller counts them."""
    status = budget_status(pdb(spec), pods, now=NOW).status
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == (expected, desired, healthy, allowed)
    assert status["observedGeneration"] == 3


@pytest.mark.parametrize(
    "spec",
    [pytest.param({"maxUnavailable": 1}, id="max-unavailable"), pytest.param({"minAvailable": "50%"}, id="percent")],
)
def test_budget_over_daemonset_pods_needing_scale_fails_safe(spec: dict[str, Any]) -> None:
    """DaemonSets have no scale: such a budget over their pods allows nothing, with reason SyncFailed."""
    status = budget_status(pdb(spec), [pod("a", owned=True), pod("b", owned=True)], now=NOW).status
    assert status["disruptionsAllowed"] == 0
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "False", "SyncFailed")
    assert "found no controllers" in cond["message"]


@pytest.mark.parametrize(
    ("stamp_age", "healthy", "recheck"),
    [
        pytest.param(10.0, 1, True, id="recent-eviction-not-counted"),
        pytest.param(DELETION_TIMEOUT + 1, 2, False, id="expired-eviction-counted-again"),
    ],
)
def test_disrupted_pods_expire(stamp_age: float, healthy: int, recheck: bool) -> None:
    """A pod evicted moments ago is not healthy; after DeletionTimeout it counts again and leaves the map."""
    disrupted = {"disruptedPods": {"a": format_rfc3339(NOW - stamp_age)}}
    computed = budget_status(pdb({"minAvailable": 1}, disrupted), [pod("a"), pod("b")], now=NOW)
    assert computed.status["currentHealthy"] == healthy
    assert ("disruptedPods" in computed.status) is recheck
    assert (computed.recheck_at is not None) is recheck


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param({"matchLabels": {"app": "web"}}, True, id="label-match"),
        pytest.param({"matchLabels": {"app": "db"}}, False, id="label-mismatch"),
        pytest.param({}, True, id="empty-selects-all"),
        pytest.param(None, False, id="null-selects-none"),
    ],
)
def test_matching_budgets(selector: dict[str, Any] | None, matches: bool) -> None:
    """policy/v1: an empty selector matches every pod of the namespace, a null one none."""
    budget = {"metadata": {"name": "b", "namespace": "default"}, "spec": {"selector": selector}}
    other_ns = {"metadata": {"name": "c", "namespace": "other"}, "spec": {"selector": {}}}
    assert bool(matching_budgets([budget, other_ns], pod("a"))) is matches


Sim = tuple[Storage, ControlPlane, FakeClock]


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock)
    storage.create("nodes", make_node("n1"))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _status(storage: Storage) -> dict[str, Any]:
    found = storage.get(PDB_KEY, "default", "web")
    assert found is not None
    return dict(found.get("status") or {})


async def test_controller_tracks_pods_becoming_ready_and_leaving(sim: Sim) -> None:
    """The loop writes status as pods come up, and again when one is relabelled out of the budget."""
    storage, plane, _ = sim
    storage.create(PDB_KEY, {"metadata": {"name": "web", "namespace": "default"},
                             "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    for name in ("a", "b"):
        storage.create("pods", make_pod(name, labels={"app": "web"}, node_name="n1"))
    await wait_for(lambda: _status(storage).get("currentHealthy") == 2, what="both pods healthy")
    assert _status(storage)["disruptionsAllowed"] == 1 and _status(storage)["observedGeneration"] == 1
    await plane.settle()
    moved = storage.get("pods", "default", "b")
    assert moved is not None
    storage.update("pods", {**moved, "metadata": {**moved["metadata"], "labels": {"app": "other"}}})
    await wait_for(lambda: _status(storage).get("expectedPods") == 1, what="the relabelled pod dropped")
    await plane.settle()
    assert _status(storage)["disruptionsAllowed"] == 0


async def test_controller_forgets_an_eviction_that_never_became_a_deletion(sim: Sim) -> None:
    """A disruptedPods entry whose pod is still there after DeletionTimeout is dropped on the clock's timer."""
    storage, plane, clock = sim
    for name in ("a", "b"):
        storage.create("pods", make_pod(name, labels={"app": "web"}, node_name="n1"))
    created = storage.create(PDB_KEY, {"metadata": {"name": "web", "namespace": "default"},
                                       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    await wait_for(lambda: _status(storage).get("disruptionsAllowed") == 1, what="budget computed")
    current = storage.get(PDB_KEY, "default", "web")
    assert current is not None and created["metadata"]["uid"] == current["metadata"]["uid"]
    status = {**current["status"], "disruptionsAllowed": 0, "disruptedPods": {"a": storage.timestamp()}}
    storage.update(PDB_KEY, {**current, "status": status}, subresource="status")
    await wait_for(lambda: _status(storage).get("currentHealthy") == 1, what="evicted pod not counted")
    clock.advance(DELETION_TIMEOUT + 1)
    await wait_for(lambda: _status(storage).get("currentHealthy") == 2, what="eviction record expired")
    assert "disruptedPods" not in _status(storage)
    await plane.settle()


def _owned(name: str, node: str, owner: str, **kw: Any) -> dict[str, Any]:
    body = make_pod(name, labels={"app": "agent"}, node_name=node, **kw)
    body["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                            "uid": owner, "controller": True, "blockOwnerDeletion": True}]
    body["spec"]["tolerations"] = [{"operator": "Exists"}]
    return body


def _counts(storage: Storage) -> tuple[int, int, int, int]:
    status = _status(storage)
    return (status.get("expectedPods", -1), status.get("desiredHealthy", -1), status.get("currentHealthy", -1),
            status.get("disruptionsAllowed", -1))


async def test_daemonset_budget_counts_unready_and_unreachable_pods_out(sim: Sim) -> None:
    """Integer minAvailable over DaemonSet pods: expectedPods is every matching pod, currentHealthy the
    Ready ones; a pod on a node whose kubelet stopped drops out once the node lifecycle marks it not
    Ready, and the Eviction API then answers 429 with the budget's numbers."""
    storage, plane, clock = sim
    for index, name in enumerate(("n2", "n3"), start=2):
        storage.create("nodes", nodes.make_node(name, index=index, now=clock.now()))
    template = {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    ds = storage.create("apps/daemonsets", {"metadata": {"name": "agent", "namespace": "default"},
                                            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                                                     "template": template}})
    owner = ds["metadata"]["uid"]
    for name, node in (("a", "n1"), ("b", "n2"), ("c", "n3")):
        storage.create("pods", _owned(name, node, owner))
    storage.create("pods", _owned("d", "n1", owner, annotations={ANN_NEVER_READY: "true"}))
    storage.create(PDB_KEY, {"metadata": {"name": "web", "namespace": "default"},
                             "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "agent"}}}})
    await wait_for(lambda: _counts(storage) == (4, 2, 3, 1), what="budget over ready pods")
    assert plane.kubelet is not None
    plane.kubelet.set_running("n3", running=False)
    await plane.settle()
    clock.advance(DEFAULT_GRACE_SECONDS)
    await wait_for(lambda: _counts(storage) == (4, 2, 2, 0), what="unreachable pod not healthy")
    with pytest.raises(BudgetRefusal) as refused:
        evict(storage, namespace="default", name="a", eviction={"metadata": {"name": "a"}}, dry_run=False)
    body = refused.value.to_status()
    assert (body["code"], body["reason"], body["message"]) == (
        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
    assert body["details"]["causes"] == [
        {"reason": "DisruptionBudget", "message": "The disruption budget web needs 2 healthy pods and has 2 currently"}]
    plane.kubelet.set_running("n3", running=True)
    await wait_for(lambda: _counts(storage) == (4, 2, 3, 1), what="pod healthy again")
