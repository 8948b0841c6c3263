"""Carries out one ``SyncPlan``: the only place a sync's decisions become API calls.

``run`` is the order of a sync, written once (``dsctl.daemonset.syncplan`` decides, in the
same order, what each stage holds):

1. events the planner produced for the DaemonSet;
2. a condition alone when the sync cannot act (``Invalid``, revision out of range), then stop;
3. ownership: a live read of the DaemonSet before any adoption, then the adopt and release
   patches;
4. history: revision label and number fixes, pod relabels, duplicate deletes, the create of
   the current revision (a name collision is resolved by ``history.resolve_create_conflict``);
5. status only, when the plan says so (expectations pending, pods relabelled), then stop;
6. the PodDisruptionBudget (``maxDisruptions``): before the pods, so a budget tightened for
   this sync's surge pods is in place before they exist; a refused write is signalled and the
   pods still go out (the agents matter more than the budget), and the key is retried;
7. pods: backoff steps, creates and deletes (``PodWriter``), in-place patches;
8. history cleanup, only when every pod write went through;
9. status (``StatusWriter``), and the outcome with its requeue; left to the next sync when
   this one only created pods, since observing them syncs again (``_status_follows``).

A failed stage in 3–4 stops the sync: ``ReplicaFailure`` is set and the key retried. A failed
pod write skips cleanup, and the status stage still runs to report it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from dsctl.daemonset import history as hist
from dsctl.daemonset.podplan import soonest
from dsctl.daemonset.syncplan import OwnershipWrite, SyncPlan
from dsctl.kube import errors
from dsctl.kube.resources import CONTROLLER_REVISIONS, POD_DISRUPTION_BUDGETS, PODS, Resource
from dsctl.tuning import STATUS_REFRESH_SECONDS
from dsctl_api import gojson
from dsctl_api.objects import meta
from dsctl_api.objects import name as name_of
from dsctl_api.objects import status as status_of

from .backoffstate import FailedPodBackoff
from .expectations import PendingPatches
from .podwrites import PodWriter, patch_in_place
from .recorder import EventRecorder
from .statuswriter import StatusWriter
from .workers import Done, Outcome, Retry, Terminal
from .writes import (
    CREATE_BUDGET,
    CREATE_REVISION,
    DELETE_BUDGET,
    DELETE_REVISION,
    PATCH_BUDGET,
    PATCH_POD,
    PATCH_REVISION,
    UPDATE_REVISION,
    SyncClient,
    WriteSignals,
)

__all__ = ["SyncExecutor", "SyncReport"]

log = structlog.get_logger(__name__)

Obj = Mapping[str, Any]


@dataclass(slots=True)
class SyncReport:
    """What one run did, for the sync log line."""

    created: int = 0
    deleted: int = 0
    patched: int = 0
    errors: int = 0


def _status_follows(plan: SyncPlan, report: SyncReport, *, written_recently: bool) -> bool:
    """Whether the next sync is sure to write this one's status, with more in it.

    Each pod created here comes back as an ADDED event, and observing it syncs the DaemonSet
    again; that sync counts the new pods as well. So a sync that only created pods, and created
    no revision (whose news the Progressing condition carries once), leaves the status to it
    when it created all its plan held, or when the status was written less than
    ``STATUS_REFRESH_SECONDS`` ago: a long run of creating syncs cut short by the burst cap
    still reports as it goes, about once a second. A node join then costs each DaemonSet one
    status write instead of two, and its creating sync one round trip instead of two.
    """
    assert plan.status is not None
    if not report.created or report.deleted or report.patched or plan.status.created_revision:
        return False
    return report.created == len(plan.pods.creates) or written_recently


class _Stop(Exception):
    """A stage failed or ended the sync; ``outcome`` says how."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(str(outcome))
        self.outcome = outcome


