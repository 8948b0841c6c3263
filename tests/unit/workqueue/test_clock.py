"""The fake and real clocks behind every timed part of the queue."""

from __future__ import annotations

import asyncio
import functools

import pytest

from dsctl.workqueue import FakeClock, RealClock

from .helpers import eventually


def test_fake_clock_fires_in_deadline_order_at_exact_times(clock: FakeClock) -> None:
    """advance() runs due callbacks by deadline, each seeing now() == its own deadline."""
    seen: list[tuple[str, float]] = []
    clock.call_later(3.0, lambda: seen.append(("c", clock.now())))
    clock.call_later(1.0, lambda: seen.append(("a", clock.now())))
    clock.call_later(2.0, lambda: seen.append(("b", clock.now())))
    clock.advance(2.5)
    assert seen == [("a", 1001.0), ("b", 1002.0)]
    assert clock.now() == 1002.5
    assert clock.pending == 1
    assert clock.next_deadline() == 1003.0


def test_fake_clock_ties_fire_in_scheduling_order(clock: FakeClock) -> None:
    """Timers with the same deadline fire in the order they were scheduled."""
    seen: list[int] = []
    for index in range(5):
        clock.call_later(1.0, functools.partial(seen.append, index))
    clock.advance(1.0)
    assert seen == [0, 1, 2, 3, 4]


def test_fake_clock_cancelled_timer_never_fires(clock: FakeClock) -> None:
    """A cancelled timer is skipped and no longer counts as pending."""
    seen: list[str] = []
    timer = clock.call_later(1.0, lambda: seen.append("x"))
    timer.cancel()
    assert clock.pending == 0
    clock.advance(5.0)
    assert seen == []
    assert clock.next_deadline() is None


def test_fake_clock_fires_timers_scheduled_by_callbacks_within_the_window(clock: FakeClock) -> None:
    """A callback that schedules another timer inside the advanced window sees it fire too."""
    seen: list[float] = []

    def first() -> None:
        seen.append(clock.now())
        clock.call_later(1.0, lambda: seen.append(clock.now()))

    clock.call_later(1.0, first)
    clock.advance(3.0)
    assert seen == [1001.0, 1002.0]


def test_fake_clock_refuses_to_go_back(clock: FakeClock) -> None:
    """advance() with a negative step is a test bug and raises."""
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance(-1.0)


async def test_fake_clock_sleep_wakes_only_after_advance(clock: FakeClock) -> None:
    """A task in sleep() resumes once time has moved past its wake-up, not before."""
    task = asyncio.create_task(clock.sleep(2.0))
    await asyncio.sleep(0)
    clock.advance(1.999)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(0.001)
    await eventually(task.done)
    assert clock.pending == 0


async def test_fake_clock_cancelled_sleep_removes_its_timer(clock: FakeClock) -> None:
    """Cancelling a sleeping task leaves no timer behind."""
    task = asyncio.create_task(clock.sleep(2.0))
    await asyncio.sleep(0)
    assert clock.pending == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.pending == 0


async def test_fake_clock_zero_sleep_only_yields(clock: FakeClock) -> None:
    """sleep(0) on the fake clock returns without anyone advancing time."""
    await asyncio.wait_for(clock.sleep(0), timeout=5.0)
    assert clock.pending == 0
    assert clock.now() == 1000.0


async def test_real_clock_call_later_runs_on_the_loop() -> None:
    """RealClock schedules callbacks on the running loop, and its time never decreases."""
    real = RealClock()
    before = real.now()
    fired: list[float] = []
    real.call_later(0.0, lambda: fired.append(real.now()))
    await eventually(lambda: bool(fired))
    assert fired[0] >= before
    await real.sleep(0)
