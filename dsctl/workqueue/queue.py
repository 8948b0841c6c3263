"""The basic work queue: deduplicating, fair, and exclusive per key.

This is the bottom layer of the client-go work-queue port. It decides which key a worker
gets next and guarantees that no key is worked by two workers at once; delays and rate
limits are added by the layers above (``delaying``, ``rate_limiting``), each a subclass
that adds one capability.

It is single-threaded asyncio code: every method except ``get`` and
``shut_down_with_drain`` is synchronous and may be called from event handlers and
timer callbacks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

import structlog
from prometheus_client import CollectorRegistry

from dsctl.workqueue.clock import Clock, RealClock, Timer
from dsctl.workqueue.lanes import Lanes, PriorityGate
from dsctl.workqueue.metrics import QueueMetrics, queue_metrics

__all__ = ["ShutDown", "WorkQueue"]

log = structlog.get_logger(__name__)

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """Raised by ``get`` once the queue is shut down and has nothing left to hand out."""


class WorkQueue(Generic[K]):
    """A FIFO of keys that need processing, with client-go's dirty/processing sets.

    Invariants:

    - ``dirty`` holds every key that needs processing; ``processing`` every key a worker
      holds between ``get`` and ``done``.
    - A key is waiting if and only if it is dirty and not processing, so it is queued
      at most once however often it is added (dedup), and in the order of first add.
    - Beyond client-go: ``add_prioritized`` puts a key in a priority lane served before the
      FIFO, highest priority first, ties in order of add (see ``lanes``). It is used only for
      the DaemonSets a new node wakes; every other add keeps client-go's FIFO order, and
      the dirty/processing rules above hold for both. While a key taken from that lane is
      in flight, lower work waits, for at most ``priority_hold`` seconds (see ``PriorityGate``).
    - A key is never handed to two workers at once. An add while the key is processing
      only marks it dirty; ``done`` then puts it back in the FIFO, so the change that
      caused the add is always seen by a later processing.

    Caller duties: every key returned by ``get`` must be passed to ``done`` exactly once,
    also when processing fails (``key = await q.get(); try: ... finally: q.done(key)``).
    Forgetting it blocks that key forever and makes a draining shutdown wait for the deadline.

    Shutdown: adds are ignored from then on. ``shut_down`` drops the keys still waiting, so
    ``get`` raises ``ShutDown`` at once and in-flight keys are not replayed.
    ``shut_down_with_drain`` keeps handing out the waiting keys (and replays) until the
    queue is empty and nothing is in flight, or the deadline passes; meanwhile idle workers
    stay blocked in ``get`` (a replay may still come) and all raise ``ShutDown`` at the end.

    Metrics are exported when ``registry`` is given (see ``dsctl.workqueue.metrics``).
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        priority_hold: float = 10.0,
    ) -> None:
        self.name = name
        self.clock: Clock = clock if clock is not None else RealClock()
        self._lanes: Lanes[K] = Lanes()
        # Priority of keys added with add_prioritized while processing, for done()'s replay.
        self._replay_rank: dict[K, int] = {}
        self._gate: PriorityGate[K] = PriorityGate(hold=priority_hold)
        self._gate_timer: Timer | None = None
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drainers: list[asyncio.Future[bool]] = []
        self._shutting_down = False
        self._draining = False
        self._metrics: QueueMetrics | None = (
            queue_metrics(registry, name, clock=self.clock) if registry is not None else None
        )

    def __len__(self) -> int:
        """Keys waiting to be handed out (not counting in-flight ones). For information only."""
        return len(self._lanes)

    @property
    def in_flight(self) -> int:
        """Keys currently held by workers."""
        return len(self._processing)

    @property
    def shutting_down(self) -> bool:
        """True once either shutdown method was called."""
        return self._shutting_down

    def add(self, key: K) -> None:
        """Mark ``key`` as needing processing. Ignored once the queue is shutting down."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if self._metrics is not None:
            self._metrics.add(key)
        if key in self._processing:
            return  # replayed by done()
        self._lanes.push(key)
        self._wake_one()

    def add_prioritized(self, key: K, priority: int) -> None:
        """Like ``add``, but ``key`` waits in the priority lane, ahead of every plain add.

        A key already waiting is moved up to ``priority`` if that is higher; a key being
        processed is replayed into the priority lane by ``done()``.
        """
        if self._shutting_down:
            return
        if key not in self._dirty:
            self._dirty.add(key)
            if self._metrics is not None:
                self._metrics.add(key)
        if key in self._processing:
            self._replay_rank[key] = max(priority, self._replay_rank.get(key, priority))
            return
        self._lanes.push_priority(key, priority)
        self._wake_one()

    async def get(self) -> K:
        """Wait for a key and take it; the caller must call ``done(key)`` afterwards.

        Raises ``ShutDown`` when the queue is shutting down and has nothing left to hand out
        (during a drain: once the drain is complete or abandoned).
        Cancelling a waiting ``get`` loses no key.
        """
        while not self._may_take():
            # While draining, an idle worker keeps waiting: an in-flight key may still be replayed.
            if self._shutting_down and not (self._draining and self._processing):
                raise ShutDown(self.name)
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if not waiter.done():
                    self._getters.remove(waiter)
                elif not waiter.cancelled():
                    # Woken for a key but cancelled before taking it: pass the wake-up on.
                    self._wake_one()
                raise
        head = self._lanes.peek()
        assert head is not None
        key = self._lanes.pop()
        self._gate.started(key, head[1], now=self.clock.now())
        self._dirty.discard(key)
        self._processing.add(key)
        if self._metrics is not None:
            self._metrics.get(key)
        return key

    def done(self, key: K) -> None:
        """Release ``key`` after processing; requeue it if it was added meanwhile.

        Raises ``ValueError`` for a key that no worker holds: that is always a caller bug,
        and ignoring it could queue a key twice.
        """
        if key not in self._processing:
            raise ValueError(f"done({key!r}) for a key that is not being processed")
        self._processing.remove(key)
        if self._metrics is not None:
            self._metrics.done(key)
        rank = self._replay_rank.pop(key, None)
        if self._gate.finished(key):
            self._wake_all()  # the gate may have opened for several waiting keys
        if key in self._dirty:
            if rank is None:
                self._lanes.push(key)
            else:
                self._lanes.push_priority(key, rank)
            self._wake_one()
        elif self._shutting_down:
            self._check_drained()

    def shut_down(self) -> None:
        """Stop now: ignore adds, drop waiting keys, make every ``get`` raise ``ShutDown``.

        Keys already in flight stay held until their ``done``; they are not replayed.
        Safe to call more than once, and during ``shut_down_with_drain`` to cut it short.
        """
        self._stop_intake()
        if self._metrics is not None and self._dirty:
            self._metrics.discard(len(self._dirty))
        self._lanes.clear()
        self._replay_rank.clear()
        self._gate.clear()
        if self._gate_timer is not None:
            self._gate_timer.cancel()
            self._gate_timer = None
        self._dirty.clear()
        self._draining = False
        self._wake_all()
        self._resolve_drainers(drained=not self._processing)

    # The deadline runs on the injected clock, which asyncio.timeout() cannot, hence the parameter.
    async def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Ignore adds, let workers finish the waiting and in-flight keys, then stop.

        Returns True once the queue is empty and no key is in flight. When ``timeout``
        seconds of the queue's clock pass first, it shuts down hard (see ``shut_down``)
        and returns False; the caller then cancels its workers.
        """
        if not self._shutting_down:
            self._draining = True
        self._stop_intake()
        if not self._draining:
            # An earlier hard shutdown: nothing will be handed out any more.
            return not self._processing
        if self._is_drained():
            self._finish_drain()
            return True
        drained: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._drainers.append(drained)

        def give_up() -> None:
            if not drained.done():
                drained.set_result(False)

        timer: Timer | None = None if timeout is None else self.clock.call_later(timeout, give_up)
        try:
            ok = await drained
        finally:
            if timer is not None:
                timer.cancel()
            if drained in self._drainers:
                self._drainers.remove(drained)
        if not ok and self._draining:
            log.warning(
                "workqueue_drain_deadline_passed",
                queue=self.name,
                in_flight=len(self._processing),
                waiting=len(self._lanes),
            )
            self.shut_down()
        return ok

    # -- internals ---------------------------------------------------------------------

    def _stop_intake(self) -> None:
        """Refuse further adds. Subclasses extend this to stop their own sources of adds."""
        self._shutting_down = True

    def _may_take(self) -> bool:
        """Whether a key is waiting and the priority gate lets the next one start now."""
        head = self._lanes.peek()
        if head is None:
            return False
        now = self.clock.now()
        if self._gate.allows(head[1], now=now):
            return True
        expiry = self._gate.next_expiry(now=now)
        if expiry is not None and self._gate_timer is None:
            self._gate_timer = self.clock.call_later(expiry, self._gate_expired)
        return False

    def _gate_expired(self) -> None:
        self._gate_timer = None
        self._wake_all()

    def _is_drained(self) -> bool:
        return not self._lanes and not self._processing

    def _check_drained(self) -> None:
        if self._draining and self._is_drained():
            self._finish_drain()

    def _finish_drain(self) -> None:
        self._draining = False
        self._wake_all()  # idle workers blocked in get() now see the empty, shut-down queue
        self._resolve_drainers(drained=True)

    def _resolve_drainers(self, *, drained: bool) -> None:
        for future in self._drainers:
            if not future.done():
                future.set_result(drained)
        self._drainers.clear()

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
