"""The time source of the work queue: a ``Clock`` protocol, the real clock, and a fake one.

Every time-dependent piece of the queue (delayed adds, the token bucket, drain deadlines,
metric ages) reads time and schedules wake-ups only through a ``Clock``. Production code
passes nothing and gets ``RealClock``; tests pass a ``FakeClock`` and move time by hand, so
backoff and deadlines are asserted exactly and no test ever sleeps.

Time is monotonic seconds as a float. Wake-ups are plain callbacks (``call_later``) rather
than coroutines, so the delaying layer needs no background task and a fake clock can fire
them synchronously, in order, inside ``advance``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock", "Timer"]


class Timer(Protocol):
    """A scheduled callback that can still be called off. ``asyncio.TimerHandle`` is one."""

    def cancel(self) -> None:
        """Make sure the callback does not run; a no-op once it ran or was cancelled."""


class Clock(Protocol):
    """Monotonic time plus the two ways to wait for it.

    Callers must treat ``now()`` as opaque seconds: only differences mean anything.
    ``call_later`` callbacks run on the event loop's thread and must not block.
    """

    def now(self) -> float:
        """Monotonic seconds."""

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """Run ``callback`` once, ``delay`` seconds from now (a negative delay means now)."""

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for ``seconds`` of this clock's time."""


class RealClock:
    """The process's monotonic clock and the running event loop's timers."""

    def now(self) -> float:
        """``time.monotonic()``, the same source asyncio's default loop schedules on."""
        return time.monotonic()

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """Schedule on the running loop; must be called from inside it."""
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(max(0.0, seconds))


class _FakeTimer:
    """One entry of ``FakeClock``'s schedule; ordered by (deadline, registration order)."""

    __slots__ = ("callback", "cancelled", "deadline", "seq")

    def __init__(self, deadline: float, seq: int, callback: Callable[[], object]) -> None:
        self.deadline = deadline
        self.seq = seq
        self.callback = callback
        self.cancelled = False

    def __lt__(self, other: _FakeTimer) -> bool:
        return (self.deadline, self.seq) < (other.deadline, other.seq)

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when a test calls ``advance``.

    ``advance(seconds)`` fires every timer that falls due, in deadline order (ties in the
    order they were scheduled), and while a timer runs ``now()`` reads exactly its deadline.
    Timers scheduled by a callback for a time inside the advanced window fire in the same
    call. Callbacks therefore run synchronously inside ``advance``; tasks blocked in
    ``sleep`` are woken (their futures resolved) and run at the loop's next turn.
    An exception raised by a callback propagates out of ``advance``.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[_FakeTimer] = []
        self._seq = itertools.count()

    def now(self) -> float:
        """The current fake time."""
        return self._now

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """Schedule ``callback`` for ``now() + max(delay, 0)``; it runs inside a later ``advance``."""
        timer = _FakeTimer(self._now + max(0.0, delay), next(self._seq), callback)
        heapq.heappush(self._timers, timer)
        return timer

    async def sleep(self, seconds: float) -> None:
        """Wait until ``advance`` moves time past ``now() + seconds``.

        A non-positive duration only yields to the loop, as ``asyncio.sleep(0)`` does, so
        code that "sleeps 0 to let others run" does not hang waiting for a test to advance.
        """
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_later(seconds, wake)
        try:
            await future
        finally:
            timer.cancel()

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (>= 0), firing due timers on the way."""
        if seconds < 0:
            raise ValueError(f"a clock cannot go back: advance({seconds})")
        target = self._now + seconds
        while self._timers and self._timers[0].deadline <= target:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            # Never step backwards: a zero-delay timer scheduled by a callback fires "now".
            self._now = max(self._now, timer.deadline)
            timer.cancelled = True
            timer.callback()
        self._now = target

    @property
    def pending(self) -> int:
        """How many timers are scheduled and not cancelled."""
        return sum(1 for timer in self._timers if not timer.cancelled)

    def next_deadline(self) -> float | None:
        """When the earliest live timer falls due, or None when nothing is scheduled."""
        live = [timer.deadline for timer in self._timers if not timer.cancelled]
        return min(live, default=None)
