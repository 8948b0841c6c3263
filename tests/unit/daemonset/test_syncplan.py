"""``plan_sync``: every branch of one sync, decided from a snapshot with no client at all."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset import history as hist
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.extensions import BURST_REPLICAS_FIELD
from dsctl.daemonset.reasons import (
    DAEMONSET_PAUSED,
    DEPRECATED_ANNOTATION,
    INVALID,
    INVALID_ROLLOUT_CONTROL,
    REPLICA_FAILURE,
    ROLLOUT_HELD,
)
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.daemonset.template import HASH_LABEL
from tests.unit.daemonset.objects import DS_UID, T0, make_ds, make_node, make_pod
from tests.unit.daemonset.test_nodetable_property import DictView


def _owned(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo", "uid": DS_UID,
                                "controller": True}]
    meta.setdefault("namespace", "default")
    return obj


def _world(ds: dict[str, Any], *, nodes: tuple[str, ...] = ("n1",), revision: bool = True) -> tuple[DictView, str]:
    view = DictView()
    for name in nodes:
        view.node_objs[name] = make_node(name)
    created = hist.plan_history(ds=ds, revisions=[]).create
    assert created is not None
    if revision:
        view.revisions.append(_owned(created))
    return view, created["metadata"]["labels"][HASH_LABEL]


def _plan(ds: dict[str, Any], view: DictView, *, satisfied: bool = True) -> SyncPlan:
    return plan_sync(SyncSnapshot(ds=ds, view=view, satisfied=satisfied, now=T0, backoff=FailedPodBackoff(),
                                  fit=Eligibility.of(ds).check))


def _reasons(plan: SyncPlan) -> list[str]:
    return [e.reason for e in plan.events]


@pytest.mark.parametrize(
    ("change", "reasons", "condition", "terminal"),
    [
        pytest.param(lambda ds: ds["spec"].update(selector={}), ["SelectingAll"], None, False, id="selects-all"),
        pytest.param(lambda ds: ds["metadata"].update(deletionTimestamp="2023-11-14T22:13:20Z"), [], None, False,
                     id="being-deleted"),
        pytest.param(lambda ds: ds["spec"].update(selector={"matchLabels": {"other": "x"}}), ["InvalidSpec"],
                     INVALID, True, id="selector-misses-template"),
    ],
)
def test_a_daemonset_that_cannot_be_acted_on_gets_no_writes(change: Any, reasons: list[str], condition: str | None,
                                                            terminal: bool) -> None:
    """Empty selector, deletion and an invalid spec: events and at most a condition, never pod writes."""
    ds = make_ds()
    change(ds)
    view, _ = _world(make_ds())
    plan = _plan(ds, view)
    assert not plan.act and _reasons(plan) == reasons
    assert (plan.condition.type if plan.condition else None) == condition
    assert (plan.terminal is not None) == terminal
    assert plan.pods.empty and plan.status is None


def test_a_revision_at_int64_max_stops_with_replica_failure() -> None:
    """No revision can be numbered past int64: a warning, ReplicaFailure, and a terminal outcome."""
    ds = make_ds()
    view, _ = _world(ds, revision=False)
    old = _owned(hist.plan_history(ds=make_ds(pod_spec={"hostNetwork": True}), revisions=[]).create or {})
    old["revision"] = hist.MAX_REVISION
    view.revisions.append(old)
    plan = _plan(ds, view)
    assert _reasons(plan) == ["RevisionOutOfRange"] and plan.condition is not None
    assert plan.condition.type == REPLICA_FAILURE and plan.terminal is not None


def test_pending_expectations_write_status_only() -> None:
    """Unsatisfied expectations: the counters are written, not observedGeneration, and no pod is touched."""
    ds = make_ds()
    view, _ = _world(ds)
    plan = _plan(ds, view, satisfied=False)
    assert plan.status_only and plan.pods.empty and plan.status is not None
    assert plan.status.counters.desired_number_scheduled == 1


def test_a_node_without_a_pod_gets_one_and_the_revision_is_snapshotted() -> None:
    """First sync of a new DaemonSet: the revision is created and every eligible node gets a create."""
    ds = make_ds()
    view, _ = _world(ds, nodes=("n2", "n1"), revision=False)
    plan = _plan(ds, view)
    assert plan.history is not None and plan.history.create is not None
    assert plan.pods.creates == ("n1", "n2")
    assert plan.status is not None and plan.status.observed and plan.status.created_revision


def test_orphans_are_adopted_after_a_live_check_and_strays_released() -> None:
    """A matching orphan is adopted (after the owner is re-read live); an owned pod that stopped matching is let go."""
    ds = make_ds()
    view, hash_ = _world(ds, nodes=("n1", "n2"))
    orphan = make_pod("n1", owner_uid=None, hash=hash_)
    stray = make_pod("n2", labels={"name": "other"}, hash=hash_)
    view.pod_objs.update({orphan["metadata"]["name"]: orphan, stray["metadata"]["name"]: stray})
    plan = _plan(ds, view)
    assert plan.recheck_owner
    assert sorted((w.name, w.adopt) for w in plan.ownership) == sorted(
        [(orphan["metadata"]["name"], True), (stray["metadata"]["name"], False)])
    assert plan.pods.creates == ("n2",)


def test_the_rolling_update_runs_only_when_manage_writes_nothing() -> None:
    """Manage's create on an empty node goes alone; with nothing to manage, the old pod is replaced."""
    ds = make_ds()
    view, _ = _world(ds, nodes=("n1", "n2"))
    old = make_pod("n1", hash="old", ready=True, ready_since=T0 - 100)
    view.pod_objs[old["metadata"]["name"]] = old
    first = _plan(ds, view)
    assert first.pods.creates == ("n2",) and not first.pods.deletes
    fresh = make_pod("n2", hash=first.history.hash if first.history else "", ready=True, ready_since=T0 - 100)
    view.pod_objs[fresh["metadata"]["name"]] = fresh
    second = _plan(ds, view)
    assert [r.uid for r in second.pods.deletes] == [old["metadata"]["uid"]] and not second.pods.creates


