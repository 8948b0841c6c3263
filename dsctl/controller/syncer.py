"""The reconciler: ``sync(key)`` reads one snapshot, plans it, and hands the plan to the executor.

Built from read-only listers, a narrow client (through the executor), clocks, and the runtime
state that outlives one sync (``state.RuntimeState``), which every sync first tells what the
cache holds for its key (``RuntimeState.observe``): that is where the state of a deleted or
re-created DaemonSet is forgotten. It owns no task and starts nothing; ``DaemonSetController``
wires it to informers, handlers, queue and workers, as controller-runtime separates a
``Reconciler`` from its ``Controller``.

The one order of a sync is ``syncplan.plan_sync`` (deciding) followed by ``SyncExecutor.run``
(doing). This module only builds the snapshot, keeps the tables (``PlanMemory``), and every
``recount_seconds`` plans a DaemonSet both ways to prove the incremental table right.

One departure from upstream, which syncs on every wake-up: while a DaemonSet's own creates or
deletes are still on their way back (expectations unsatisfied), its spec is the one last
planned, and its status was written less than ``DEFERRED_STATUS_SECONDS`` ago, a sync is put
off until the status is due (``Deferred``). Such a sync could only write status, and the event that
satisfies the expectations syncs again anyway; in a cold start it would run between every two
creating syncs, on the critical path (ADR 0062). A run of syncs cut short by the burst
cap writes its status every ``STATUS_REFRESH_SECONDS`` itself, after its creates (``executor``),
so the longer bound here only serves a run that stalls; a sync that created all it planned
leaves the status to the sync its ADDED events bring. The changes noted meanwhile stay in
the ``ChangeLog`` for the sync that plans them. A DaemonSet the API answered 404 for, while the
cache still holds it, is put off the same way (``StatusMemory.gone_for``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import structlog

from dsctl.daemonset.podplan import soonest
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.informer import ReadOnlyStore
from dsctl.kube.resources import Resource
from dsctl.tuning import DEFERRED_STATUS_SECONDS, RECOUNT_SECONDS
from dsctl_api.objects import generation as generation_of
from dsctl_api.objects import uid as uid_of

from .cacheview import CacheView
from .executor import SyncExecutor, SyncReport
from .metrics import PlanMetrics
from .state import RuntimeState
from .workers import Deferred, Done, Outcome

__all__ = ["Syncer"]

log = structlog.get_logger(__name__)

Obj = Mapping[str, Any]

class Syncer:
    """``sync(key)`` for one controller; one call at a time per key (the queue's guarantee)."""

    def __init__(
        self,
        *,
        resource: Resource,
        daemonsets: ReadOnlyStore,
        view: CacheView,
        pods: ReadOnlyStore,
        state: RuntimeState,
        budgets: ReadOnlyStore | None = None,
        executor: SyncExecutor,
        metrics: PlanMetrics,
        global_burst: int,
        priority_of: Callable[[Obj], int],
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        recount_seconds: float = RECOUNT_SECONDS,
        incremental: bool = True,
    ) -> None:
        self._resource = resource
        self._daemonsets = daemonsets
        self._view = view
        self._pods = pods
        self._budgets = budgets
        self._state = state
        self._executor = executor
        self._metrics = metrics
        self._global_burst = global_burst
        self._priority_of = priority_of
        self._wall = wall
        self._monotonic = monotonic
        self._recount_seconds = recount_seconds
        self._incremental = incremental

    async def sync(self, key: str, sync_id: str = "") -> Outcome:
        """Reconcile one DaemonSet."""
        started = self._monotonic()
        sync_id = sync_id or uuid.uuid4().hex[:8]
        cached = self._daemonsets.get(key)
        self._state.observe(key, None if cached is None else uid_of(cached))
        deferred = self._deferral(key, cached) if cached is not None else None
        if deferred is not None:  # not a sync: the join order must not count it as one
            log.debug("sync_deferred", key=key, sync_id=sync_id, requeue_after=round(deferred, 3))
            return Deferred(requeue_after=deferred)
        try:
            return await self._sync(key, sync_id, started)
        finally:
            if len(self._state.join_order):
                self._state.join_order.synced(key, started=started)

    async def _sync(self, key: str, sync_id: str, started: float) -> Outcome:
        state = self._state
        cached = self._daemonsets.get(key)
        if cached is None:  # gone: ``observe`` forgot its state
            return Done()
        # Everything from here to plan_sync is synchronous: the plan sees one state of the caches.
        plan = self._plan(key, {**state.status.freshest(key, cached), "apiVersion": self._resource.api_version,
                                "kind": self._resource.kind})
        if plan.pods.creates and len(state.join_order):
            held = state.join_order.hold_back(key, self._priority_of(plan.ds), plan.pods, now=self._monotonic())
            plan = replace(plan, pods=held)  # its recheck rides in ``pods.requeue_after``
        report = SyncReport()
        outcome = await self._executor.run(key, plan, report)
        if isinstance(outcome, Done):
            # Creates, deletes or patches not yet seen hold the next sync back: come back when
            # that record expires, should no event ever release it (a patch refused with 409
            # for a pod that then never changes, an ADDED event lost).
            outcome = Done(requeue_after=soonest(outcome.requeue_after, self._held_for(key)))
        if plan.act:
            wrote = report.created or report.deleted or report.patched or report.errors
            emit = log.info if wrote else log.debug
            emit("sync", key=key, sync_id=sync_id, duration_ms=round((self._monotonic() - started) * 1000, 2),
                 mode="full" if plan.full else "incremental", planned_nodes=plan.replanned,
                 nodes=len(plan.table.outcomes) if plan.table else 0,
                 pods=plan.table.totals[1] + plan.table.totals[2] if plan.table else 0,
                 creates=report.created, deletes=report.deleted, in_place=report.patched,
                 hash=plan.history.hash if plan.history else "", errors=report.errors,
                 status_only=plan.status_only)
        return outcome

    def _deferral(self, key: str, ds: Obj) -> float | None:
        """Seconds to put this sync off by (see the module docstring), or None to sync now."""
        gone = self._state.status.gone_for(key, uid_of(ds))
        if gone is not None:  # the API said it is deleted; the cache has yet to hear
            return gone
        if self._state.expectations.satisfied(key):
            return None
        kept = self._state.plans.table(key)
        basis = kept[0].basis if kept is not None else None
        if basis is None or basis.uid != uid_of(ds) or basis.generation != generation_of(ds):
            return None
        age = self._state.status.age(key)
        if age is None or age >= DEFERRED_STATUS_SECONDS:
            return None
        return DEFERRED_STATUS_SECONDS - age

    def _held_for(self, key: str) -> float | None:
        """Seconds until the expectations or pending patches holding ``key`` back expire."""
        state = self._state
        return soonest(state.expectations.expires_in(key), state.pending_patches.expires_in(key))

    def _plan(self, key: str, ds: Obj) -> SyncPlan:
        state = self._state
        satisfied = state.expectations.satisfied(key) and state.pending_patches.satisfied(key, self._pods.get)
        changed = state.changes.take(key)
        kept = state.plans.table(key)
        previous = kept[0] if kept is not None else None
        now_mono = self._monotonic()
        recount = kept is not None and now_mono - kept[1] >= self._recount_seconds
        snapshot = SyncSnapshot(ds=ds, view=self._view, satisfied=satisfied, now=self._wall(),
                                backoff=state.backoff, fit=state.plans.fit(key, ds), global_burst=self._global_burst,
                                previous=previous, changed=changed if self._incremental and not recount else None,
                                budget=self._budgets.get(key) if self._budgets is not None else None)
        try:
            plan = plan_sync(snapshot)
            if recount and changed is not None and self._incremental:
                self._compare(key, plan, plan_sync(replace(snapshot, changed=changed)))
        except BaseException:
            # The changes were taken but no table records them: only a full plan is safe now.
            state.changes.everything(key)
            raise
        self._metrics.planned(full=plan.full, nodes=plan.replanned)
        state.plans.keep(key, plan.table, full=plan.full, now=now_mono)
        return plan

    def _compare(self, key: str, full: SyncPlan, incremental: SyncPlan) -> None:
        """The recount: the full plan is used; a difference is counted and logged."""
        if full.table is None or incremental.table is None:
            return
        same = (full.table.totals == incremental.table.totals
                and set(full.pods.creates) == set(incremental.pods.creates)
                and {r.uid for r in full.pods.deletes} == {r.uid for r in incremental.pods.deletes})
        if not same:
            self._metrics.mismatch()
            log.warning("incremental_plan_mismatch", key=key, full=full.table.totals,
                        incremental=incremental.table.totals,
                        creates=sorted(set(full.pods.creates) ^ set(incremental.pods.creates))[:10])
