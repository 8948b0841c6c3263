"""add_after: ordering by ready time, coalescing per key, and timers owned by the queue."""

from __future__ import annotations

import asyncio

import pytest

from dsctl.workqueue import DelayingQueue, FakeClock, RealClock


@pytest.fixture
def queue(clock: FakeClock) -> DelayingQueue[str]:
    """A delaying queue on the fake clock."""
    return DelayingQueue(name="test", clock=clock)


async def take_ready(queue: DelayingQueue[str]) -> list[str]:
    """get() and done() every key that is ready now, in order."""
    keys: list[str] = []
    while len(queue):
        key = await queue.get()
        queue.done(key)
        keys.append(key)
    return keys


async def test_keys_become_ready_in_ready_time_order(queue: DelayingQueue[str], clock: FakeClock) -> None:
    """Keys are added when their delay has passed, earliest first, and not a moment before."""
    queue.add_after("ns/a", 3.0)
    queue.add_after("ns/b", 1.0)
    queue.add_after("ns/c", 2.0)
    assert len(queue) == 0
    assert queue.waiting == 3
    clock.advance(0.999)
    assert len(queue) == 0
    clock.advance(0.001)
    assert await take_ready(queue) == ["ns/b"]
    clock.advance(5.0)
    assert await take_ready(queue) == ["ns/c", "ns/a"]
    assert queue.waiting == 0
    assert clock.pending == 0


@pytest.mark.parametrize(
    ("delays", "ready_after"),
    [
        pytest.param([5.0, 2.0], 2.0, id="earlier-wins"),
        pytest.param([1.0, 3.0], 1.0, id="later-ignored"),
        pytest.param([4.0, 4.0, 1.5, 9.0], 1.5, id="earliest-of-many"),
    ],
)
async def test_repeated_add_after_coalesces_to_the_earliest_time(
    queue: DelayingQueue[str], clock: FakeClock, delays: list[float], ready_after: float
) -> None:
    """A key waits once, at the earliest ready time asked for, and is added exactly once."""
    for delay in delays:
        queue.add_after("ns/a", delay)
    assert queue.waiting == 1
    clock.advance(ready_after - 0.001)
    assert len(queue) == 0
    clock.advance(0.001)
    assert await take_ready(queue) == ["ns/a"]
    clock.advance(max(delays) + 1.0)
    assert len(queue) == 0, "a superseded ready time added the key again"


@pytest.mark.parametrize("delay", [pytest.param(0.0, id="zero"), pytest.param(-1.0, id="negative")])
async def test_non_positive_delay_adds_now(queue: DelayingQueue[str], clock: FakeClock, delay: float) -> None:
    """add_after with a delay <= 0 is a plain add and arms no timer."""
    queue.add_after("ns/a", delay)
    assert len(queue) == 1
    assert clock.pending == 0


async def test_equal_ready_times_keep_scheduling_order(queue: DelayingQueue[str], clock: FakeClock) -> None:
    """Keys due at the same instant are added in the order they were scheduled."""
    for name in ["ns/c", "ns/a", "ns/b"]:
        queue.add_after(name, 1.0)
    clock.advance(1.0)
    assert await take_ready(queue) == ["ns/c", "ns/a", "ns/b"]


async def test_one_timer_is_armed_for_the_earliest_key(queue: DelayingQueue[str], clock: FakeClock) -> None:
    """However many keys wait, the queue holds exactly one clock timer, set for the earliest."""
    for index in range(100):
        queue.add_after(f"ns/{index}", 10.0 + index)
    queue.add_after("ns/first", 2.0)
    assert clock.pending == 1
    assert clock.next_deadline() == 1002.0
    clock.advance(2.0)
    assert clock.pending == 1
    assert clock.next_deadline() == 1010.0


async def test_immediate_add_does_not_cancel_a_pending_delayed_add(queue: DelayingQueue[str], clock: FakeClock) -> None:
    """As in client-go, a key processed meanwhile is added again when its delayed add falls due."""
    queue.add_after("ns/a", 5.0)
    queue.add("ns/a")
    assert await take_ready(queue) == ["ns/a"]
    clock.advance(5.0)
    assert await take_ready(queue) == ["ns/a"]


async def test_shut_down_cancels_the_timer_and_ignores_later_delays(
    queue: DelayingQueue[str], clock: FakeClock
) -> None:
    """Shutdown forgets waiting keys and leaves no timer; add_after afterwards does nothing."""
    queue.add_after("ns/a", 1.0)
    queue.shut_down()
    assert clock.pending == 0
    assert queue.waiting == 0
    queue.add_after("ns/b", 1.0)
    clock.advance(10.0)
    assert len(queue) == 0
    assert clock.pending == 0


async def test_drain_also_cancels_the_timer(queue: DelayingQueue[str], clock: FakeClock) -> None:
    """A draining shutdown drops delayed keys too: they are future work, not existing work."""
    queue.add_after("ns/a", 1.0)
    assert await queue.shut_down_with_drain(timeout=1.0) is True
    assert clock.pending == 0


async def test_real_clock_delivers_a_delayed_key() -> None:
    """On the real clock the loop's timer adds the key and wakes a waiting worker."""
    queue: DelayingQueue[str] = DelayingQueue(name="real", clock=RealClock())
    queue.add_after("ns/a", 0.01)
    assert await asyncio.wait_for(queue.get(), timeout=5.0) == "ns/a"
    queue.done("ns/a")
    queue.shut_down()
