"""The ``Progressing`` condition: is the rollout moving, done, or stuck past its deadline?

Mirrors the Deployment controller's ``progress.go`` for a DaemonSet, where "the new replica
set" is the current revision ``<ds>-<hash>`` (every message names it in quotes, which is how
a later sync tells whether the condition speaks of the current rollout):

- **complete**: ``updatedNumberScheduled == numberAvailable == desiredNumberScheduled``:
  ``True / NewRevisionAvailable`` (Deployment's ``NewReplicaSetAvailable``).
- **started**: no condition yet, one naming another revision, or one that was ``Unknown``
  (paused or held): ``True / NewRevisionCreated`` when this sync created the revision, else
  ``True / FoundNewRevision`` (``NewReplicaSetCreated`` / ``FoundNewReplicaSet``). The clock
  starts there.
- **progress**: ``updatedNumberScheduled`` or ``numberAvailable`` is higher than in the status
  last written: ``True / RevisionUpdated`` (``ReplicaSetUpdated``), with ``lastUpdateTime``
  moved to now. Only these two counters count: a pod that merely starts (Pending to Running)
  or a deletion is not progress, and a counter that falls and climbs back is progress again,
  as it is for Deployment's available replicas.
- **stuck**: still ``True`` and ``lastUpdateTime + progressDeadlineSeconds < now``:
  ``False / ProgressDeadlineExceeded``. It stays so until progress or completion.
- **held** (``rollout_hold``) by ``paused`` (``Unknown / DaemonSetPaused``, Deployment's
  ``DeploymentPaused``), by a ``partition`` or node ``selector`` that keeps old pods back
  (``Unknown / RolloutHeld``), or by a control that cannot be read (``Unknown /
  InvalidRolloutControl``): such a rollout stops on purpose, so no deadline runs, and the
  message names the control, where it is set and how many pods it holds back (ADR 0090).
  Lifting the hold restarts the clock.

``lastTransitionTime`` changes only when ``status`` flips; ``lastUpdateTime`` is the time of the
last progress (or of the last change of condition), as Deployment records it. apps/v1's
``DaemonSetCondition`` has no ``lastUpdateTime`` (kube-apiserver prunes it and warns), so in
apps/v1 mode the condition is written without it, and the clock is read from what the API
keeps (``last_progress``, ADR 0185): the newest of the current revision's start (its
``dsctl.io/current-since`` annotation, else its creation), the creation of each pod of the
current revision, the moment each Ready pod became available, and the condition's own
``lastTransitionTime``. Every progress the counters can show is one of those moments, so a
restarted controller, or a new leader, finds the deadline where the old one left it. Between
syncs the caller remembers the time it saw progress (``Progress.updated_at``) and passes it back
as ``remembered``; only without it is ``derived`` consulted. The CRD schema keeps
``lastUpdateTime``, which is read first. The caller
requeues at ``requeue_after`` so that a stuck rollout is found within one second of its
deadline even when no event arrives; its timestamps have second precision, hence the second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dsctl.daemonset.conditions import without_condition
from dsctl.daemonset.extensions import (
    PARTITION_FIELD,
    PAUSED_FIELD,
    SELECTOR_FIELD,
    InvalidControl,
    RolloutControls,
    set_at,
)
from dsctl.daemonset.history import CURRENT_SINCE_ANNOTATION
from dsctl.daemonset.reasons import (
    DAEMONSET_PAUSED,
    FOUND_NEW_REVISION,
    INVALID_ROLLOUT_CONTROL,
    NEW_REVISION_AVAILABLE,
    NEW_REVISION_CREATED,
    PROGRESS_DEADLINE_EXCEEDED,
    PROGRESSING,
    REVISION_UPDATED,
    ROLLOUT_HELD,
)
from dsctl.daemonset.status import Status
from dsctl.daemonset.template import is_pod_updated
from dsctl_api.objects import annotations_of, as_list, as_map, deletion_timestamp, meta, text
from dsctl_api.pods import pod_ready_condition
from dsctl_api.timefmt import format_rfc3339, parse_rfc3339

__all__ = [
    "Hold",
    "Progress",
    "is_stuck",
    "last_progress",
    "plan_progress",
    "progressing_condition",
    "rollout_hold",
    "rollout_started",
    "with_progress",
]




Condition = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Progress:
    """The ``Progressing`` condition to write and when to look again."""

    condition: Condition
    requeue_after: float | None = None
    """Seconds until the deadline can pass (plus one); None when no deadline is running."""
    updated_at: float | None = None
    """The new last-progress time to remember, when it moved; None keeps the remembered one."""

    @property
    def stuck(self) -> bool:
        """Whether the condition says ``ProgressDeadlineExceeded``."""
        return is_stuck(self.condition)


@dataclass(frozen=True, slots=True)
class Hold:
    """What holds a rollout back on purpose: the condition's reason, and the message's words
    after ``Rollout of revision "<name>"``."""

    reason: str
    why: str


def rollout_hold(ds: Mapping[str, Any], controls: RolloutControls | InvalidControl, *, held: int,
                 desired: int) -> Hold | None:
    """The hold ``controls`` put on ``ds``'s rollout, or None when they hold nothing back.

    ``held`` is how many nodes keep an old pod because of the controls (``update.held_nodes``),
    ``desired`` the nodes that should run the pod. A pause holds even when no old pod is left;
    a partition or selector only while it keeps some back. An unreadable control holds the
    whole rollout until it is fixed.
    """
    if isinstance(controls, InvalidControl):
        return Hold(INVALID_ROLLOUT_CONTROL, f"is held until {controls.field} is fixed: {controls.message}")
    if not controls.holds_back:
        return None
    count = f": {held} of {desired} pods are held on older revisions" if held else ""
    if controls.paused:
        return Hold(DAEMONSET_PAUSED, f"is paused by {set_at(ds, PAUSED_FIELD)}{count}")
    if not held:
        return None
    by = []
    if controls.partition:
        by.append(f"partition {controls.partition} ({set_at(ds, PARTITION_FIELD)})")
    if controls.selector is not None:
        by.append(f'node selector "{controls.selector}" ({set_at(ds, SELECTOR_FIELD)})')
    return Hold(ROLLOUT_HELD, f"is held by {' and '.join(by)}{count}")


def is_stuck(condition: Mapping[str, Any] | None) -> bool:
    """Whether ``condition`` is ``Progressing False / ProgressDeadlineExceeded``."""
    cond = as_map(condition)
    return cond.get("status") == "False" and cond.get("reason") == PROGRESS_DEADLINE_EXCEEDED


def progressing_condition(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The ``Progressing`` condition of a status, if any."""
    for condition in as_list(as_map(status).get("conditions")):
        if as_map(condition).get("type") == PROGRESSING:
            return as_map(condition)
    return None


