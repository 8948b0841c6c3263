"""Time for the simulated control plane: what time it is, and "call me back at t".

Every loop reads time and schedules its timers through one ``Clock``, so tests can swap the
wall clock for a ``FakeClock`` and step time explicitly instead of sleeping. Timers are plain
callbacks on a heap (the event loop's own heap for the real clock), never one task per pod:
the kubelet keeps a timer per pod, and 150,000 sleeping tasks would cost far more than
150,000 heap entries.

Callbacks must be cheap and synchronous; loops use them only to mark work for a worker.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "TimerHandle"]


class TimerHandle(Protocol):
    """A scheduled callback that can be cancelled before it fires."""

    def cancel(self) -> None:
        """Stop the callback from running; harmless if it already ran."""


class Clock(Protocol):
    """Wall time in epoch seconds plus one-shot timers on that same time line."""

    def now(self) -> float:
        """Current time, epoch seconds (UTC)."""

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once ``now()`` has reached ``when`` (epoch seconds)."""


class RealClock:
    """The wall clock, with timers on the running event loop.

    Timers are converted from epoch time to the loop's monotonic time when they are set, so
    a wall-clock jump does not fire or stall them.
    """

    def now(self) -> float:
        """``time.time()``."""
        return time.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Schedule on the running loop's timer heap."""
        delay = max(0.0, when - time.time())
        return asyncio.get_running_loop().call_later(delay, callback)


class _FakeTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when a test calls ``advance``.

    Due timers run synchronously inside ``advance``, in time order, with ``now()`` set to each
    timer's due time while it runs; a timer set for the past runs at the next ``advance``.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._seq = itertools.count()
        self._heap: list[tuple[float, int, _FakeTimer]] = []

    def now(self) -> float:
        """The current fake time."""
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Queue ``callback`` for the first ``advance`` that reaches ``when``."""
        timer = _FakeTimer(when, callback)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward, running every timer that falls due on the way."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        target = self._now + seconds
        while self._heap and self._heap[0][0] <= target:
            when, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target

    @property
    def pending(self) -> int:
        """Timers not yet run or cancelled (for tests)."""
        return sum(1 for _, _, t in self._heap if not t.cancelled)
