"""The PodDisruptionBudget a DaemonSet keeps with maxDisruptions: its number, and the one write."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset import history as hist
from dsctl.daemonset.budget import ALWAYS_ALLOW, min_available, plan_budget
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.extensions import InvalidControl
from dsctl.daemonset.reasons import DISRUPTION_BUDGET_FAILURE, DISRUPTION_BUDGET_NOT_OWNED, INVALID_ROLLOUT_CONTROL
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.daemonset.template import HASH_LABEL
from tests.unit.daemonset.objects import DS_UID, T0, make_ds, make_node, make_pod, surge_strategy
from tests.unit.daemonset.test_nodetable_property import DictView

SELECTOR = {"matchLabels": {"name": "simple-daemon", "type": "production"}}


def _pdb(*, owner: str | None = DS_UID, minimum: int = 9, selector: dict[str, Any] | None = None,
         **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "foo", "namespace": "default", "uid": "pdb-uid"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo", "uid": owner,
                                    "controller": True, "blockOwnerDeletion": True}]
    return {"metadata": meta, "spec": {"minAvailable": minimum, "selector": selector or SELECTOR,
                                       "unhealthyPodEvictionPolicy": ALWAYS_ALLOW, **spec}}


@pytest.mark.parametrize(
    ("desired", "skipped", "extra", "max_disruptions", "expected"),
    [
        pytest.param(10, 0, 0, 1, 9, id="one-of-ten"),
        pytest.param(10, 2, 0, 1, 7, id="skipped-are-not-expected"),
        pytest.param(10, 0, 3, 1, 12, id="surge-pods-are-extra"),
        pytest.param(2, 0, 0, 5, 0, id="floored-at-zero"),
    ],
)
def test_min_available(desired: int, skipped: int, extra: int, max_disruptions: int, expected: int) -> None:
    """minAvailable = desired - skipped - maxDisruptions + extra, at least 0."""
    assert min_available(desired=desired, skipped=skipped, extra=extra, max_disruptions=max_disruptions) == expected


def _plan(existing: dict[str, Any] | None, wanted: int | InvalidControl | None, desired: int = 10) -> Any:
    return plan_budget(make_ds(), existing, max_disruptions=wanted, desired=desired, skipped=0, extra=0,
                       api_version="apps/v1", kind="DaemonSet")


def test_a_new_budget_is_owned_by_the_daemonset() -> None:
    """Created with the DaemonSet's name and selector, a controller owner reference and AlwaysAllow."""
    write = _plan(None, 1).write
    assert write is not None and write.verb == "create" and write.min_available == 9
    body = write.body
    assert body["metadata"]["name"] == "foo" and body["metadata"]["namespace"] == "default"
    (owner,) = body["metadata"]["ownerReferences"]
    assert (owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (DS_UID, True, True)
    assert body["spec"] == {"minAvailable": 9, "selector": SELECTOR, "unhealthyPodEvictionPolicy": ALWAYS_ALLOW}


@pytest.mark.parametrize(
    ("existing", "ops"),
    [
        pytest.param(_pdb(), [], id="current-nothing-written"),
        pytest.param(_pdb(minimum=8), [("add", "/spec/minAvailable", 9)], id="node-joined"),
        pytest.param(_pdb(maxUnavailable=1), [("remove", "/spec/maxUnavailable", None)], id="hand-edited"),
    ],
)
def test_an_owned_budget_is_patched_only_when_it_differs(existing: dict[str, Any],
                                                         ops: list[tuple[str, str, Any]]) -> None:
    """A JSON patch that tests the UID first, and only the fields that differ."""
    write = _plan(existing, 1).write
    if not ops:
        assert write is None
        return
    assert write is not None and write.verb == "patch"
    assert write.body[0] == {"op": "test", "path": "/metadata/uid", "value": "pdb-uid"}
    assert [(o["op"], o["path"], o.get("value")) for o in write.body[1:]] == ops


def test_removing_the_setting_deletes_the_owned_budget() -> None:
    """No maxDisruptions: the budget it owns is deleted with a UID precondition; nothing else is."""
    write = _plan(_pdb(), None).write
    assert write is not None and (write.verb, write.uid) == ("delete", "pdb-uid")
    assert _plan(_pdb(owner="someone"), None).write is None
    assert _plan(None, None).write is None


def test_a_budget_someone_else_owns_is_left_alone_and_reported() -> None:
    """Same name, other owner (or none): no write, a Warning event and the failure condition."""
    for existing in (_pdb(owner="someone"), _pdb(owner=None)):
        plan = _plan(existing, 1)
        assert plan.write is None
        assert plan.problem is not None and plan.problem[0] == DISRUPTION_BUDGET_NOT_OWNED
        assert [e.reason for e in plan.events] == [DISRUPTION_BUDGET_NOT_OWNED]


def test_an_unreadable_setting_leaves_the_budget_as_it_is() -> None:
    """An unreadable maxDisruptions: no write, the InvalidRolloutControl event and the condition."""
    plan = _plan(_pdb(minimum=3), InvalidControl("metadata.annotations[dsctl.io/max-disruptions]", "bad"))
    assert plan.write is None and plan.problem is not None and plan.problem[0] == INVALID_ROLLOUT_CONTROL
    assert [e.reason for e in plan.events] == [INVALID_ROLLOUT_CONTROL]


# -- through plan_sync ------------------------------------------------------------------------


def _sync(annotations: dict[str, str], *, surge: bool = False, budget: dict[str, Any] | None = None) -> SyncPlan:
    ds = make_ds(annotations=annotations, strategy=surge_strategy(2) if surge else None)
    view = DictView()
    for i in range(4):
        view.node_objs[f"n{i}"] = make_node(f"n{i}")
    created = hist.plan_history(ds=ds, revisions=[]).create
    assert created is not None
    created["metadata"].update(namespace="default", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo", "uid": DS_UID, "controller": True}])
    view.revisions.append(created)
    current = created["metadata"]["labels"][HASH_LABEL]
    for i in range(4):
        pod = make_pod(f"n{i}", hash="old" if surge else current, ready=True, ready_since=T0 - 500)
        view.pod_objs[pod["metadata"]["name"]] = pod
    return plan_sync(SyncSnapshot(ds=ds, view=view, satisfied=True, now=T0, backoff=FailedPodBackoff(),
                                  fit=Eligibility.of(ds).check, budget=budget))


def test_a_sync_writes_the_budget_it_wants() -> None:
    """Four nodes and max-disruptions 1: minAvailable 3."""
    plan = _sync({"dsctl.io/max-disruptions": "1"})
    assert plan.budget is not None and plan.budget.min_available == 3


def test_surge_creates_tighten_the_budget_in_the_same_sync() -> None:
    """Two surge pods planned beside running old pods raise minAvailable by two, before they exist."""
    plan = _sync({"dsctl.io/max-disruptions": "25%"}, surge=True)
    assert len(plan.pods.creates) == 2
    assert plan.budget is not None and plan.budget.min_available == 4 - 1 + 2


def test_a_bad_budget_reaches_the_status_as_a_condition() -> None:
    """An over-100 % budget: the event, and DisruptionBudgetFailure in the status plan."""
    plan = _sync({"dsctl.io/max-disruptions": "150%"})
    assert plan.budget is None and INVALID_ROLLOUT_CONTROL in [e.reason for e in plan.events]
    assert plan.status is not None
    assert [(c.type, c.reason) for c in plan.status.conditions] == [(DISRUPTION_BUDGET_FAILURE,
                                                                      INVALID_ROLLOUT_CONTROL)]
