"""The DaemonSet controller's wiring: informers, handlers, the work queue, workers, the syncer.

``DaemonSetController`` builds the caches (``cacheview.Caches``) and the runtime state
(``state.RuntimeState``), connects informer events to the handlers (which only note changes
and enqueue keys), and runs ``Syncer.sync`` on worker coroutines. What one sync does, and in
which order, is in ``dsctl.daemonset.syncplan`` (deciding) and ``dsctl.controller.executor``
(doing); nothing here decides. With the node readiness gate on (``--readiness-taint``), it also
wires the gate: its handlers, its queue of node names and its workers (``nodegate.NodeGate``),
started and stopped with the DaemonSet workers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from prometheus_client import CollectorRegistry

from dsctl.daemonset.readinessgate import CONTINUOUS, GateSettings
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import Resource
from dsctl.tuning import BACKOFF_GC_SECONDS
from dsctl.workqueue import RateLimitingQueue, default_controller_rate_limiter
from dsctl_api.objects import deletion_timestamp
from dsctl_api.objects import uid as object_uid

from .cacheview import BY_READINESS_TAINT, INDEXED, Caches
from .executor import SyncExecutor
from .gatehandlers import GateHandlers
from .handlers import Handlers
from .metrics import PlanMetrics, WriteErrorMetrics
from .nodegate import NodeGate
from .podwrites import PodWriter
from .recorder import EventRecorder
from .state import RuntimeState
from .statuswriter import StatusWriter
from .syncer import Syncer
from .workers import Outcome, WorkerPool
from .writes import WriteSignals

__all__ = ["ControllerSettings", "DaemonSetController"]


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

    @property
    def readiness_gate(self) -> GateSettings | None:
        """The node readiness gate's settings; None: no gate."""


