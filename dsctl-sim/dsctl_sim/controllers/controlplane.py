"""The simulated control plane: builds the loops, starts them in order, stops them in reverse.

``start_control_plane`` is what ``dsctl sim serve`` (and in-process tests) call with the one
``Storage`` the API server also uses. Every task it creates is named ``sim-<loop>`` (feeds are
``sim-feeds:<resource>``) and owned by the returned ``ControlPlane``; ``stop`` cancels and
awaits all of them, so nothing outlives it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from dsctl_sim.controllers.clock import Clock, RealClock
from dsctl_sim.controllers.disruption import DisruptionController
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.gc import GarbageCollector
from dsctl_sim.controllers.heartbeat import Heartbeats
from dsctl_sim.controllers.kubelet import Kubelet
from dsctl_sim.controllers.namespaces import NamespaceController
from dsctl_sim.controllers.nodelifecycle import DEFAULT_GRACE_SECONDS, NodeLifecycle
from dsctl_sim.controllers.podgc import PodGC
from dsctl_sim.controllers.scheduler import Scheduler
from dsctl_sim.controllers.taintmanager import TaintManager
from dsctl_sim.storage import Storage

__all__ = ["ControlPlane", "Loop", "start_control_plane"]

log = structlog.get_logger(__name__)


class Loop(Protocol):
    """What the control plane needs from a loop."""

    name: str

    def register(self, feeds: Feeds) -> None:
        """Attach handlers to the feeds (before they start)."""

    async def run(self) -> None:
        """Work until cancelled."""

    def close(self) -> None:
        """Cancel pending timers once ``run`` has ended."""

    def stats(self) -> dict[str, int]:
        """Counters describing the work done."""

    @property
    def idle(self) -> bool:
        """Nothing queued right now."""


@dataclass
class ControlPlane:
    """The running loops of one simulated cluster. Build with ``start_control_plane``.

    The loop attributes are None when that loop was switched off.
    """

    storage: Storage
    clock: Clock
    feeds: Feeds
    heartbeats: Heartbeats = field(default_factory=Heartbeats)
    scheduler: Scheduler | None = None
    kubelet: Kubelet | None = None
    node_lifecycle: NodeLifecycle | None = None
    taint_manager: TaintManager | None = None
    garbage_collector: GarbageCollector | None = None
    pod_gc: PodGC | None = None
    namespaces: NamespaceController | None = None
    disruption: DisruptionController | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def loops(self) -> list[Loop]:
        """The loops that are switched on, in start order."""
        candidates: list[Loop | None] = [
            self.node_lifecycle,
            self.taint_manager,
            self.scheduler,
            self.kubelet,
            self.garbage_collector,
            self.pod_gc,
            self.namespaces,
            self.disruption,
        ]
        return [loop for loop in candidates if loop is not None]

    @property
    def idle(self) -> bool:
        """True when no change is waiting in the feeds and no loop has queued work.

        Timers that have not fired yet do not count: they are future work.
        """
        return self.feeds.idle and all(loop.idle for loop in self.loops)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per-loop counters (syncs, queue length, bindings, evictions, deletions...)."""
        return {loop.name: loop.stats() for loop in self.loops}

    async def settle(self, *, timeout: float = 10.0) -> None:
        """Wait until the control plane is ``idle``: every change so far has been acted on.

        Raises ``TimeoutError`` if it keeps finding work for ``timeout`` seconds. Tests use
        this before asserting that something did *not* happen.
        """
        async with asyncio.timeout(timeout):
            # Idle twice in a row across a yield: a worker that just drained its queue may
            # still be between its last sync and its next wait.
            calm = 0
            while calm < 2:
                await asyncio.sleep(0)
                calm = calm + 1 if self.idle else 0

    async def stop(self) -> None:
        """Cancel every loop task and the feeds, and wait for all of them to end."""
        for task in reversed(self.tasks):
            task.cancel()
        for task in reversed(self.tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.tasks.clear()
        await self.feeds.stop()
        for loop in self.loops:
            loop.close()
        log.info("sim_control_plane_stopped")


def start_control_plane(
    storage: Storage,
    *,
    pod_startup_seconds: float,
    clock: Clock | None = None,
    scheduler: bool = True,
    kubelet: bool = True,
    node_lifecycle: bool = True,
    garbage_collector: bool = True,
    pod_gc: bool = True,
    namespaces: bool = True,
    disruption: bool = True,
    max_termination_seconds: float = 1.0,
    orphan_pod_delay: float = 0.5,
    events: bool = True,
    registry_poll_seconds: float = 0.2,
    node_monitor_grace_seconds: float = DEFAULT_GRACE_SECONDS,
) -> ControlPlane:
    """Build and start the simulated control-plane loops over ``storage``.

    Must be called with an event loop running. ``pod_startup_seconds`` is the default delay
    from a pod starting to it being Ready. ``max_termination_seconds`` caps every pod's grace
    period so deletions finish quickly in tests. ``node_lifecycle`` also switches the taint
    manager (NoExecute eviction). ``events`` lets the scheduler and taint manager write
    (rate-limited) core v1 Events. ``registry_poll_seconds`` is how soon a newly served
    type (a CRD) starts being garbage-collected. ``namespaces`` runs the namespace controller
    (without it, a deleted namespace stays ``Terminating``). ``disruption`` keeps
    PodDisruptionBudget status current (without it, evictions under a budget get 429).
    ``node_monitor_grace_seconds`` is how long a stopped kubelet's node stays as it was before
    the node lifecycle marks it Unknown (kube-controller-manager's ``--node-monitor-grace-period``).
    """
    clock = clock or RealClock()
    feeds = Feeds(storage, registry_poll_seconds=registry_poll_seconds)
    plane = ControlPlane(storage=storage, clock=clock, feeds=feeds)
    recorder = (
        EventRecorder(storage, clock=clock, component="default-scheduler") if events else None
    )
    if node_lifecycle:
        plane.node_lifecycle = NodeLifecycle(
            storage,
            clock=clock,
            heartbeats=plane.heartbeats,
            grace_seconds=node_monitor_grace_seconds,
            recorder=EventRecorder(storage, clock=clock, component="node-controller") if events else None,
        )
        eviction_events = (
            EventRecorder(storage, clock=clock, component="taint-eviction-controller")
            if events
            else None
        )
        plane.taint_manager = TaintManager(storage, clock=clock, recorder=eviction_events)
    if scheduler:
        plane.scheduler = Scheduler(storage, clock=clock, recorder=recorder)
    if kubelet:
        plane.kubelet = Kubelet(
            storage,
            clock=clock,
            pod_startup_seconds=pod_startup_seconds,
            max_termination_seconds=max_termination_seconds,
            heartbeats=plane.heartbeats,
            recorder=EventRecorder(storage, clock=clock, component="kubelet") if events else None,
        )
    if garbage_collector:
        plane.garbage_collector = GarbageCollector(storage, clock=clock)
    if pod_gc:
        plane.pod_gc = PodGC(storage, clock=clock, orphan_delay=orphan_pod_delay)
    if namespaces:
        plane.namespaces = NamespaceController(storage, clock=clock)
    if disruption:
        plane.disruption = DisruptionController(storage, clock=clock)
    for loop in plane.loops:
        loop.register(feeds)
    feeds.start()
    for loop in plane.loops:
        plane.tasks.append(asyncio.create_task(loop.run(), name=f"sim-{loop.name}"))
    log.info(
        "sim_control_plane_started",
        loops=[loop.name for loop in plane.loops],
        pod_startup_seconds=pod_startup_seconds,
    )
    return plane