def test_an_unreadable_readiness_gate_is_reported_with_its_field() -> None:
    """A bad node-readiness-gate value: an InvalidRolloutControl warning naming the annotation, never a crash."""
    ds = make_ds(annotations={"dsctl.io/node-readiness-gate": "sometimes"})
    view, current = _world(ds, nodes=("n1", "n2"))
    pod = make_pod("n1", hash=current, ready=True, ready_since=T0 - 100)
    view.pod_objs[pod["metadata"]["name"]] = pod
    assert _plan(ds, view).pods.creates == ("n2",), "manage goes on: only the rollout is held"
    view.node_objs.pop("n2")
    plan = _plan(ds, view)
    [event] = [e for e in plan.events if e.reason == INVALID_ROLLOUT_CONTROL]
    assert "dsctl.io/node-readiness-gate" in event.message and "'sometimes'" in event.message
    assert plan.status is not None and plan.status.hold is not None
    assert plan.status.hold.reason == INVALID_ROLLOUT_CONTROL


def test_an_unreadable_burst_is_reported_and_the_global_burst_applies() -> None:
    """A bad burst-replicas annotation: an InvalidRolloutControl warning, and --burst-replicas."""
    ds = make_ds(annotations={BURST_REPLICAS_FIELD.annotation: "lots"})
    view, _ = _world(ds)
    plan = _plan(ds, view)
    assert "InvalidRolloutControl" in _reasons(plan) and plan.burst == 250