def _condition(status: str, reason: str, message: str, *, now: float,
               previous: Mapping[str, Any] | None) -> Condition:
    stamp = format_rfc3339(now)
    transition = stamp
    if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
        transition = str(previous["lastTransitionTime"])
    return {"type": PROGRESSING, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": transition,
            "reason": reason, "message": message}


def _same(previous: Mapping[str, Any] | None, status: str, reason: str, quoted: str) -> bool:
    return (previous is not None and previous.get("status") == status and previous.get("reason") == reason
            and quoted in text(previous.get("message")))


def _last_update(previous: Mapping[str, Any], remembered: float | None) -> float | None:
    try:
        return parse_rfc3339(text(previous.get("lastUpdateTime")))
    except ValueError:
        return remembered


def _stamp(value: Any) -> float | None:
    try:
        return parse_rfc3339(text(value)) if value else None
    except (ValueError, OverflowError):
        return None


def rollout_started(revision: Mapping[str, Any] | None) -> float | None:
    """When ``revision`` became current: its ``CURRENT_SINCE_ANNOTATION``, else its creation;
    None for a revision not yet created (it becomes current now)."""
    if revision is None:
        return None
    return _stamp(annotations_of(revision).get(CURRENT_SINCE_ANNOTATION)) or _stamp(
        meta(revision).get("creationTimestamp"))


