"""PodDisruptionBudget status: the pure arithmetic, then the disruption controller loop on a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.testing import make_node, make_pod, wait_for
from dsctl_sim.disruption import DELETION_TIMEOUT, PDB_KEY, budget_status, matching_budgets
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