class DaemonSetController:
    """Owns the caches, the queue, the worker pool and the per-DaemonSet state."""

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
        self.client, self.settings, self.resource, self.wall = client, settings, resource, wall
        gate = settings.readiness_gate
        # Every pod tolerates the readiness taint, added at creation like upstream's own tolerations.
        self.extra_tolerations = (gate.taint.toleration(),) if gate is not None else ()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            name="daemonset", rate_limiter=default_controller_rate_limiter(), registry=registry)
        self.caches = Caches(client, resource, namespace=settings.namespace or None,
                             page_size=settings.list_page_size, registry=registry,
                             readiness_taint=gate.taint if gate is not None else None)
        self.state = RuntimeState.create(backoff_max=settings.failed_pod_backoff_max, registry=registry,
                                         extra_tolerations=self.extra_tolerations)
        write_errors = WriteErrorMetrics(registry)
        self.recorder = EventRecorder(client, instance=identity or "dsctl", registry=registry,
                                      write_errors=write_errors)
        self.signals = WriteSignals(recorder=self.recorder, metrics=write_errors, failures=self.state.failures)
        self.handlers = self._handlers()
        self.syncer = Syncer(
            resource=resource, daemonsets=self.caches.daemonsets.store, view=self.caches.view(),
            pods=self.caches.pods.store, state=self.state, budgets=self.caches.budgets.store,
            executor=self._executor(), metrics=PlanMetrics(registry),
            global_burst=settings.burst_replicas, priority_of=self.caches.pod_priority, wall=wall,
            incremental=settings.incremental_planning)
        self.caches.connect(self.handlers)
        self.workers = WorkerPool(queue=self.queue, sync=self.sync, workers=settings.workers, registry=registry,
                                  stuck_after=settings.stuck_sync_seconds)
        self.gate = self._gate(gate, registry) if gate is not None else None
        self._gc_task: asyncio.Task[None] | None = None

    def _handlers(self) -> Handlers:
        """The informer event handlers, over the caches, the queue and the runtime state."""
        caches, queue = self.caches, self.queue
        prioritized = self.settings.node_join_priority
        return Handlers(
            ds_kind=self.resource.kind, get_daemonset=caches.daemonsets.store.get,
            list_daemonsets=lambda: list(caches.daemonsets.store.list()), pods_on_node=caches.pods_on_node,
            state=self.state, enqueue=queue.add, enqueue_after=queue.add_after,
            enqueue_prioritized=queue.add_prioritized if prioritized else None,
            priority_of=caches.pod_priority if prioritized else None)

    def _gate(self, settings: GateSettings, registry: CollectorRegistry | None) -> NodeGate:
        """The node readiness gate: its worker side, and its handlers on the caches."""
        caches = self.caches
        gate = NodeGate(client=self.client, settings=settings, nodes=caches.nodes.store,
                        daemonsets=caches.daemonsets.store, pods_on_node=caches.pods_on_node, memory=self.state.gate,
                        recorder=self.recorder, signals=self.signals, registry=registry,
                        stuck_after=self.settings.stuck_sync_seconds, wall=self.wall)
        GateHandlers(ds_kind=self.resource.kind, taint=settings.taint, continuous=settings.mode == CONTINUOUS,
                     get_daemonset=caches.daemonsets.store.get, get_node=caches.nodes.store.get,
                     tainted_nodes=lambda: caches.nodes.store.index_keys(BY_READINESS_TAINT, INDEXED),
                     owned_pods=caches.view().owned_pods, enqueue=gate.queue.add,
                     ).connect(daemonsets=caches.daemonsets, pods=caches.pods, nodes=caches.nodes)
        return gate

    def _executor(self) -> SyncExecutor:
        """The one executor of plans, with its pod and status stages."""
        client, resource, state, settings = self.client, self.resource, self.state, self.settings
        status = StatusWriter(client=client, resource=resource, signals=self.signals, memory=state.status,
                              gauges=state.gauges, recorder=self.recorder, wall=self.wall)
        pods = PodWriter(client=client, expectations=state.expectations, recorder=self.recorder,
                         burst=settings.burst_replicas, direct_binding=settings.direct_binding,
                         still_current=self._still_current, signals=self.signals,
                         extra_tolerations=self.extra_tolerations)
        return SyncExecutor(client=client, resource=resource, recorder=self.recorder, signals=self.signals,
                            pods=pods, status=status, backoff=state.backoff, pending_patches=state.pending_patches,
                            wall=self.wall)

    async def sync(self, key: str, sync_id: str = "") -> Outcome:
        """Reconcile one DaemonSet (``Syncer.sync``)."""
        return await self.syncer.sync(key, sync_id)

    def _still_current(self, key: str, uid: str) -> bool:
        """Whether the cache still holds DaemonSet ``key`` with ``uid``, it is not being deleted,
        and the API did not just answer that it is gone."""
        cached = self.caches.daemonsets.store.get(key)
        return (cached is not None and object_uid(cached) == uid and not deletion_timestamp(cached)
                and self.state.status.gone_for(key, uid) is None)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start_informers(self) -> None:
        """Start the reflectors (caches warm up even on a standby replica)."""
        self.caches.run()

    async def wait_for_sync(self) -> None:
        """Return once every informer has delivered its first full list."""
        await self.caches.wait_for_sync()

    async def stop_informers(self) -> None:
        """Stop the reflectors."""
        await self.caches.stop()

    def start_workers(self) -> None:
        """Start the event recorder, the workers, the gate's workers and the backoff GC (leader only)."""
        self.recorder.start()
        self.workers.start()
        if self.gate is not None:
            self.gate.start()
        self._gc_task = asyncio.create_task(self._gc_backoff(), name="backoff-gc")

    async def stop_workers(self, *, timeout: float) -> None:
        """Drain in-flight syncs (the gate's too) within ``timeout``, then stop the recorder and the GC."""
        drains = [self.workers.stop(timeout=timeout)]
        if self.gate is not None:
            drains.append(self.gate.stop(timeout=timeout))
        await asyncio.gather(*drains)
        if self._gc_task is not None:
            self._gc_task.cancel()
            await asyncio.gather(self._gc_task, return_exceptions=True)
        await self.recorder.stop()

    async def _gc_backoff(self) -> None:
        while True:
            await asyncio.sleep(BACKOFF_GC_SECONDS)
            self.state.backoff.gc(now=self.wall())

    # -- health -------------------------------------------------------------------------------

    def informers_unhealthy(self) -> str | None:
        """A reason when an informer's reflector died or went silent, else None."""
        sick = [i.resource.label for i in self.caches.all if i.has_synced() and not i.healthy()]
        return f"informers not healthy: {', '.join(sick)}" if sick else None

    def not_synced(self) -> str | None:
        """A reason while some cache has not synced, else None."""
        pending = [i.resource.label for i in self.caches.all if not i.has_synced()]
        return f"caches not synced: {', '.join(pending)}" if pending else None

    def workers_stuck(self) -> str | None:
        """A reason when a worker (the gate's included) is stuck or dead, else None."""
        return self.workers.stuck() or (self.gate.stuck() if self.gate is not None else None)

