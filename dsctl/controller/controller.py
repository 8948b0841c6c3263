"""The DaemonSet controller's wiring: informers, handlers, the work queue, workers, the syncer.

``DaemonSetController`` builds the caches and the runtime state, connects informer events to
the handlers (which only note changes and enqueue keys), and runs ``Syncer.sync`` on worker
coroutines. What one sync does, and in which order, is in ``dsctl.daemonset.syncplan``
(deciding) and ``dsctl.controller.executor`` (doing); nothing here decides.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from dsctl.daemonset.access import pod_spec
from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
from dsctl.daemonset.podpriority import global_default_priority, pod_priority
from dsctl.informer import BY_OWNER_UID, Informer, by_owner_uid
from dsctl.informer.projections import make_pod_projection, project_node
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, NODES, PODS, PRIORITY_CLASSES, Resource
from dsctl.workqueue import RateLimitingQueue, default_controller_rate_limiter
from dsctl_api.objects import deletion_timestamp
from dsctl_api.objects import uid as object_uid

from .backoffstate import FailedPodBackoff
from .cacheview import BY_TARGET_NODE, ORPHANS_BY_NAMESPACE, CacheView, by_target_node, orphans_by_namespace
from .changes import ChangeLog
from .executor import SyncExecutor
from .expectations import Expectations, PendingPatches
from .handlers import Handlers
from .joinorder import JoinOrder
from .metrics import PlanMetrics, StatusMetrics, WriteErrorMetrics
from .outcome import Outcome
from .podwrites import PodWriter
from .recorder import EventRecorder
from .statuswriter import ProgressTracker, StatusWriter
from .syncer import Syncer, SyncerState
from .workers import WorkerPool
from .writes import WriteSignals

__all__ = ["ControllerSettings", "DaemonSetController"]

DAEMONSET_RESYNC_SECONDS = 600.0
Obj = Mapping[str, Any]


class ControllerSettings(Protocol):
    """What ``DaemonSetController`` needs to know.

    ``dsctl.app.config.Settings`` satisfies it; tests and benchmarks may pass any object with
    these attributes. Declaring it here keeps the controller package free of the app layer.
    """

    @property
    def namespace(self) -> str:
        """Namespace to watch; empty for all."""

    @property
    def workers(self) -> int:
        """Concurrent syncs."""

    @property
    def burst_replicas(self) -> int:
        """Most creates or deletes per sync."""

    @property
    def list_page_size(self) -> int:
        """Objects per page when an informer lists."""

    @property
    def direct_binding(self) -> bool:
        """Set ``spec.nodeName`` on new pods instead of the node-name affinity alone."""

    @property
    def failed_pod_backoff_max(self) -> float:
        """Ceiling of the failed-pod backoff, seconds."""

    @property
    def stuck_sync_seconds(self) -> float:
        """A sync running longer than this is reported stuck."""

    @property
    def node_join_priority(self) -> bool:
        """Sync the DaemonSets a new node wants in their pods' priority order (else FIFO)."""

    @property
    def incremental_planning(self) -> bool:
        """Re-plan only the nodes that changed since a DaemonSet's last sync (else every node)."""


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
        write_errors = WriteErrorMetrics(registry)
        self.recorder = EventRecorder(client, instance=identity or "dsctl", registry=registry,
                                      write_errors=write_errors)
        self.signals = WriteSignals(recorder=self.recorder, metrics=write_errors)
        self.state = SyncerState(
            expectations=Expectations(clock=time.monotonic),
            pending_patches=PendingPatches(clock=time.monotonic),
            backoff=FailedPodBackoff(maximum=settings.failed_pod_backoff_max),
            changes=ChangeLog(),
            join_order=JoinOrder(),
        )
        # A slow resync re-delivers every DaemonSet: the safety net of a level-triggered
        # controller for anything a missed event or a bug would otherwise leave unreconciled.
        page = settings.list_page_size
        self.daemonsets = Informer(client, resource, namespace=namespace, registry=registry,
                                   resync_period=DAEMONSET_RESYNC_SECONDS, page_size=page)
        self.pods = Informer(
            client, PODS, namespace=namespace, registry=registry, page_size=page,
            indexers={BY_TARGET_NODE: by_target_node, BY_OWNER_UID: by_owner_uid,
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
        self.handlers = Handlers(
            ds_kind=resource.kind,
            get_daemonset=self.daemonsets.store.get,
            list_daemonsets=lambda: list(self.daemonsets.store.list()),
            pods_on_node=lambda node: list(self.pods.store.by_index(BY_TARGET_NODE, node)),
            expectations=self.state.expectations,
            enqueue=self.queue.add,
            enqueue_after=self.queue.add_after,
            enqueue_prioritized=self.queue.add_prioritized if settings.node_join_priority else None,
            priority_of=self._pod_priority,
            node_wanted=lambda node, wants: self.state.join_order.node_wanted(node, wants, now=time.monotonic()),
            changes=self.state.changes,
        )
        status = StatusWriter(client=client, resource=resource, signals=self.signals,
                              progress=ProgressTracker(recorder=self.recorder, registry=registry),
                              metrics=StatusMetrics(registry), on_written=self.handlers.note_status_write, wall=wall)
        self._status_writer = status
        pod_writer = PodWriter(client=client, expectations=self.state.expectations, recorder=self.recorder,
                               burst=settings.burst_replicas, direct_binding=settings.direct_binding,
                               still_current=self._still_current, signals=self.signals)
        executor = SyncExecutor(client=client, resource=resource, recorder=self.recorder, signals=self.signals,
                                pods=pod_writer, status=status, backoff=self.state.backoff,
                                pending_patches=self.state.pending_patches, wall=wall)
        self.syncer = Syncer(
            resource=resource, daemonsets=self.daemonsets.store,
            view=CacheView(nodes=self.nodes.store, pods=self.pods.store, revisions=self.revisions.store),
            pods=self.pods.store, state=self.state, executor=executor, status=status, signals=self.signals,
            metrics=PlanMetrics(registry), global_burst=settings.burst_replicas, priority_of=self._pod_priority,
            wall=wall, incremental=settings.incremental_planning,
        )
        h = self.handlers
        self.daemonsets.add_handler(h.on_ds_add, h.on_ds_update, h.on_ds_delete)
        self.daemonsets.add_handler(on_delete=self._forget_uid)
        self.pods.add_handler(h.on_pod_add, h.on_pod_update, h.on_pod_delete)
        self.nodes.add_handler(h.on_node_add, h.on_node_update, h.on_node_delete)
        self.revisions.add_handler(h.on_revision_add, h.on_revision_update, h.on_revision_delete)
        self.workers = WorkerPool(queue=self.queue, sync=self.sync, workers=settings.workers, registry=registry,
                                  stuck_after=settings.stuck_sync_seconds)
        self._gc_task: asyncio.Task[None] | None = None

    async def sync(self, key: str, sync_id: str = "") -> Outcome:
        """Reconcile one DaemonSet (``Syncer.sync``)."""
        return await self.syncer.sync(key, sync_id)

    def _still_current(self, key: str, uid: str) -> bool:
        """Whether the cache still holds DaemonSet ``key`` with ``uid``, it is not being deleted,
        and the API did not just answer that it is gone."""
        cached = self.daemonsets.store.get(key)
        return (cached is not None and object_uid(cached) == uid and not deletion_timestamp(cached)
                and self._status_writer.gone_for(key, uid) is None)

    def _pod_priority(self, ds: Obj) -> int:
        """The priority of ``ds``'s pods, resolved through the PriorityClass cache."""
        spec = pod_spec(ds)
        default = 0
        if not spec.get("priorityClassName") and spec.get("priority") is None:
            default = global_default_priority(self.priority_classes.store.list())
        return pod_priority(ds, priority_class=self.priority_classes.store.get, global_default=default)

    def _forget_uid(self, ds: Obj) -> None:
        self.syncer.forget_uid(object_uid(ds))

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
            self.state.backoff.gc(now=self.wall())

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

