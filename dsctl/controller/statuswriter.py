"""The status stage of a sync: counters, conditions, and the one PUT of the status subresource.

A status is written only when it changed. Its conditions come from four places:
``ReplicaFailure`` from the writes that failed in this sync (``WriteSignals``), cleared once a
sync's writes all went through; ``Progressing`` from the rollout (``_progressing``); the node
lifecycle's (``RolloutSkippedNodes``, ``DisruptionBudgetFailure``: set as the plan says,
removed otherwise); and the plan's own condition when the sync could not act (``Invalid``, a
revision out of range).

``dsctl.daemonset.progress`` decides the ``Progressing`` condition purely; the writer passes it
the last progress time it remembers, and the plan's way to derive it from the API's objects
(``StatusPlan.progress_since``), which is what survives a restart, since apps/v1 does not store
``lastUpdateTime``. In apps/v1 mode each condition is sent with the fields
``DaemonSetCondition`` has, and no others (ADR 0185). The writer publishes
``dsctl_daemonset_rollout_stuck`` and the node-lifecycle gauges.

What the status stage remembers about each DaemonSet between syncs is ``StatusMemory``
(per-DaemonSet runtime state, owned by ``dsctl.controller.state.RuntimeState``): what its last
write returned, since right after a status write the informer still holds the previous version
and writing the next status from it would only earn a 409 and a GET (``freshest``); when it
wrote, for the syncer's deferral (``age``); the resourceVersion of that write, so the handlers
skip its echo (``take_echo``); a DaemonSet the API said is gone (``gone_for``); and the last
progress time of each rollout (``progress_at``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from dsctl.daemonset.conditions import set_condition, without_condition
from dsctl.daemonset.extensions import (
    DEFAULT_PROGRESS_DEADLINE_SECONDS,
    InvalidControl,
    progress_deadline_seconds,
)
from dsctl.daemonset.podplan import soonest
from dsctl.daemonset.progress import plan_progress, progressing_condition, with_progress
from dsctl.daemonset.reasons import INVALID, INVALID_ROLLOUT_CONTROL, REPLICA_FAILURE
from dsctl.daemonset.status import Status, availability_requeue, status_changed, status_with
from dsctl.daemonset.syncplan import LIFECYCLE_CONDITIONS, ConditionWrite, StatusPlan
from dsctl.informer import object_key
from dsctl.kube import errors
from dsctl.kube.resources import Resource
from dsctl.tuning import GONE_SECONDS
from dsctl_api.objects import meta as meta_of
from dsctl_api.objects import name, namespace, resource_version
from dsctl_api.objects import status as status_of

from .metrics import DaemonSetGauges
from .recorder import EventRecorder
from .writes import UPDATE_STATUS, Failure, SyncClient, WriteSignals

__all__ = ["StatusMemory", "StatusWriter"]

Obj = Mapping[str, Any]


class StatusMemory:
    """Per DaemonSet key, what the status stage keeps between syncs (see the module docstring).

    All times are on the injected monotonic ``clock``.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        # key -> (resourceVersion replaced by our last write, the object that write returned)
        self._written: dict[str, tuple[str, Obj]] = {}
        self._written_at: dict[str, float] = {}
        # key -> resourceVersion of our last status write whose echo the informer has not shown
        self._echo: dict[str, str] = {}
        # key -> (UID the API said is gone, until when that is believed over the cache)
        self._gone: dict[str, tuple[str, float]] = {}
        # key -> last progress time of its rollout, for apps/v1 where lastUpdateTime is pruned
        self._progress_at: dict[str, float] = {}

    def wrote(self, key: str, *, replaced: str, written: Obj) -> None:
        """A status write for ``key`` replaced version ``replaced`` and returned ``written``."""
        self._written[key] = (replaced, written)
        self._written_at[key] = self._clock()
        rv = resource_version(written)
        if rv:
            self._echo[key] = rv

    def freshest(self, key: str, cached: Obj) -> Obj:
        """The cached DaemonSet, or the one our last status write returned if the cache lags it."""
        entry = self._written.get(key)
        if entry is None:
            return cached
        replaced, written = entry
        if str(meta_of(cached).get("resourceVersion", "")) == replaced:
            return written
        del self._written[key]
        return cached

    def take_echo(self, key: str) -> str | None:
        """The resourceVersion of our last status write for ``key`` not yet seen echoed, once."""
        return self._echo.pop(key, None)

    def age(self, key: str) -> float | None:
        """Seconds since this process last wrote ``key``'s status; None if it never did."""
        at = self._written_at.get(key)
        return None if at is None else self._clock() - at

    def wrote_within(self, key: str, seconds: float) -> bool:
        """Whether this process wrote ``key``'s status less than ``seconds`` ago."""
        age = self.age(key)
        return age is not None and age < seconds

    def note_gone(self, key: str, uid: str) -> None:
        """The API answered that DaemonSet ``uid`` under ``key`` is gone (see ``gone_for``)."""
        self._gone[key] = (uid, self._clock() + GONE_SECONDS)

    def gone_for(self, key: str, uid: str) -> float | None:
        """Seconds for which ``key``'s DaemonSet ``uid`` is still taken as deleted, because
        the API answered 404, or showed another UID, to a status write for it; None if not.

        A cache whose DaemonSet watch is failing (throttled, say) keeps showing a deleted
        DaemonSet; acting on it would create pods the garbage collector removes, sync after
        sync. The memory lasts ``GONE_SECONDS``: the cache normally catches up well before,
        and a 404 no other answer confirms stops a DaemonSet only that long."""
        entry = self._gone.get(key)
        if entry is None:
            return None
        left = entry[1] - self._clock()
        if entry[0] != uid or left <= 0:
            del self._gone[key]
            return None
        return left

    def progress_at(self, key: str) -> float | None:
        """The last progress time remembered for ``key``'s rollout."""
        return self._progress_at.get(key)

    def progressed(self, key: str, at: float) -> None:
        """``key``'s rollout progressed at ``at`` (wall-clock seconds, as the condition's times)."""
        self._progress_at[key] = at

    def forget(self, key: str, uid: str) -> None:
        """Drop everything kept for ``key``."""
        for memory in (self._written, self._written_at, self._echo, self._gone, self._progress_at):
            memory.pop(key, None)

    def holds(self, key: str, uid: str) -> bool:
        """Whether anything is kept for ``key``."""
        return any(key in memory for memory in (self._written, self._written_at, self._echo, self._gone,
                                                 self._progress_at))


