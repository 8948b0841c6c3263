"""The worker pool: N coroutines taking keys from the queue and running ``sync``, and the
outcomes a sync returns.

A sync returns its outcome as a value (``Done``, ``Retry``, ``Terminal``, ``Deferred``), as
controller-runtime's reconcilers return a ``Result``. Each worker owns one key at a time (the
queue guarantees no other worker holds it). Every outcome is mapped here, in one place, to a
queue action and a metric label:

=============  ===================================  ===========================
outcome        queue action                         ``dsctl_sync_total{result}``
=============  ===================================  ===========================
Done           forget; ``add_after`` if requeue      success
Retry          ``add_rate_limited``                  error
Terminal       forget                                terminal
Deferred       ``add_after``                         deferred
exception      ``add_rate_limited``, log traceback   exception
=============  ===================================  ===========================

A sync running longer than ``stuck_after`` seconds makes ``stuck()`` report it, which fails
``/healthz`` so the kubelet restarts a wedged process.

The node readiness gate runs a second pool over its own queue of node names
(``dsctl.controller.nodegate``); ``name`` and ``metric_prefix`` keep its tasks and series apart.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from dsctl.workqueue import RateLimitingQueue, ShutDown

__all__ = ["Deferred", "Done", "Outcome", "Retry", "Terminal", "WorkerPool"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Done:
    """The sync succeeded."""

    requeue_after: float | None = None
    label: str = "success"


@dataclass(frozen=True, slots=True)
class Retry:
    """A transient failure: requeue with per-key exponential backoff."""

    error: str
    label: str = "error"


@dataclass(frozen=True, slots=True)
class Terminal:
    """A failure that retrying cannot fix; wait for the object to change."""

    error: str
    label: str = "terminal"


@dataclass(frozen=True, slots=True)
class Deferred:
    """The sync was put off; try again after ``requeue_after`` seconds."""

    requeue_after: float
    label: str = "deferred"


Outcome = Done | Retry | Terminal | Deferred

SyncFn = Callable[[str, str], Awaitable[Outcome]]


@dataclass
class WorkerPool:
    """Owns ``workers`` tasks. ``start`` them, then ``stop`` drains with a deadline."""

    queue: RateLimitingQueue[str]
    sync: SyncFn
    workers: int
    registry: CollectorRegistry | None = None
    stuck_after: float = 300.0
    monotonic: Callable[[], float] = time.monotonic
    name: str = "worker"
    """Prefix of the task names (``worker-0``...)."""
    metric_prefix: str = "dsctl_sync"
    """Prefix of the pool's two series: ``<prefix>_total{result}`` and ``<prefix>_duration_seconds``."""
    what: str = "DaemonSet"
    """What one sync reconciles, for the series' help."""
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _active: dict[int, tuple[str, float]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _total: Counter | None = None
    _duration: Histogram | None = None

    def __post_init__(self) -> None:
        if self.registry is not None:
            what = self.what[:1].upper() + self.what[1:]
            self._total = Counter(f"{self.metric_prefix}_total", f"{what} syncs by result.", ["result"],
                                  registry=self.registry)
            self._duration = Histogram(
                f"{self.metric_prefix}_duration_seconds", f"Wall time of one {self.what} sync.",
                buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
                registry=self.registry,
            )

    def start(self) -> None:
        """Start the worker tasks."""
        for index in range(self.workers):
            self._tasks.append(asyncio.create_task(self._work(index), name=f"{self.name}-{index}"))

    async def stop(self, *, timeout: float) -> None:
        """Stop intake and let in-flight syncs finish; cancel whatever still runs at ``timeout``.

        One budget covers both the queue drain and the wait for the worker tasks.
        """
        deadline = self.monotonic() + timeout
        try:
            await self.queue.shut_down_with_drain(timeout)
        finally:
            if self._tasks:
                remaining = max(0.1, deadline - self.monotonic())
                _, pending = await asyncio.wait(self._tasks, timeout=remaining)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks.clear()

    def stuck(self) -> str | None:
        """A reason when a sync has run longer than ``stuck_after``, else None."""
        now = self.monotonic()
        for key, started in self._active.values():
            if now - started > self.stuck_after:
                return f"sync of {key} running for {now - started:.0f}s"
        dead = [t.get_name() for t in self._tasks if t.done()]
        if dead:
            return f"workers exited: {', '.join(dead)}"
        return None

    async def _work(self, index: int) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            sync_id = f"{index}-{next(self._ids)}"
            started = self.monotonic()
            self._active[index] = (key, started)
            try:
                outcome = await self._run(key, sync_id)
            finally:
                self._active.pop(index, None)
                self.queue.done(key)
            elapsed = self.monotonic() - started
            if self._duration is not None:
                self._duration.observe(elapsed)
            log.debug("sync_finished", key=key, sync_id=sync_id, duration_ms=round(elapsed * 1000, 2),
                      result=outcome.label)

    async def _run(self, key: str, sync_id: str) -> Outcome:
        try:
            outcome = await self.sync(key, sync_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("sync_crashed", key=key, sync_id=sync_id)
            outcome = Retry(f"{type(exc).__name__}: {exc}", label="exception")
        match outcome:
            case Done(requeue_after=delay):
                self.queue.forget(key)
                if delay is not None:
                    self.queue.add_after(key, max(0.0, delay))
            case Retry(error=error):
                log.info("sync_retry", key=key, sync_id=sync_id, error=error,
                         requeues=self.queue.num_requeues(key))
                self.queue.add_rate_limited(key)
            case Terminal(error=error):
                log.warning("sync_terminal", key=key, sync_id=sync_id, error=error)
                self.queue.forget(key)
            case Deferred(requeue_after=delay):
                self.queue.add_after(key, max(0.0, delay))
        if self._total is not None:
            self._total.labels(outcome.label).inc()
        return outcome
