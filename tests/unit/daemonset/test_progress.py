"""The Progressing condition (``daemonset.progress``) and the spec-level limits it reads."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.extensions import (
    InvalidControl,
    RolloutControls,
    burst_replicas,
    effective_burst,
    progress_deadline_seconds,
    rollout_controls,
)
from dsctl.daemonset.progress import (
    Hold,
    last_progress,
    plan_progress,
    progressing_condition,
    rollout_hold,
    rollout_started,
    with_progress,
)
from dsctl.daemonset.reasons import (
    DAEMONSET_PAUSED,
    FOUND_NEW_REVISION,
    INVALID_ROLLOUT_CONTROL,
    NEW_REVISION_AVAILABLE,
    NEW_REVISION_CREATED,
    PROGRESS_DEADLINE_EXCEEDED,
    REVISION_UPDATED,
    ROLLOUT_HELD,
)
from dsctl.daemonset.status import Status
from dsctl_api.timefmt import format_rfc3339
from tests.unit.daemonset.objects import make_pod

T0 = 1_800_000_000.0
REV = "agent-abc"


def counts(*, desired: int = 4, updated: int = 0, available: int = 4) -> Status:
    return Status(desired_number_scheduled=desired, current_number_scheduled=desired, number_ready=available,
                  number_available=available, number_unavailable=desired - available,
                  updated_number_scheduled=updated)


def cond(status: str, reason: str, *, revision: str = REV, at: float = T0, since: float = T0) -> dict[str, Any]:
    return {"type": "Progressing", "status": status, "reason": reason, "message": f'Revision "{revision}" x',
            "lastUpdateTime": format_rfc3339(at), "lastTransitionTime": format_rfc3339(since)}


PAUSED_HOLD = Hold(DAEMONSET_PAUSED, "is paused by dsctl.io/paused: 3 of 4 pods are held on older revisions")
PARTITION_HOLD = Hold(ROLLOUT_HELD, "is held by partition 3 (dsctl.io/partition): 3 of 4 pods are held on older "
                      "revisions")
INVALID_HOLD = Hold(INVALID_ROLLOUT_CONTROL, "is held until metadata.annotations[dsctl.io/partition] is fixed: "
                    "must be a non-negative integer, not 'three'")


@pytest.mark.parametrize(
    ("previous", "old", "new", "created", "held", "now", "status", "reason", "updated_at", "requeue"),
    [
        pytest.param(None, counts(), counts(updated=0), True, None, T0, "True", NEW_REVISION_CREATED, T0, 6.0,
                     id="rollout-starts-with-created-revision"),
        pytest.param(cond("True", NEW_REVISION_AVAILABLE, revision="agent-old"), counts(updated=4), counts(), False,
                     None, T0 + 3, "True", FOUND_NEW_REVISION, T0 + 3, 6.0, id="another-revision-restarts-clock"),
        pytest.param(cond("True", FOUND_NEW_REVISION), counts(updated=0, available=3),
                     counts(updated=1, available=3), False, None, T0 + 4, "True", REVISION_UPDATED, T0 + 4, 6.0,
                     id="more-updated-is-progress"),
        pytest.param(cond("True", FOUND_NEW_REVISION), counts(updated=1, available=2),
                     counts(updated=1, available=3), False, None, T0 + 4, "True", REVISION_UPDATED, T0 + 4, 6.0,
                     id="more-available-is-progress"),
        pytest.param(cond("True", FOUND_NEW_REVISION), counts(updated=1, available=3),
                     counts(updated=1, available=3), False, None, T0 + 2, "True", FOUND_NEW_REVISION, T0, 4.0,
                     id="no-progress-within-deadline-waits"),
        pytest.param(cond("True", REVISION_UPDATED), counts(updated=1, available=3),
                     counts(updated=1, available=2), False, None, T0 + 5, "True", REVISION_UPDATED, T0, 1.0,
                     id="at-the-deadline-not-yet"),
        pytest.param(cond("True", REVISION_UPDATED), counts(updated=1, available=3),
                     counts(updated=1, available=3), False, None, T0 + 6, "False", PROGRESS_DEADLINE_EXCEEDED,
                     T0 + 6, None, id="past-deadline-is-stuck"),
        pytest.param(cond("False", PROGRESS_DEADLINE_EXCEEDED, at=T0 + 6), counts(updated=1, available=3),
                     counts(updated=1, available=3), False, None, T0 + 60, "False", PROGRESS_DEADLINE_EXCEEDED,
                     T0 + 6, None, id="stuck-stays-stuck"),
        pytest.param(cond("False", PROGRESS_DEADLINE_EXCEEDED, at=T0 + 6), counts(updated=1, available=3),
                     counts(updated=2, available=3), False, None, T0 + 60, "True", REVISION_UPDATED,
                     T0 + 60, 6.0, id="progress-unsticks"),
        pytest.param(cond("False", PROGRESS_DEADLINE_EXCEEDED, at=T0 + 6), counts(updated=1, available=3),
                     counts(updated=4, available=4), False, None, T0 + 60, "True", NEW_REVISION_AVAILABLE,
                     T0 + 60, None, id="complete-after-stuck"),
        pytest.param(cond("True", NEW_REVISION_AVAILABLE, at=T0 + 1), counts(updated=4), counts(updated=4),
                     False, None, T0 + 900, "True", NEW_REVISION_AVAILABLE, T0 + 1, None,
                     id="complete-is-kept-unchanged"),
        pytest.param(cond("True", REVISION_UPDATED), counts(updated=1), counts(updated=1), False, PAUSED_HOLD,
                     T0 + 900, "Unknown", DAEMONSET_PAUSED, T0 + 900, None, id="paused-runs-no-deadline"),
        pytest.param(cond("True", REVISION_UPDATED), counts(updated=1), counts(updated=1), False, PARTITION_HOLD,
                     T0 + 900, "Unknown", ROLLOUT_HELD, T0 + 900, None, id="partition-runs-no-deadline"),
        pytest.param(cond("True", REVISION_UPDATED), counts(updated=1), counts(updated=1), False, INVALID_HOLD,
                     T0 + 900, "Unknown", INVALID_ROLLOUT_CONTROL, T0 + 900, None, id="invalid-runs-no-deadline"),
        pytest.param(cond("Unknown", DAEMONSET_PAUSED, at=T0 + 900), counts(updated=1), counts(updated=1), False, None,
                     T0 + 1000, "True", FOUND_NEW_REVISION, T0 + 1000, 6.0, id="resume-restarts-clock"),
        pytest.param({**cond("True", REVISION_UPDATED), "lastUpdateTime": "junk"}, counts(updated=1),
                     counts(updated=1), False, None, T0 + 900, "True", REVISION_UPDATED, T0, 6.0,
                     id="unreadable-time-restarts-not-stuck"),
    ],
)
def test_plan_progress(  # noqa: PLR0917
        previous: dict[str, Any] | None, old: Status, new: Status, created: bool, held: Hold | None,
        now: float, status: str, reason: str, updated_at: float, requeue: float | None) -> None:
    """Each case of the Deployment-like Progressing rules, with a 5 s deadline."""
    progress = plan_progress(previous=previous, old=old, new=new, revision=REV, created=created, held=held,
                             deadline=5, now=now)
    assert (progress.condition["status"], progress.condition["reason"]) == (status, reason)
    assert f'"{REV}"' in progress.condition["message"]
    if progress.condition["lastUpdateTime"] != "junk":
        assert progress.condition["lastUpdateTime"] == format_rfc3339(updated_at)
    assert progress.requeue_after == requeue
    assert progress.stuck == (reason == PROGRESS_DEADLINE_EXCEEDED)


@pytest.mark.parametrize(
    ("remembered", "now", "reason", "updated_at"),
    [
        pytest.param(None, T0 + 60, REVISION_UPDATED, T0 + 60, id="nothing-remembered-starts-clock"),
        pytest.param(T0, T0 + 4, REVISION_UPDATED, None, id="remembered-within-deadline"),
        pytest.param(T0, T0 + 6, PROGRESS_DEADLINE_EXCEEDED, T0 + 6, id="remembered-past-deadline"),
    ],
)
def test_pruned_last_update_time_uses_remembered(remembered: float | None, now: float, reason: str,
                                                 updated_at: float | None) -> None:
    """apps/v1 prunes lastUpdateTime: the remembered last-progress time runs the deadline instead."""
    previous = cond("True", REVISION_UPDATED)
    del previous["lastUpdateTime"]
    progress = plan_progress(previous=previous, old=counts(updated=1), new=counts(updated=1), revision=REV,
                             created=False, held=None, deadline=5, now=now, remembered=remembered)
    assert progress.condition["reason"] == reason
    assert progress.updated_at == updated_at


def test_transition_time_moves_only_when_status_flips() -> None:
    """lastTransitionTime is kept from True to True and moves from True to False."""
    previous = cond("True", FOUND_NEW_REVISION, since=T0 - 100)
    moving = plan_progress(previous=previous, old=counts(updated=0), new=counts(updated=1), revision=REV,
                           created=False, held=None, deadline=5, now=T0 + 1)
    assert moving.condition["lastTransitionTime"] == format_rfc3339(T0 - 100)
    stuck = plan_progress(previous=previous, old=counts(), new=counts(), revision=REV, created=False, held=None,
                          deadline=5, now=T0 + 10)
    assert stuck.condition["lastTransitionTime"] == format_rfc3339(T0 + 10)


def test_with_progress_replaces_in_place_and_keeps_others() -> None:
    """Other conditions (Invalid, ReplicaFailure) stay, in their order; Progressing is replaced."""
    other = {"type": "ReplicaFailure", "status": "True"}
    status = {"numberReady": 1, "conditions": [cond("True", FOUND_NEW_REVISION), other]}
    new = cond("False", PROGRESS_DEADLINE_EXCEEDED)
    result = with_progress(status, new)
    assert result["conditions"] == [new, other]
    assert progressing_condition(result) == new
    assert with_progress({}, new) == {"conditions": [new]}


def _ds(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "agent", "annotations": annotations or {}}, "spec": spec}


@pytest.mark.parametrize(
    ("ds", "deadline", "burst"),
    [
        pytest.param(_ds({}), 600, None, id="defaults"),
        pytest.param(_ds({"progressDeadlineSeconds": 30, "burstReplicas": 5}), 30, 5, id="fields"),
        pytest.param(_ds({}, {"dsctl.io/progress-deadline-seconds": "45", "dsctl.io/burst-replicas": " 7"}), 45, 7,
                     id="annotations"),
        pytest.param(_ds({"progressDeadlineSeconds": 30, "burstReplicas": 2},
                         {"dsctl.io/progress-deadline-seconds": "45", "dsctl.io/burst-replicas": "7"}), 30, 2,
                     id="field-wins"),
    ],
)
def test_spec_limits_read(ds: dict[str, Any], deadline: int, burst: int | None) -> None:
    """Fields first, then dsctl.io/ annotations, then the defaults."""
    assert progress_deadline_seconds(ds) == deadline
    assert burst_replicas(ds) == burst


@pytest.mark.parametrize(
    ("ds", "where"),
    [
        pytest.param(_ds({"burstReplicas": 0}), "spec.burstReplicas", id="zero"),
        pytest.param(_ds({"burstReplicas": True}), "spec.burstReplicas", id="bool"),
        pytest.param(_ds({}, {"dsctl.io/burst-replicas": "-3"}), "metadata.annotations[dsctl.io/burst-replicas]",
                     id="negative-annotation"),
        pytest.param(_ds({}, {"dsctl.io/burst-replicas": "ten"}), "metadata.annotations[dsctl.io/burst-replicas]",
                     id="word"),
    ],
)
def test_bad_burst_is_refused_with_where(ds: dict[str, Any], where: str) -> None:
    """A burst that is not a positive integer raises, naming the field or annotation."""
    with pytest.raises(InvalidControl) as info:
        burst_replicas(ds)
    assert info.value.field == where
    assert effective_burst(ds, global_burst=250) == 250


@pytest.mark.parametrize(
    ("own", "global_burst", "expected"),
    [
        pytest.param(None, 250, 250, id="unset-global"),
        pytest.param(3, 250, 3, id="lower-wins"),
        pytest.param(500, 250, 250, id="never-above-global"),
    ],
)
def test_effective_burst_is_the_minimum(own: int | None, global_burst: int, expected: int) -> None:
    """A DaemonSet's burst can lower the global burst, never raise it."""
    ds = _ds({} if own is None else {"burstReplicas": own})
    assert effective_burst(ds, global_burst=global_burst) == expected


