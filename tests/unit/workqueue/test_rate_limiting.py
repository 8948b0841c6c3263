"""add_rate_limited / forget / num_requeues on the queue controllers use."""

from __future__ import annotations

import pytest

from dsctl.workqueue import FakeClock, ItemExponentialFailureRateLimiter, RateLimitingQueue


@pytest.fixture
def queue(clock: FakeClock) -> RateLimitingQueue[str]:
    """A rate-limiting queue with the default controller limiter on the fake clock."""
    return RateLimitingQueue(name="test", clock=clock)


async def fail_once(queue: RateLimitingQueue[str], clock: FakeClock, key: str) -> float:
    """Process `key` as a failed sync and return how long its retry takes to become ready."""
    taken = await queue.get()
    assert taken == key
    start = clock.now()
    queue.add_rate_limited(key)
    queue.done(key)
    deadline = clock.next_deadline()
    assert deadline is not None
    clock.advance(deadline - clock.now())
    assert len(queue) == 1
    return clock.now() - start


async def test_retries_back_off_exponentially_until_forgotten(queue: RateLimitingQueue[str], clock: FakeClock) -> None:
    """Each failed sync of a key waits twice as long as the last; forget() starts it over at 5 ms."""
    queue.add("ns/a")
    delays = [await fail_once(queue, clock, "ns/a") for _ in range(4)]
    assert delays == pytest.approx([0.005, 0.01, 0.02, 0.04], abs=1e-9)
    assert queue.num_requeues("ns/a") == 4
    key = await queue.get()
    queue.forget(key)
    queue.done(key)
    assert queue.num_requeues("ns/a") == 0
    queue.add("ns/a")
    assert await fail_once(queue, clock, "ns/a") == pytest.approx(0.005, abs=1e-9)


async def test_retry_is_not_ready_before_its_delay(queue: RateLimitingQueue[str], clock: FakeClock) -> None:
    """A rate-limited key is invisible to workers until its delay has fully passed."""
    queue.add_rate_limited("ns/a")
    clock.advance(0.0049)
    assert len(queue) == 0
    clock.advance(0.0001)
    assert len(queue) == 1


async def test_custom_limiter_is_used(clock: FakeClock) -> None:
    """A queue built with its own limiter follows that limiter's delays."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        rate_limiter=ItemExponentialFailureRateLimiter(base=1.0, max=2.0), clock=clock
    )
    for _ in range(3):
        queue.add_rate_limited("k")
    assert clock.next_deadline() == 1001.0
    assert queue.num_requeues("k") == 3


async def test_add_rate_limited_after_shutdown_spends_nothing(queue: RateLimitingQueue[str], clock: FakeClock) -> None:
    """After shutdown a rate-limited add is ignored and does not count as a requeue."""
    queue.shut_down()
    queue.add_rate_limited("ns/a")
    assert queue.num_requeues("ns/a") == 0
    assert clock.pending == 0