@pytest.mark.parametrize(
    ("annotations", "messages"),
    [
        pytest.param({"dsctl.io/rolling-update-type": "InPlaceIfPossible"}, [], id="kebab-case-is-quiet"),
        pytest.param({"dsctl.io/rollingUpdateType": "InPlaceIfPossible"},
                     ["annotation dsctl.io/rollingUpdateType is deprecated: rename it to dsctl.io/rolling-update-type"],
                     id="camel-case-names-the-new-key"),
        pytest.param({"dsctl.io/rollingUpdateType": "InPlaceIfPossible", "dsctl.io/rolling-update-type": "Standard"},
                     ["annotation dsctl.io/rollingUpdateType is deprecated and ignored: "
                      "metadata.annotations[dsctl.io/rolling-update-type] is set; remove it"],
                     id="camel-case-shadowed-says-ignored"),
    ],
)
def test_a_deprecated_annotation_gets_a_warning_on_every_sync(annotations: dict[str, str],
                                                             messages: list[str]) -> None:
    """Each acting sync that reads an older camelCase annotation warns with DeprecatedAnnotation, naming the new key."""
    ds = make_ds(annotations=annotations)
    view, _ = _world(ds)
    plan = _plan(ds, view)
    assert [e.message for e in plan.events if e.reason == DEPRECATED_ANNOTATION] == messages
    assert all(e.type == "Warning" for e in plan.events if e.reason == DEPRECATED_ANNOTATION)


@pytest.mark.parametrize(
    ("annotations", "strategy", "reason", "why"),
    [
        pytest.param({"dsctl.io/partition": "3"}, None, ROLLOUT_HELD,
                     "is held by partition 3 (dsctl.io/partition): 3 of 5 pods are held on older revisions",
                     id="partition-holds-the-last-three"),
        pytest.param({"dsctl.io/selector": "zone=a"}, None, ROLLOUT_HELD,
                     'is held by node selector "zone=a" (dsctl.io/selector): 3 of 5 pods are held on older '
                     "revisions", id="selector-holds-the-nodes-it-leaves-out"),
        pytest.param({"dsctl.io/paused": "true"}, None, DAEMONSET_PAUSED,
                     "is paused by dsctl.io/paused: 5 of 5 pods are held on older revisions", id="pause-holds-all"),
        pytest.param({"dsctl.io/partition": "three"}, None, INVALID_ROLLOUT_CONTROL,
                     "is held until metadata.annotations[dsctl.io/partition] is fixed: must be a non-negative "
                     "integer, not 'three'", id="invalid-control"),
        pytest.param({"dsctl.io/node-readiness-gate": "yes"}, None, INVALID_ROLLOUT_CONTROL,
                     "is held until metadata.annotations[dsctl.io/node-readiness-gate] is fixed: must be true or "
                     "false, not 'yes'", id="invalid-readiness-gate"),
        pytest.param({"dsctl.io/node-readiness-gate": "true"}, None, None, None, id="readiness-gate-holds-nothing"),
        pytest.param({"dsctl.io/partition": "3"}, {"type": "OnDelete"}, None, None, id="on-delete-holds-nothing"),
        pytest.param({}, None, None, None, id="no-control"),
    ],
)
def test_the_status_plan_says_what_holds_the_rollout(annotations: dict[str, str], strategy: dict[str, Any] | None,
                                                     reason: str | None, why: str | None) -> None:
    """Five nodes with old pods: the hold counts the nodes the rolling update leaves alone, as it counts them."""
    ds = make_ds(annotations=annotations, strategy=strategy)
    nodes = tuple(f"n{i}" for i in range(5))
    view, _ = _world(ds, nodes=nodes)
    for name in nodes:
        view.node_objs[name]["metadata"]["labels"] = {"zone": "a" if name in ("n0", "n1") else "b"}
        pod = make_pod(name, hash="old", ready=True, ready_since=T0 - 100)
        view.pod_objs[pod["metadata"]["name"]] = pod
    plan = _plan(ds, view)
    assert plan.status is not None
    hold = plan.status.hold
    assert (None if hold is None else (hold.reason, hold.why)) == (None if reason is None else (reason, why))