@pytest.mark.parametrize(
    ("ds", "held", "reason", "why"),
    [
        pytest.param(_ds({}, {}), 3, None, None, id="no-control-holds-nothing"),
        pytest.param(_ds({}, {"dsctl.io/partition": "3"}), 3, ROLLOUT_HELD,
                     "is held by partition 3 (dsctl.io/partition): 3 of 50 pods are held on older revisions",
                     id="partition-annotation"),
        pytest.param(_ds({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}}, {}), 3,
                     ROLLOUT_HELD, "is held by partition 3 (spec.updateStrategy.rollingUpdate.partition): 3 of 50 "
                     "pods are held on older revisions", id="partition-field"),
        pytest.param(_ds({}, {"dsctl.io/partition": "3"}), 0, None, None, id="partition-holding-nothing-is-no-hold"),
        pytest.param(_ds({}, {"dsctl.io/selector": "zone in (a,b)"}), 20, ROLLOUT_HELD,
                     'is held by node selector "zone in (a,b)" (dsctl.io/selector): 20 of 50 pods are held on older '
                     "revisions", id="selector"),
        pytest.param(_ds({}, {"dsctl.io/selector": "zone=a", "dsctl.io/partition": "2"}), 22, ROLLOUT_HELD,
                     'is held by partition 2 (dsctl.io/partition) and node selector "zone=a" (dsctl.io/selector): '
                     "22 of 50 pods are held on older revisions", id="partition-and-selector"),
        pytest.param(_ds({}, {"dsctl.io/paused": "true", "dsctl.io/partition": "2"}), 47, DAEMONSET_PAUSED,
                     "is paused by dsctl.io/paused: 47 of 50 pods are held on older revisions", id="paused-wins"),
        pytest.param(_ds({}, {"dsctl.io/paused": "true"}), 0, DAEMONSET_PAUSED, "is paused by dsctl.io/paused",
                     id="paused-with-nothing-left-is-still-paused"),
        pytest.param(_ds({}, {"dsctl.io/partition": "three"}), 0, INVALID_ROLLOUT_CONTROL,
                     "is held until metadata.annotations[dsctl.io/partition] is fixed: must be a non-negative "
                     "integer, not 'three'", id="invalid-control-is-not-paused"),
    ],
)
def test_rollout_hold_names_the_control_where_it_is_set_and_the_count(
        ds: dict[str, Any], held: int, reason: str | None, why: str | None) -> None:
    """A held rollout's reason and words: which control, where it is set, how many pods it holds back."""
    try:
        controls: RolloutControls | InvalidControl = rollout_controls(ds)
    except InvalidControl as exc:
        controls = exc
    hold = rollout_hold(ds, controls, held=held, desired=50)
    assert (hold.reason, hold.why) == (reason, why) if hold is not None else reason is None


