"""The delaying layer: ``add_after(key, delay)`` on top of the basic work queue.

Controllers use it to look at an object again later (``minReadySeconds``, expectations
timing out) and, through the rate-limiting layer, to retry failed syncs with backoff.

Waiting keys sit in a min-heap ordered by ready time. Instead of a background task, the
queue keeps exactly one clock timer armed for the earliest ready time; when it fires, every
due key is added and the timer is re-armed for the next one. Shutdown cancels the timer and
forgets the waiting keys, so nothing outlives the queue.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

from dsctl.workqueue.clock import Clock, Timer
from dsctl.workqueue.queue import WorkQueue

__all__ = ["DelayingQueue"]

K = TypeVar("K", bound=Hashable)


@dataclass(order=True)
class _Waiting(Generic[K]):
    """A key with the time it becomes ready. ``live`` is cleared when superseded (lazy delete)."""

    ready_at: float
    seq: int
    key: K = field(compare=False)
    live: bool = field(default=True, compare=False)


class DelayingQueue(WorkQueue[K]):
    """A ``WorkQueue`` that can also add a key after a delay.

    Coalescing, as in client-go: a key waits at most once. A second ``add_after`` for a
    waiting key only ever moves its ready time earlier, never later. A waiting key is
    independent of the queue itself: an immediate ``add`` does not cancel the pending
    delayed add, which later re-adds the key (deduplicated if it is still dirty).

    Keys with equal ready times are added in the order they were scheduled.
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, registry=registry)
        self._heap: list[_Waiting[K]] = []
        self._waiting: dict[K, _Waiting[K]] = {}
        self._seq = itertools.count()
        self._timer: Timer | None = None
        self._timer_at: float | None = None

    @property
    def waiting(self) -> int:
        """Keys scheduled by ``add_after`` that are not yet due."""
        return len(self._waiting)

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` once ``delay`` seconds have passed; a delay <= 0 adds it now.

        Every call counts in ``workqueue_retries_total``, as in client-go.
        Ignored once the queue is shutting down.
        """
        if self.shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retry()
        if delay <= 0:
            self.add(key)
            return
        ready_at = self.clock.now() + delay
        current = self._waiting.get(key)
        if current is not None:
            if current.ready_at <= ready_at:
                return
            current.live = False
        entry = _Waiting(ready_at, next(self._seq), key)
        self._waiting[key] = entry
        heapq.heappush(self._heap, entry)
        self._arm()

    def _stop_intake(self) -> None:
        super()._stop_intake()
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._timer_at = None
        self._heap.clear()
        self._waiting.clear()

    def _earliest(self) -> _Waiting[K] | None:
        while self._heap and not self._heap[0].live:
            heapq.heappop(self._heap)
        return self._heap[0] if self._heap else None

    def _arm(self) -> None:
        """Keep one timer set for the earliest ready time (or none when nothing waits)."""
        head = self._earliest()
        want = head.ready_at if head is not None else None
        if want == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = want
        self._timer = None if want is None else self.clock.call_later(want - self.clock.now(), self._fire)

    def _fire(self) -> None:
        self._timer = self._timer_at = None
        if self.shutting_down:
            return
        now = self.clock.now()
        while (head := self._earliest()) is not None and head.ready_at <= now:
            heapq.heappop(self._heap)
            del self._waiting[head.key]
            self.add(head.key)
        # A timer that fires a hair early (loop clock resolution) simply re-arms.
        self._arm()