def last_progress(pods: Iterable[Mapping[str, Any]], *, hash: str, generation: int | None, min_ready: int,
                  started: float | None, condition: Mapping[str, Any] | None = None) -> float | None:
    """The newest moment the rollout can have progressed, from what the API keeps (see the
    module docstring); None when nothing can be dated."""
    newest = started
    transition = _stamp(as_map(condition).get("lastTransitionTime"))
    if transition is not None and (newest is None or transition > newest):
        newest = transition
    for pod in pods:
        if deletion_timestamp(pod):
            continue
        moments: list[float | None] = []
        if is_pod_updated(pod, hash, generation):
            moments.append(_stamp(meta(pod).get("creationTimestamp")))
        ready = pod_ready_condition(pod)
        if ready is not None and ready.get("status") == "True":
            since = _stamp(ready.get("lastTransitionTime"))
            moments.append(None if since is None else since + min_ready)
        for moment in moments:
            if moment is not None and (newest is None or moment > newest):
                newest = moment
    return newest


def plan_progress(
    *,
    previous: Mapping[str, Any] | None,
    old: Status,
    new: Status,
    revision: str,
    created: bool,
    held: Hold | None,
    deadline: int,
    now: float,
    remembered: float | None = None,
    derived: Callable[[], float | None] | None = None,
) -> Progress:
    """The ``Progressing`` condition after a sync (see the module docstring for each case).

    ``previous`` is the condition in the status last written and ``old`` its counters; ``new``
    are the counters this sync computed. ``created``: this sync created the revision.
    ``held``: what holds the rollout back on purpose (``rollout_hold``), or None. ``remembered``: the
    ``updated_at`` of an earlier result for this rollout, used where ``lastUpdateTime`` was pruned.
    ``derived``: the last progress as the API's objects show it (``last_progress``), asked for
    only when neither is there (a restart, a new leader).
    """
    quoted = f'"{revision}"'
    complete = new.updated_number_scheduled == new.desired_number_scheduled == new.number_available
    if complete:
        if _same(previous, "True", NEW_REVISION_AVAILABLE, quoted):
            assert previous is not None
            return Progress(dict(previous))
        return Progress(_condition("True", NEW_REVISION_AVAILABLE, f"Revision {quoted} has successfully progressed.",
                                   now=now, previous=previous))
    if held is not None:
        message = f"Rollout of revision {quoted} {held.why}."
        if _same(previous, "Unknown", held.reason, quoted) and previous is not None \
                and previous.get("message") == message:
            return Progress(dict(previous))
        return Progress(_condition("Unknown", held.reason, message, now=now, previous=previous))
    if previous is None or quoted not in text(previous.get("message")) or previous.get("status") == "Unknown":
        reason = NEW_REVISION_CREATED if created else FOUND_NEW_REVISION
        message = f"Created new revision {quoted}" if created else f"Found new revision {quoted}"
        return Progress(_condition("True", reason, message, now=now, previous=previous),
                        requeue_after=float(deadline) + 1.0, updated_at=now)
    progressed = (new.updated_number_scheduled > old.updated_number_scheduled
                  or new.number_available > old.number_available)
    if progressed:
        return Progress(_condition("True", REVISION_UPDATED, f"Revision {quoted} is progressing.",
                                   now=now, previous=previous), requeue_after=float(deadline) + 1.0, updated_at=now)
    if is_stuck(previous):
        return Progress(dict(previous))
    since = _last_update(previous, remembered)
    if since is None and derived is not None:
        since = derived()
        if since is not None:
            since = min(since, now)
            if since + deadline >= now:
                return Progress(dict(previous), requeue_after=max(0.0, since + deadline - now) + 1.0,
                                updated_at=since)
    if since is None:
        # Nothing dates the last progress: start the clock now (reported late, never early).
        return Progress(dict(previous), requeue_after=float(deadline) + 1.0, updated_at=now)
    if since + deadline < now:
        return Progress(_condition("False", PROGRESS_DEADLINE_EXCEEDED, f"Revision {quoted} has timed out progressing.",
                                   now=now, previous=previous), updated_at=now)
    return Progress(dict(previous), requeue_after=max(0.0, since + deadline - now) + 1.0)


def with_progress(status: Mapping[str, Any] | None, condition: Condition) -> dict[str, Any]:
    """``status`` with its ``Progressing`` condition replaced, in place in the list order."""
    conditions = as_list(as_map(status).get("conditions"))
    for index, existing in enumerate(conditions):
        if as_map(existing).get("type") == PROGRESSING:
            result = dict(as_map(status))
            result["conditions"] = [*conditions[:index], condition, *conditions[index + 1:]]
            return result
    result = without_condition(status, PROGRESSING)
    result["conditions"] = [*as_list(result.get("conditions")), condition]
    return result