def test_a_held_condition_follows_its_message() -> None:
    """While held, a new count rewrites the message (the transition time stays); the same one is kept."""
    first = plan_progress(previous=None, old=counts(), new=counts(updated=1), revision=REV, created=False,
                          held=PARTITION_HOLD, deadline=5, now=T0)
    same = plan_progress(previous=first.condition, old=counts(), new=counts(updated=1), revision=REV,
                         created=False, held=PARTITION_HOLD, deadline=5, now=T0 + 10)
    assert same.condition == first.condition
    fewer = Hold(ROLLOUT_HELD, PARTITION_HOLD.why.replace("3 of 4", "2 of 4"))
    moved = plan_progress(previous=first.condition, old=counts(), new=counts(updated=1), revision=REV,
                          created=False, held=fewer, deadline=5, now=T0 + 10)
    assert moved.condition["message"] == f'Rollout of revision "{REV}" {fewer.why}.'
    assert moved.condition["lastTransitionTime"] == first.condition["lastTransitionTime"]


@pytest.mark.parametrize(
    ("derived", "now", "reason", "updated_at", "requeue"),
    [
        pytest.param(T0, T0 + 3, REVISION_UPDATED, T0, 3.0, id="derived-within-deadline-keeps-its-time"),
        pytest.param(T0, T0 + 9, PROGRESS_DEADLINE_EXCEEDED, T0 + 9, None, id="derived-past-deadline-fires-at-once"),
        pytest.param(T0 + 50, T0 + 3, REVISION_UPDATED, T0 + 3, 6.0, id="derived-in-the-future-is-now"),
        pytest.param(None, T0 + 3, REVISION_UPDATED, T0 + 3, 6.0, id="nothing-datable-starts-now"),
    ],
)
def test_without_memory_the_clock_is_derived(derived: float | None, now: float, reason: str, updated_at: float,
                                            requeue: float | None) -> None:
    """After a restart in apps/v1 mode the last progress comes from the API's objects, not from now."""
    previous = cond("True", REVISION_UPDATED)
    del previous["lastUpdateTime"]
    asked: list[bool] = []

    def since() -> float | None:
        asked.append(True)
        return derived

    progress = plan_progress(previous=previous, old=counts(updated=1), new=counts(updated=1), revision=REV,
                             created=False, held=None, deadline=5, now=now, remembered=None, derived=since)
    assert progress.condition["reason"] == reason
    assert (progress.updated_at, progress.requeue_after) == (updated_at, requeue)
    assert asked == [True]
    remembered = plan_progress(previous=previous, old=counts(updated=1), new=counts(updated=1), revision=REV,
                               created=False, held=None, deadline=5, now=now, remembered=T0, derived=since)
    assert remembered.updated_at is None or remembered.updated_at == now
    assert asked == [True], "a remembered time is used without deriving"