@dataclass
class SyncExecutor:
    """Runs plans for one controller; holds no state of its own beyond its collaborators."""

    client: SyncClient
    resource: Resource
    recorder: EventRecorder
    signals: WriteSignals
    pods: PodWriter
    status: StatusWriter
    backoff: FailedPodBackoff
    pending_patches: PendingPatches
    wall: Callable[[], float]

    async def run(self, key: str, plan: SyncPlan, report: SyncReport | None = None) -> Outcome:
        """Carry out ``plan`` for the DaemonSet cached under ``key``; see the module docstring."""
        report = report if report is not None else SyncReport()
        ds = plan.ds
        for event in plan.events:
            self.recorder.record(ds, event.type, event.reason, event.message)
        if not plan.act:
            return await self._without_acting(ds, plan)
        history = plan.history
        assert history is not None and plan.status is not None
        try:
            await self._ownership(ds, plan)
            await self._history(ds, history)
        except _Stop as stop:
            return stop.outcome
        except errors.ApiError as exc:
            await self.status.write_failure(ds)
            return Retry(f"claim/history: {exc}")
        if plan.status_only:
            try:
                await self.status.write(ds, plan.status, history.hash, writes_ok=False)
            except errors.ApiError as exc:
                return Retry(f"status: {exc}")
            return Done(requeue_after=0.0 if plan.requeue_now else None)

        budget_failure = await self._budget(ds, plan)
        failures = await self._pods(key, ds, plan, report)
        if not failures:
            failures.extend(await self._cleanup(ds, plan))
        if budget_failure:
            failures.append(budget_failure)
        recent = self.status.memory.wrote_within(key, STATUS_REFRESH_SECONDS)
        # The pod plan's own requeue too: a caller may narrow ``plan.pods`` after planning (the
        # syncer holds creates back on a new node), and its recheck must not be lost.
        requeue = soonest(plan.requeue_after, plan.pods.requeue_after)
        if not failures and _status_follows(plan, report, written_recently=recent):
            return Done(requeue_after=requeue)
        try:
            status_requeue = await self.status.write(ds, plan.status, history.hash, writes_ok=not failures)
        except errors.ApiError as exc:
            failures.append(f"status: {exc}")
            status_requeue = None
        report.errors = len(failures)
        if failures:
            return Retry("; ".join(failures[:3]))
        return Done(requeue_after=soonest(requeue, status_requeue))

    # -- stages -------------------------------------------------------------------------------

    async def _without_acting(self, ds: Obj, plan: SyncPlan) -> Outcome:
        if plan.condition is not None:
            try:
                await self.status.write_condition(ds, plan.condition)
            except errors.ApiError as exc:
                return Retry(f"status condition: {exc}")
            log.warning("daemonset_not_reconciled", daemonset=meta(ds).get("name"), reason=plan.condition.reason,
                        message=plan.condition.message)
        return Terminal(plan.terminal) if plan.terminal is not None else Done()

    async def _ownership(self, ds: Obj, plan: SyncPlan) -> None:
        if plan.recheck_owner:
            await self._recheck_owner(ds)
        for write in plan.ownership:
            await self._own(ds, write)

    async def _recheck_owner(self, ds: Obj) -> None:
        """Live read before adopting: never adopt for a DaemonSet that was replaced or is going."""
        ds_meta = meta(ds)
        live = await self.client.get(self.resource, ds_meta["name"], namespace=ds_meta.get("namespace"))
        live_meta = meta(live)
        if live_meta.get("uid") != ds_meta.get("uid"):
            raise errors.Conflict(409, "Conflict", f"original DaemonSet {ds_meta['name']} is gone: uid changed")
        if live_meta.get("deletionTimestamp"):
            raise errors.Conflict(409, "Conflict", f"DaemonSet {ds_meta['name']} is being deleted")

    async def _own(self, ds: Obj, write: OwnershipWrite) -> None:
        """One adopt or release. A refused one (404, 409, 422) is signalled but does not stop
        the sync: the object stays as it is, and the rest of the DaemonSet is reconciled."""
        resource = PODS if write.kind == "pods" else CONTROLLER_REVISIONS
        verb = PATCH_POD if write.kind == "pods" else PATCH_REVISION
        try:
            async with self.signals.guard(ds, verb, name=write.name, expected=(errors.NotFound, errors.Conflict)):
                await self.client.patch(resource, write.name, write.patch, namespace=write.namespace,
                                        patch_type="strategic")
        except (errors.NotFound, errors.Invalid, errors.Conflict):
            return

    async def _history(self, ds: Obj, plan: hist.HistoryPlan) -> None:
        namespace = meta(ds).get("namespace", "")
        guard = self.signals.guard
        for update in plan.updates:
            async with guard(ds, UPDATE_REVISION, name=name_of(update)):
                await self._update_revision(update, namespace=namespace)
        for relabel in plan.pod_patches:
            try:
                async with guard(ds, PATCH_POD, name=relabel.pod.name, expected=(errors.NotFound,)):
                    await self.client.patch(PODS, relabel.pod.name, relabel.patch, namespace=relabel.pod.namespace)
            except errors.NotFound:
                continue
        for name in plan.deletes:
            try:
                async with guard(ds, DELETE_REVISION, name=name, expected=(errors.NotFound,)):
                    await self.client.delete(CONTROLLER_REVISIONS, name, namespace=namespace)
            except errors.NotFound:
                continue
        if plan.create is not None:
            try:
                async with guard(ds, CREATE_REVISION, name=name_of(plan.create),
                                 expected=(errors.AlreadyExists,)):
                    await self.client.create(CONTROLLER_REVISIONS, hist.wire_body(plan.create, new=True),
                                             namespace=namespace)
            except errors.AlreadyExists:
                await self._resolve_collision(ds, plan)

    async def _update_revision(self, revision: Obj, *, namespace: str) -> None:
        """PUT a revision with ``data`` in the bytes the server stored (see ``hist.wire_body``).

        A revision that a dsctl release before Go-compatible encoding created holds ``<>&``
        unescaped; the server refuses Go's bytes for it as a change of ``data``, and gets the
        old encoding instead. Anything else that is refused stays an error.
        """
        try:
            await self.client.update(CONTROLLER_REVISIONS, hist.wire_body(revision, new=False), namespace=namespace)
        except errors.Invalid:
            if not gojson.html_escape_changes(revision.get("data")):
                raise
            log.info("revision_written_unescaped", revision=meta(revision).get("name"))
            await self.client.update(CONTROLLER_REVISIONS, hist.wire_body(revision, new=False, escape=False),
                                     namespace=namespace)

    async def _resolve_collision(self, ds: Obj, plan: hist.HistoryPlan) -> None:
        """The current revision's name is taken: reuse it, or bump ``collisionCount``; either
        way a bump or a mismatch ends this sync (``_Stop``)."""
        ds_meta = meta(ds)
        namespace = ds_meta.get("namespace", "")
        assert plan.create is not None
        existing = await self.client.get(CONTROLLER_REVISIONS, name_of(plan.create), namespace=namespace)
        live = None
        if not hist.revision_data_equal(ds, existing):
            live = await self.client.get(self.resource, ds_meta["name"], namespace=namespace)
        decision = hist.resolve_create_conflict(ds=ds, existing=existing, live_ds=live)
        if decision.action == "reuse":
            return
        if decision.action == "bump" and live is not None:
            await self.status.put(live, {**status_of(live), "collisionCount": decision.collision_count})
            log.info("revision_collision", daemonset=ds_meta["name"], collision_count=decision.collision_count)
        raise _Stop(Retry(decision.message))

    async def _pods(self, key: str, ds: Obj, plan: SyncPlan, report: SyncReport) -> list[str]:
        history = plan.history
        assert history is not None
        now = self.wall()
        for step in plan.pods.backoff_steps:
            self.backoff.next(step, now=now)
        result = await self.pods.execute(key=key, ds=ds, plan=plan.pods, hash_=history.hash, burst=plan.burst)
        report.created, report.deleted = result.created, result.deleted
        failures = list(result.errors)
        if plan.pods.updates:
            report.patched, patch_failures = await patch_in_place(self.pods, key=key, ds=ds, updates=plan.pods.updates,
                                                                  pending=self.pending_patches)
            failures.extend(patch_failures)
        return failures

    async def _budget(self, ds: Obj, plan: SyncPlan) -> str | None:
        """The budget write, if any; returns the error (signalled already). A 404 or 409 means
        the cache was behind (the object went, or was replaced): the next sync sees it."""
        write = plan.budget
        if write is None:
            return None
        kind = {"create": CREATE_BUDGET, "patch": PATCH_BUDGET, "delete": DELETE_BUDGET}[write.verb]
        quiet = (errors.NotFound, errors.Conflict, errors.AlreadyExists)
        try:
            async with self.signals.guard(ds, kind, name=write.name, expected=quiet):
                if write.verb == "create":
                    await self.client.create(POD_DISRUPTION_BUDGETS, write.body, namespace=write.namespace)
                elif write.verb == "patch":
                    await self.client.patch(POD_DISRUPTION_BUDGETS, write.name, write.body, namespace=write.namespace,
                                            patch_type="json")
                else:
                    await self.client.delete(POD_DISRUPTION_BUDGETS, write.name, namespace=write.namespace,
                                             preconditions_uid=write.uid)
        except (errors.NotFound, errors.Conflict, errors.AlreadyExists) as exc:
            log.info("budget_write_outdated", daemonset=meta(ds).get("name"), verb=write.verb, reason=exc.reason)
            return None
        except errors.ApiError as exc:
            return f"{write.verb} poddisruptionbudget {write.name}: {exc}"
        log.info("budget_written", daemonset=meta(ds).get("name"), verb=write.verb,
                 min_available=write.min_available)
        return None

    async def _cleanup(self, ds: Obj, plan: SyncPlan) -> list[str]:
        """Delete old revisions beyond the history limit; returns the errors (signalled already)."""
        namespace = meta(ds).get("namespace", "")
        failed: list[str] = []
        for name in plan.cleanup:
            try:
                async with self.signals.guard(ds, DELETE_REVISION, name=name, expected=(errors.NotFound,)):
                    await self.client.delete(CONTROLLER_REVISIONS, name, namespace=namespace)
            except errors.NotFound:
                continue
            except errors.ApiError as exc:
                failed.append(f"delete revision {name}: {exc}")
        return failed