class StatusWriter:
    """One per controller; every status write of a sync goes through it."""

    def __init__(
        self, *, client: SyncClient, resource: Resource, signals: WriteSignals, memory: StatusMemory,
        gauges: DaemonSetGauges, recorder: EventRecorder, wall: Callable[[], float],
    ) -> None:
        self._client = client
        self._resource = resource
        self._signals = signals
        self.memory = memory
        self._gauges = gauges
        self._recorder = recorder
        self._wall = wall

    def _deadline(self, ds: Obj) -> int:
        """The DaemonSet's progressDeadlineSeconds; an unreadable one falls back to the default."""
        try:
            return progress_deadline_seconds(ds)
        except InvalidControl as exc:
            self._recorder.record(ds, "Warning", INVALID_ROLLOUT_CONTROL,
                                  f"{exc.field}: {exc.message}; {DEFAULT_PROGRESS_DEADLINE_SECONDS} s applies")
            return DEFAULT_PROGRESS_DEADLINE_SECONDS

    def _progressing(self, ds: Obj, old: Mapping[str, Any], plan: StatusPlan, hash_: str, *,
                     now: float) -> tuple[dict[str, Any], float | None]:
        """``old`` with its Progressing condition brought up to date, and when to look again."""
        key = f"{namespace(ds)}/{name(ds)}"
        progress = plan_progress(previous=progressing_condition(old), old=Status.from_fields(old), new=plan.counters,
                                 revision=f"{name(ds)}-{hash_}", created=plan.created_revision, held=plan.hold,
                                 deadline=self._deadline(ds), now=now, remembered=self.memory.progress_at(key),
                                 derived=plan.progress_since)
        if progress.updated_at is not None:
            self.memory.progressed(key, progress.updated_at)
        self._gauges.observe_stuck(key, stuck=progress.stuck)
        return with_progress(old, progress.condition), progress.requeue_after

    async def write(self, ds: Obj, plan: StatusPlan, hash_: str, *, writes_ok: bool) -> float | None:
        """Write the counters of ``plan`` if anything changed; returns a requeue for
        minReadySeconds or the progress deadline, if any.

        A write that failed in this sync sets ``ReplicaFailure``; ``writes_ok`` (every write the
        sync needed went through) clears it; otherwise it is left as it was.
        """
        key = object_key(ds)
        meta = meta_of(ds)
        generation = int(meta.get("generation") or 0)
        now = self._wall()
        status = plan.counters
        self._gauges.observe_status(key, status)
        failure = self._signals.take(key)

        self._gauges.observe_lifecycle(key, skipped=plan.skipped, held_departing=plan.held_departing)

        def conditions(current: Mapping[str, Any] | None) -> tuple[dict[str, Any], float | None]:
            kept = _with_failure(without_condition(current, INVALID), failure, clear=writes_ok, now=now)
            kept = _with_lifecycle(kept, plan.conditions, now=now)
            result, requeue = self._progressing(ds, kept, plan, hash_, now=now)
            return (self._declared(result), requeue)

        old = status_of(ds)
        base, deadline_requeue = conditions(old)
        observed = generation if plan.observed else None
        if status_changed(old, status, generation=generation if plan.observed else 0) or base != old:
            try:
                await self.put(ds, status_with(base, status, observed_generation=observed), expected=(errors.Conflict,))
            except errors.Conflict:
                live = await self._get_same(ds)
                live_base, _ = conditions(live.get("status"))
                await self.put(live, status_with(live_base, status, observed_generation=observed))
        return soonest(availability_requeue(ds, status), deadline_requeue)

    def _declared(self, status: dict[str, Any]) -> dict[str, Any]:
        """``status`` with only the condition fields the resource's schema declares: apps/v1's
        ``DaemonSetCondition`` has no ``lastUpdateTime``, and a field it lacks is pruned by
        kube-apiserver with a warning on every write."""
        if self._resource.group != "apps":
            return status
        conditions = status.get("conditions")
        if not isinstance(conditions, list) or not any(
                isinstance(c, Mapping) and _UNDECLARED in c for c in conditions):
            return status
        return {**status, "conditions": [{k: v for k, v in c.items() if k != _UNDECLARED}
                                         if isinstance(c, Mapping) else c for c in conditions]}

    async def write_condition(self, ds: Obj, condition: ConditionWrite) -> None:
        """Set one condition, the counters untouched (a sync that could not act)."""
        old = status_of(ds)
        wanted = set_condition(old, condition.type, reason=condition.reason, message=condition.message,
                               now=self._wall())
        if wanted != old:
            await self.put(ds, wanted)

    async def write_failure(self, ds: Obj) -> None:
        """After a write failed before the status stage (ownership, history): set
        ``ReplicaFailure`` alone, so the stall shows in ``kubectl describe`` even though no
        counters were written. A failure of this write is signalled and otherwise ignored."""
        failure = self._signals.take(object_key(ds))
        if failure is None:
            return
        old = status_of(ds)
        wanted = _with_failure(old, failure, clear=False, now=self._wall())
        if wanted != old:
            try:
                await self.put(ds, wanted, expected=(errors.Conflict,))
            except errors.ApiError:
                return

    async def _get_same(self, ds: Obj) -> Obj:
        """The live DaemonSet after a conflict; NotFound (and remembered as gone) if the name
        now holds another object: its status is not ours to write."""
        meta = meta_of(ds)
        try:
            live = await self._client.get(self._resource, meta["name"], namespace=meta.get("namespace"))
        except errors.NotFound:
            self._note_gone(ds)
            raise
        if meta_of(live).get("uid") != meta.get("uid"):
            self._note_gone(ds)
            raise errors.NotFound(404, "NotFound", f"DaemonSet {meta['name']} was replaced (uid changed)")
        return live

    def _note_gone(self, ds: Obj) -> None:
        self.memory.note_gone(object_key(ds), str(meta_of(ds).get("uid", "")))

    async def put(self, ds: Obj, status: Mapping[str, Any], *,
                  expected: tuple[type[errors.ApiError], ...] = ()) -> None:
        """PUT the status subresource and remember the result (see ``StatusMemory.freshest``).

        A failure is signalled (event, metric, log) unless it is one of ``expected``; a 404
        also marks the DaemonSet gone (see ``StatusMemory.gone_for``)."""
        meta = meta_of(ds)
        try:
            async with self._signals.guard(ds, UPDATE_STATUS, name=str(meta["name"]), expected=expected):
                written = await self._client.update_status(self._resource, {**ds, "status": status},
                                                           namespace=meta.get("namespace"))
        except errors.NotFound:
            self._note_gone(ds)
            raise
        self.memory.wrote(object_key(ds), replaced=str(meta.get("resourceVersion", "")), written=written)


_UNDECLARED = "lastUpdateTime"


def _with_lifecycle(status: Mapping[str, Any] | None, wanted: tuple[ConditionWrite, ...], *,
                    now: float) -> dict[str, Any]:
    """``status`` with each ``LIFECYCLE_CONDITIONS`` type set as ``wanted`` says, or removed."""
    result = dict(status or {})
    by_type = {c.type: c for c in wanted}
    for cond_type in LIFECYCLE_CONDITIONS:
        write = by_type.get(cond_type)
        if write is None:
            if any(isinstance(c, Mapping) and c.get("type") == cond_type for c in result.get("conditions") or ()):
                result = without_condition(result, cond_type)
        else:
            result = set_condition(result, cond_type, reason=write.reason, message=write.message, now=now)
    return result


def _with_failure(status: Mapping[str, Any] | None, failure: Failure | None, *, clear: bool,
                  now: float) -> dict[str, Any]:
    """``status`` with ``ReplicaFailure`` set for ``failure``, removed when ``clear``, else as is."""
    if failure is not None:
        return set_condition(status, REPLICA_FAILURE, reason=failure.reason, message=failure.message, now=now)
    if clear:
        return without_condition(status, REPLICA_FAILURE)
    return dict(status or {})