def test_last_progress_reads_what_the_api_keeps() -> None:
    """The newest of: the revision's start, current pods' creation, Ready + minReadySeconds, the transition."""
    old_ready = make_pod("n1", hash="old", ready=True, ready_since=T0 + 10)
    new_pending = make_pod("n2", hash="cur", created=T0 + 20)
    new_ready = make_pod("n3", hash="cur", created=T0 + 5, ready=True, ready_since=T0 + 8)
    assert last_progress([old_ready], hash="cur", generation=None, min_ready=0, started=T0) == T0 + 10
    assert last_progress([old_ready, new_pending], hash="cur", generation=None, min_ready=0, started=T0) == T0 + 20
    assert last_progress([new_ready], hash="cur", generation=None, min_ready=30, started=T0) == T0 + 38
    assert last_progress([], hash="cur", generation=None, min_ready=0, started=T0,
                         condition={"lastTransitionTime": format_rfc3339(T0 + 60)}) == T0 + 60
    assert last_progress([], hash="cur", generation=None, min_ready=0, started=None) is None
    revision: dict[str, Any] = {"metadata": {"creationTimestamp": format_rfc3339(T0)}}
    assert rollout_started(revision) == T0
    revision["metadata"]["annotations"] = {"dsctl.io/current-since": format_rfc3339(T0 + 99)}
    assert rollout_started(revision) == T0 + 99
