"""The DaemonSet controller: informers, work queue, workers, and ``sync(key)``.

``sync`` runs the fixed order of ``dsctl.daemonset`` (see that package's docstring):

1. read the DaemonSet from the cache (gone: forget its expectations and backoff);
2. refuse an empty selector (``SelectingAll``), leave a deleting DaemonSet alone;
3. claim pods (adopt and release), then make history consistent to learn the current hash;
4. expectations pending: write status only;
5. otherwise manage, then the rolling update if manage wrote nothing, then history cleanup;
6. write status if it changed, and requeue for backoff expiry or ``minReadySeconds``.

Everything that decides is a pure call into ``dsctl.daemonset``; everything here is reading
caches, calling those planners, and handing their plans to the executor.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from dsctl.daemonset import history as hist
from dsctl.daemonset.conditions import INVALID, REPLICA_FAILURE, set_condition, without_condition
from dsctl.daemonset.controls import InvalidControl, RolloutControls, rollout_controls
from dsctl.daemonset.eligibility import Eligibility, Fit
from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION, templates_by_hash
from dsctl.daemonset.manage import plan_manage
from dsctl.daemonset.ownership import adopt_patch, claim, release_patch
from dsctl.daemonset.plan import Plan, merge_plans, soonest
from dsctl.daemonset.podpriority import global_default_priority, pod_priority
from dsctl.daemonset.podsort import group_by_node
from dsctl.daemonset.speclimits import burst_replicas, effective_burst
from dsctl.daemonset.status import availability_requeue, compute_status, status_changed, status_with
from dsctl.daemonset.update import InvalidRollout, plan_rolling_update
from dsctl.daemonset.validation import Problem, validate_daemonset
from dsctl.informer import BY_NODE_NAME, BY_OWNER_UID, Informer, by_node_name, by_owner_uid
from dsctl.informer.projections import make_pod_projection, project_node
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, NODES, PODS, PRIORITY_CLASSES, Resource
from dsctl.workqueue import RateLimitingQueue, default_controller_rate_limiter
from dsctl_api import gojson
from dsctl_api.labels import Selector, SelectorError, selector_from_label_selector
from dsctl_api.pods import controller_ref

from .backoff import FailedPodBackoff
from .executor import PlanExecutor
from .expectations import Expectations
from .handlers import Handlers
from .inplace import patch_in_place
from .inplacewait import PendingPatches
from .joinorder import JoinOrder
from .metrics import StatusMetrics, WriteErrorMetrics
from .outcome import Done, Outcome, Retry, Terminal
from .progresstracker import ProgressTracker
from .recorder import EventRecorder
from .settings import ControllerSettings
from .workers import WorkerPool
from .writes import (
    CREATE_REVISION,
    DELETE_REVISION,
    PATCH_POD,
    PATCH_REVISION,
    UPDATE_REVISION,
    UPDATE_STATUS,
    Failure,
    WriteSignals,
)

__all__ = ["DaemonSetController"]

log = structlog.get_logger(__name__)

ORPHANS_BY_NAMESPACE = "orphansByNamespace"
DAEMONSET_RESYNC_SECONDS = 600.0
Obj = Mapping[str, Any]


def orphans_by_namespace(obj: Obj) -> list[str]:
    """Index function: the namespace of an object without a controller, for adoption."""
    if controller_ref(obj) is not None:
        return []
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


class DaemonSetController:
    """Owns the informers, the queue, the worker pool and the per-DaemonSet state."""

    def __init__(
        self,
        *,
        client: KubeClient,
        settings: ControllerSettings,
        resource: Resource,
        registry: CollectorRegistry | None = None,
        identity: str = "",
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.settings = settings
        self.resource = resource
        self.wall = wall
        namespace = settings.namespace or None
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            name="daemonset", rate_limiter=default_controller_rate_limiter(), registry=registry
        )
        self.expectations = Expectations(clock=time.monotonic)
        self.pending_patches = PendingPatches(clock=time.monotonic)
        self.backoff = FailedPodBackoff(maximum=settings.failed_pod_backoff_max)
        write_errors = WriteErrorMetrics(registry)
        self.recorder = EventRecorder(client, instance=identity or "dsctl", registry=registry,
                                      write_errors=write_errors)
        self.signals = WriteSignals(recorder=self.recorder, metrics=write_errors)
        self.executor = PlanExecutor(client=client, expectations=self.expectations, recorder=self.recorder,
                                     burst=settings.burst_replicas, direct_binding=settings.direct_binding,
                                     still_current=self._still_current, signals=self.signals)
        # A slow resync re-delivers every DaemonSet: the safety net of a level-triggered
        # controller for anything a missed event or a bug would otherwise leave unreconciled.
        page = settings.list_page_size
        self.daemonsets = Informer(client, resource, namespace=namespace, registry=registry,
                                   resync_period=DAEMONSET_RESYNC_SECONDS, page_size=page)
        self.pods = Informer(
            client, PODS, namespace=namespace, registry=registry, page_size=page,
            indexers={BY_NODE_NAME: by_node_name, BY_OWNER_UID: by_owner_uid,
                      ORPHANS_BY_NAMESPACE: orphans_by_namespace},
            transform=make_pod_projection(keep_annotations=(IN_PLACE_ANNOTATION,)),
        )
        self.nodes = Informer(client, NODES, registry=registry, transform=project_node, page_size=page)
        self.revisions = Informer(
            client, CONTROLLER_REVISIONS, namespace=namespace, registry=registry, page_size=page,
            indexers={BY_OWNER_UID: by_owner_uid, ORPHANS_BY_NAMESPACE: orphans_by_namespace},
        )
        # Only read to rank the syncs a new node triggers (see podpriority): a few objects.
        self.priority_classes = Informer(client, PRIORITY_CLASSES, registry=registry)
        self.informers = (self.daemonsets, self.pods, self.nodes, self.revisions, self.priority_classes)
        self.status_metrics = StatusMetrics(registry)
        self.join_order = JoinOrder()
        self.progress = ProgressTracker(recorder=self.recorder, registry=registry)
        self.handlers = Handlers(
            ds_kind=resource.kind,
            get_daemonset=self.daemonsets.store.get,
            list_daemonsets=lambda: list(self.daemonsets.store.list()),
            pods_on_node=lambda node: list(self.pods.store.by_index(BY_NODE_NAME, node)),
            expectations=self.expectations,
            enqueue=self.queue.add,
            enqueue_after=self.queue.add_after,
            enqueue_prioritized=self.queue.add_prioritized if settings.node_join_priority else None,
            priority_of=self._pod_priority,
            node_wanted=lambda node, wants: self.join_order.node_wanted(node, wants, now=time.monotonic()),
        )
        h = self.handlers
        self.daemonsets.add_handler(h.on_ds_add, h.on_ds_update, h.on_ds_delete)
        self.daemonsets.add_handler(on_delete=self._forget_backoff)
        self.pods.add_handler(h.on_pod_add, h.on_pod_update, h.on_pod_delete)
        self.nodes.add_handler(h.on_node_add, h.on_node_update, h.on_node_delete)
        self.revisions.add_handler(h.on_revision_add, h.on_revision_update, h.on_revision_delete)
        self.workers = WorkerPool(queue=self.queue, sync=self.sync, workers=settings.workers, registry=registry,
                                  stuck_after=settings.stuck_sync_seconds)
        self._gc_task: asyncio.Task[None] | None = None
        self._fit_cache: dict[str, tuple[int, dict[str, tuple[str, Fit]]]] = {}
        self._written: dict[str, tuple[str, Obj]] = {}

    def _still_current(self, key: str, uid: str) -> bool:
        """Whether the cache still holds DaemonSet ``key`` with ``uid`` and it is not being deleted."""
        cached = self.daemonsets.store.get(key)
        meta = (cached or {}).get("metadata") or {}
        return meta.get("uid") == uid and not meta.get("deletionTimestamp")

    def _pod_priority(self, ds: Obj) -> int:
        """The priority of ``ds``'s pods, resolved through the PriorityClass cache."""
        spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        default = 0
        if not spec.get("priorityClassName") and spec.get("priority") is None:
            default = global_default_priority(self.priority_classes.store.list())
        return pod_priority(ds, priority_class=self.priority_classes.store.get, global_default=default)

    def _forget_backoff(self, ds: Obj) -> None:
        uid = str((ds.get("metadata") or {}).get("uid", ""))
        self.backoff.forget(uid)
        self._fit_cache.pop(uid, None)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start_informers(self) -> None:
        """Start the reflectors (caches warm up even on a standby replica)."""
        for informer in self.informers:
            informer.run()

    async def wait_for_sync(self) -> None:
        """Return once every informer has delivered its first full list."""
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.informers))

    async def stop_informers(self) -> None:
        """Stop the reflectors."""
        await asyncio.gather(*(informer.stop() for informer in self.informers), return_exceptions=True)

    def start_workers(self) -> None:
        """Start the event recorder, the workers and the backoff GC (leader only)."""
        self.recorder.start()
        self.workers.start()
        self._gc_task = asyncio.create_task(self._gc_backoff(), name="backoff-gc")

    async def stop_workers(self, *, timeout: float) -> None:
        """Drain in-flight syncs within ``timeout``, then stop the recorder and the GC."""
        await self.workers.stop(timeout=timeout)
        if self._gc_task is not None:
            self._gc_task.cancel()
            await asyncio.gather(self._gc_task, return_exceptions=True)
        await self.recorder.stop()

    async def _gc_backoff(self) -> None:
        while True:
            await asyncio.sleep(60.0)
            self.backoff.gc(now=self.wall())

    # -- health -------------------------------------------------------------------------------

    def informers_unhealthy(self) -> str | None:
        """A reason when an informer's reflector died or went silent, else None."""
        sick = [i.resource.label for i in self.informers if i.has_synced() and not i.healthy()]
        return f"informers not healthy: {', '.join(sick)}" if sick else None

    def not_synced(self) -> str | None:
        """A reason while some cache has not synced, else None."""
        pending = [i.resource.label for i in self.informers if not i.has_synced()]
        return f"caches not synced: {', '.join(pending)}" if pending else None

    def workers_stuck(self) -> str | None:
        """A reason when a worker is stuck or dead, else None."""
        return self.workers.stuck()

    # -- sync ---------------------------------------------------------------------------------

    async def sync(self, key: str, sync_id: str = "") -> Outcome:
        """Reconcile one DaemonSet; see the module docstring for the order."""
        started = time.monotonic()
        try:
            return await self._sync(key, sync_id, started)
        finally:
            if len(self.join_order):
                self.join_order.synced(key, started=started)

    async def _sync(self, key: str, sync_id: str, started: float) -> Outcome:
        bound = log.bind(key=key, sync_id=sync_id or uuid.uuid4().hex[:8])
        cached = self.daemonsets.store.get(key)
        if cached is None:
            self.expectations.delete(key)
            self.pending_patches.delete(key)
            self.signals.take(key)
            self.status_metrics.forget(key)
            self.progress.forget(key)
            self._written.pop(key, None)
            return Done()
        freshest = self._freshest(key, cached)
        ds: dict[str, Any] = {**freshest, "apiVersion": self.resource.api_version, "kind": self.resource.kind}
        meta = ds.get("metadata") or {}
        spec = ds.get("spec") or {}
        if _selects_everything(spec):
            self.recorder.record(ds, "Warning", "SelectingAll",
                                 "This daemon set is selecting all pods. A non-empty selector is required.")
            return Done()
        if meta.get("deletionTimestamp"):
            return Done()
        problems = validate_daemonset(ds)
        if problems:
            return await self._refuse(ds, problems)
        selector = selector_from_label_selector(spec["selector"])

        # Expectations are judged *before* the pod snapshot is taken, with no await in between:
        # "satisfied" must mean "this snapshot contains every write we made". Checked after the
        # awaits below, an observation arriving meanwhile would make an older snapshot look
        # complete, and planning on it deletes or creates twice (found by the chaos suite).
        satisfied = self.expectations.satisfied(key) and self.pending_patches.satisfied(key, self.pods.store.get)
        nodes = list(self.nodes.store.list())
        try:
            pods = await self._claim(self.pods, PODS, ds, selector)
            history = await self._sync_history(ds, selector, pods)
        except errors.ApiError as exc:
            await self._write_failure_condition(ds)
            return Retry(f"claim/history: {exc}")
        if not isinstance(history, hist.HistoryPlan):
            return history
        now = self.wall()
        fits = self._fits_for(ds, nodes)
        by_node = group_by_node(pods)

        if history.pod_patches:
            # Pods were relabelled to the kept revision: our snapshot still shows the old
            # hashes, and a rolling update planned on it would replace pods that are current.
            satisfied = False
            requeue_now = True
        else:
            requeue_now = False
        if not satisfied:
            try:
                await self._write_status(ds, nodes, by_node, history.hash, fits=fits, now=now, observed=False,
                                         writes_ok=False, created=history.create is not None)
            except errors.ApiError as exc:
                return Retry(f"status: {exc}")
            bound.debug("sync_expectations_pending", relabelled=len(history.pod_patches))
            return Done(requeue_after=0.0 if requeue_now else None)

        plan = plan_manage(ds=ds, nodes=nodes, pods_by_node=by_node, hash=history.hash, now=now,
                           backoff=self.backoff, fits=fits)
        if not plan.has_writes:
            try:
                should_run = [name for name, fit in fits.items() if fit.should_run]
                controls = self._controls(ds)
                labels = _node_labels(nodes) if controls.selector is not None else None
                old_templates = templates_by_hash(history.old) if controls.in_place else None
                update = plan_rolling_update(ds=ds, nodes_should_run=should_run, pods_by_node=by_node,
                                             hash=history.hash, now=now, controls=controls, node_labels=labels,
                                             old_templates=old_templates)
            except InvalidRollout as exc:
                self.recorder.record(ds, "Warning", "InvalidRollout", f"{exc.field}: {exc.message}")
                update = Plan()
            plan = merge_plans([plan, update])
        if plan.creates and len(self.join_order):
            plan = self.join_order.hold_back(key, self._pod_priority(ds), plan, now=time.monotonic())
        for step in plan.backoff_steps:
            self.backoff.next(step, now=now)
        result = await self.executor.execute(key=key, ds=ds, plan=plan, hash_=history.hash,
                                             burst=self._burst(ds))
        patched = 0
        if plan.updates:
            patched, failures = await patch_in_place(self.executor, key=key, ds=ds, updates=plan.updates,
                                                     pending=self.pending_patches)
            result.errors.extend(failures)
        if not result.errors:
            result.errors.extend(await self._cleanup_history(ds, history, pods))
        try:
            status_requeue = await self._write_status(ds, nodes, by_node, history.hash, fits=fits, now=now,
                                                      observed=True, writes_ok=not result.errors,
                                                      created=history.create is not None)
        except errors.ApiError as exc:
            result.errors.append(f"status: {exc}")
            status_requeue = None
        emit = bound.info if (result.created or result.deleted or patched or result.errors) else bound.debug
        emit("sync", duration_ms=round((time.monotonic() - started) * 1000, 2), nodes=len(nodes),
                   pods=len(pods), creates=result.created, deletes=result.deleted, in_place=patched,
                   hash=history.hash, errors=len(result.errors))
        if result.errors:
            return Retry("; ".join(result.errors[:3]))
        return Done(requeue_after=soonest(plan.requeue_after, status_requeue))

    def _controls(self, ds: Obj) -> RolloutControls:
        """The DaemonSet's rollout controls; an unreadable one holds the rollout, with a warning."""
        try:
            return rollout_controls(ds)
        except InvalidControl as exc:
            self.recorder.record(ds, "Warning", "InvalidRolloutControl",
                                 f"{exc.field}: {exc.message}; the rolling update is held until it is fixed")
            return RolloutControls(paused=True)

    def _burst(self, ds: Obj) -> int:
        """min(--burst-replicas, the DaemonSet's burstReplicas); an unreadable one is reported."""
        try:
            burst_replicas(ds)
        except InvalidControl as exc:
            self.recorder.record(ds, "Warning", "InvalidRolloutControl",
                                 f"{exc.field}: {exc.message}; --burst-replicas applies")
        return effective_burst(ds, global_burst=self.settings.burst_replicas)

    async def _refuse(self, ds: Obj, problems: list[Problem]) -> Outcome:
        """Leave an unreconcilable DaemonSet alone, saying why in events and a condition."""
        message = "; ".join(str(p) for p in problems)
        for problem in problems[:5]:
            self.recorder.record(ds, "Warning", "InvalidSpec", str(problem))
        meta = ds["metadata"]
        old = ds.get("status") or {}
        wanted = set_condition(old, INVALID, reason="InvalidSpec", message=message, now=self.wall())
        if wanted != old:
            try:
                await self._update_status(ds, wanted)
            except errors.ApiError as exc:
                return Retry(f"status condition: {exc}")
        log.warning("daemonset_invalid", key=f"{meta.get('namespace')}/{meta.get('name')}", problems=message)
        return Terminal(message)

    def _freshest(self, key: str, cached: Obj) -> Obj:
        """The cached DaemonSet, or the one our last status write returned if the cache lags it.

        Right after a status write the informer still holds the previous version; writing the
        next status from it would only earn a 409 and a GET. We remember which version we
        replaced, and use our own result while the cache still shows that version.
        """
        entry = self._written.get(key)
        if entry is None:
            return cached
        replaced, written = entry
        if str((cached.get("metadata") or {}).get("resourceVersion", "")) == replaced:
            return written
        del self._written[key]
        return cached

    async def _update_status(self, ds: Obj, status: Mapping[str, Any], *,
                             expected: tuple[type[errors.ApiError], ...] = ()) -> None:
        """PUT the status subresource and remember the result (see ``_freshest``).

        A failure is signalled (event, metric, log) unless it is one of ``expected``."""
        meta = ds["metadata"]
        async with self.signals.guard(ds, UPDATE_STATUS, name=str(meta["name"]), expected=expected):
            written = await self.client.update_status(self.resource, {**ds, "status": status},
                                                      namespace=meta.get("namespace"))
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        self._written[key] = (str(meta.get("resourceVersion", "")), written)
        self.handlers.note_status_write(key, written)

    def _fits_for(self, ds: Obj, nodes: Sequence[Obj]) -> dict[str, Fit]:
        """Eligibility of every node, reusing verdicts for nodes unchanged since the last sync.

        A verdict depends only on the DaemonSet's template (which bumps ``generation``) and the
        node (which bumps ``resourceVersion``); at 5,000 nodes this saves most of a sync's
        eligibility cost.
        """
        meta = ds["metadata"]
        uid, generation = str(meta.get("uid", "")), int(meta.get("generation") or 0)
        cached_generation, cache = self._fit_cache.get(uid, (-1, {}))
        if cached_generation != generation:
            cache = {}
        rules: Eligibility | None = None
        fits: dict[str, Fit] = {}
        fresh: dict[str, tuple[str, Fit]] = {}
        for node in nodes:
            node_meta = node["metadata"]
            name, rv = node_meta["name"], str(node_meta.get("resourceVersion", ""))
            hit = cache.get(name)
            if hit is not None and hit[0] == rv and rv:
                fit = hit[1]
            else:
                rules = rules or Eligibility.of(ds)
                fit = rules.check(node)
            fits[name] = fit
            fresh[name] = (rv, fit)
        self._fit_cache[uid] = (generation, fresh)
        return fits

    # -- ownership ----------------------------------------------------------------------------

    async def _claim(self, informer: Informer, resource: Resource, ds: Obj, selector: Selector) -> list[Obj]:
        """The DaemonSet's objects of one kind (pods or revisions): adopt matching orphans,
        release owned ones that no longer match, and return what it now owns.

        The candidates are read from the cache synchronously, before the first await, so the
        result is one snapshot (see the expectations note in ``sync``).
        """
        meta = ds["metadata"]
        uid, namespace = meta.get("uid", ""), meta.get("namespace", "")
        candidates = [*informer.store.by_index(BY_OWNER_UID, uid),
                      *informer.store.by_index(ORPHANS_BY_NAMESPACE, namespace)]
        verdict = claim(candidates, owner_uid=uid, selector=selector, owner_namespace=namespace,
                        owner_deleting=bool(meta.get("deletionTimestamp")))
        owned = list(verdict.owned)
        write = PATCH_POD if resource == PODS else PATCH_REVISION
        if verdict.to_adopt:
            await self._recheck_owner(ds)
        for obj in verdict.to_adopt:
            refusal = hist.adoption_refusal(obj) if resource == CONTROLLER_REVISIONS else None
            if refusal is not None:
                self.recorder.record(ds, "Warning", "RevisionOutOfRange", refusal)
                continue
            patch = adopt_patch(ds, obj, api_version=self.resource.api_version, kind=self.resource.kind)
            obj_name = obj["metadata"]["name"]
            try:
                # A refused adoption (422) is signalled but does not stop the sync: the object
                # stays an orphan, and the rest of the DaemonSet can still be reconciled.
                async with self.signals.guard(ds, write, name=obj_name, expected=(errors.NotFound, errors.Conflict)):
                    owned.append(await self.client.patch(resource, obj_name, patch,
                                                         namespace=namespace, patch_type="strategic"))
            except (errors.NotFound, errors.Invalid, errors.Conflict):
                continue
        for obj in verdict.to_release:
            obj_name = obj["metadata"]["name"]
            try:
                async with self.signals.guard(ds, write, name=obj_name, expected=(errors.NotFound, errors.Conflict)):
                    await self.client.patch(resource, obj_name, release_patch(uid, obj),
                                            namespace=namespace, patch_type="strategic")
            except (errors.NotFound, errors.Invalid, errors.Conflict):
                continue
        return owned

    async def _recheck_owner(self, ds: Obj) -> None:
        """Live read before adopting: never adopt for a DaemonSet that was replaced or is going."""
        meta = ds["metadata"]
        live = await self.client.get(self.resource, meta["name"], namespace=meta.get("namespace"))
        live_meta = live.get("metadata") or {}
        if live_meta.get("uid") != meta.get("uid"):
            raise errors.Conflict(409, "Conflict", f"original DaemonSet {meta['name']} is gone: uid changed")
        if live_meta.get("deletionTimestamp"):
            raise errors.Conflict(409, "Conflict", f"DaemonSet {meta['name']} is being deleted")

    # -- history ------------------------------------------------------------------------------

    async def _sync_history(self, ds: Obj, selector: Selector, pods: Sequence[Obj]) -> hist.HistoryPlan | Outcome:
        namespace = ds["metadata"].get("namespace", "")
        revisions = await self._claim(self.revisions, CONTROLLER_REVISIONS, ds, selector)
        try:
            plan = hist.plan_history(ds=ds, revisions=revisions, pods=pods,
                                     api_version=self.resource.api_version, kind=self.resource.kind)
        except hist.RevisionOverflow as exc:
            # Nothing to retry: the DaemonSet waits for the revision to change (its update
            # or deletion enqueues it), with the reason in an event and a condition.
            self.recorder.record(ds, "Warning", "RevisionOutOfRange", str(exc))
            old = ds.get("status") or {}
            wanted = set_condition(old, REPLICA_FAILURE, reason="RevisionOutOfRange", message=str(exc),
                                   now=self.wall())
            if wanted != old:
                await self._update_status(ds, wanted)
            log.warning("revision_out_of_range", daemonset=ds["metadata"].get("name"), error=str(exc))
            return Terminal(str(exc))
        guard = self.signals.guard
        for update in plan.updates:
            async with guard(ds, UPDATE_REVISION, name=update["metadata"]["name"]):
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
                async with guard(ds, CREATE_REVISION, name=plan.create["metadata"]["name"],
                                 expected=(errors.AlreadyExists,)):
                    await self.client.create(CONTROLLER_REVISIONS, hist.wire_body(plan.create, new=True),
                                             namespace=namespace)
            except errors.AlreadyExists:
                return await self._resolve_collision(ds, plan)
        return plan

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
            log.info("revision_written_unescaped", revision=(revision.get("metadata") or {}).get("name"))
            await self.client.update(CONTROLLER_REVISIONS, hist.wire_body(revision, new=False, escape=False),
                                     namespace=namespace)

    async def _resolve_collision(self, ds: Obj, plan: hist.HistoryPlan) -> hist.HistoryPlan | Outcome:
        meta = ds["metadata"]
        namespace = meta.get("namespace", "")
        assert plan.create is not None
        existing = await self.client.get(CONTROLLER_REVISIONS, plan.create["metadata"]["name"],
                                         namespace=namespace)
        live = None
        if not hist.revision_data_equal(ds, existing):
            live = await self.client.get(self.resource, meta["name"], namespace=namespace)
        decision = hist.resolve_create_conflict(ds=ds, existing=existing, live_ds=live)
        if decision.action == "reuse":
            return plan
        if decision.action == "bump" and live is not None:
            status = {**(live.get("status") or {}), "collisionCount": decision.collision_count}
            await self._update_status(live, status)
            log.info("revision_collision", daemonset=meta["name"], collision_count=decision.collision_count)
        return Retry(decision.message)

    async def _cleanup_history(self, ds: Obj, plan: hist.HistoryPlan, pods: Sequence[Obj]) -> list[str]:
        """Delete old revisions beyond the history limit; returns the errors (signalled already)."""
        namespace = ds["metadata"].get("namespace", "")
        uid = ds["metadata"].get("uid", "")
        failed: list[str] = []
        if not plan.old:
            return failed
        for name in hist.plan_history_cleanup(ds=ds, old_revisions=plan.old, pods=self._all_pods(uid, pods)):
            try:
                async with self.signals.guard(ds, DELETE_REVISION, name=name, expected=(errors.NotFound,)):
                    await self.client.delete(CONTROLLER_REVISIONS, name, namespace=namespace)
            except errors.NotFound:
                continue
            except errors.ApiError as exc:
                failed.append(f"delete revision {name}: {exc}")
        return failed

    def _all_pods(self, uid: str, claimed: Sequence[Obj]) -> Iterator[Obj]:
        """Claimed pods plus owned ones left out of the claim (terminating, terminal): a pod on
        its way out still protects its revision from cleanup. Lazy, so cleanup that has
        nothing to delete never walks the pods."""
        seen: set[str] = set()
        for pod in (*claimed, *self.pods.store.by_index(BY_OWNER_UID, uid)):
            pod_uid = str((pod.get("metadata") or {}).get("uid", ""))
            if pod_uid not in seen:
                seen.add(pod_uid)
                yield pod

    # -- status -------------------------------------------------------------------------------

    async def _write_status(
        self, ds: Obj, nodes: Sequence[Obj], by_node: Mapping[str, Sequence[Obj]], hash_: str,
        *, fits: Mapping[str, Fit], now: float, observed: bool, writes_ok: bool, created: bool = False,
    ) -> float | None:
        """Write status if it changed; returns a requeue delay for minReadySeconds or the
        progress deadline, if any.

        A write that failed in this sync sets ``ReplicaFailure``; ``writes_ok`` (every write
        the sync needed went through) clears it; otherwise it is left as it was. ``Progressing``
        follows the rollout (``created``: this sync created the current revision).
        """
        meta = ds["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        generation = int(meta.get("generation") or 0)
        status = compute_status(ds=ds, nodes=nodes, pods_by_node=by_node, hash=hash_, now=now, fits=fits)
        self.status_metrics.observe(key, status)
        failure = self.signals.take(key)

        def conditions(current: Mapping[str, Any] | None) -> tuple[dict[str, Any], float | None]:
            kept = _with_failure(without_condition(current, INVALID), failure, clear=writes_ok, now=now)
            return self.progress.condition(ds, kept, status, hash_, created=created, now=now)

        old = ds.get("status") or {}
        base, deadline_requeue = conditions(old)
        check_generation = generation if observed else 0
        if status_changed(old, status, generation=check_generation) or base != old:
            new_status = status_with(base, status, observed_generation=generation if observed else None)
            try:
                await self._update_status(ds, new_status, expected=(errors.Conflict,))
            except errors.Conflict:
                live = await self.client.get(self.resource, meta["name"], namespace=meta.get("namespace"))
                live_base, _ = conditions(live.get("status"))
                new_status = status_with(live_base, status, observed_generation=generation if observed else None)
                await self._update_status(live, new_status)
        return soonest(availability_requeue(ds, status), deadline_requeue)

    async def _write_failure_condition(self, ds: Obj) -> None:
        """After a write failed before the status step (history, adoption): set ``ReplicaFailure``
        alone, so the stall shows in ``kubectl describe`` even though no counters were computed.
        A failure of this write is itself signalled and otherwise ignored: the sync fails anyway."""
        meta = ds["metadata"]
        failure = self.signals.take(f"{meta.get('namespace', '')}/{meta['name']}")
        if failure is None:
            return
        old = ds.get("status") or {}
        wanted = _with_failure(old, failure, clear=False, now=self.wall())
        if wanted != old:
            try:
                await self._update_status(ds, wanted, expected=(errors.Conflict,))
            except errors.ApiError:
                return


def _with_failure(status: Mapping[str, Any] | None, failure: Failure | None, *, clear: bool,
                  now: float) -> dict[str, Any]:
    """``status`` with ``ReplicaFailure`` set for ``failure``, removed when ``clear``, else as is."""
    if failure is not None:
        return set_condition(status, REPLICA_FAILURE, reason=failure.reason, message=failure.message, now=now)
    if clear:
        return without_condition(status, REPLICA_FAILURE)
    return dict(status or {})


def _selects_everything(spec: Any) -> bool:
    """An empty (not missing) label selector: upstream refuses to act on it."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("selector"), Mapping):
        return False
    try:
        return selector_from_label_selector(spec["selector"]).empty
    except SelectorError:
        return False


def _node_labels(nodes: Sequence[Obj]) -> dict[str, Mapping[str, str]]:
    """Node name to labels, for a rollout ``selector``."""
    return {str(node["metadata"]["name"]): node["metadata"].get("labels") or {} for node in nodes}
