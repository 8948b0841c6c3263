"""Token bucket pacing and retry backoff, on a fake clock."""

from __future__ import annotations

import asyncio
import random

import pytest

from dsctl.kube.ratelimit import Backoff, TokenBucket
from tests.support.fakeclock import SleepClock


async def test_burst_is_free_then_paced_at_qps() -> None:
    """The first ``burst`` acquisitions do not wait; later ones are spaced 1/qps apart."""
    t = SleepClock(start=1000.0)
    bucket = TokenBucket(qps=10, burst=3, clock=t, sleep=t.sleep)
    waits = [await bucket.acquire() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1, 0.1])
    assert t.now == pytest.approx(1000.3)


async def test_concurrent_waiters_queue_in_order() -> None:
    """Waiters that arrive together get successive slots, not the same one."""
    t = SleepClock(start=1000.0)
    bucket = TokenBucket(qps=2, burst=1, clock=t, sleep=t.sleep)
    reserved = [bucket.reserve() for _ in range(4)]
    assert reserved == pytest.approx([0.0, 0.5, 1.0, 1.5])


async def test_refill_caps_at_burst() -> None:
    """A long idle period refills at most ``burst`` tokens."""
    t = SleepClock(start=1000.0)
    bucket = TokenBucket(qps=1, burst=2, clock=t, sleep=t.sleep)
    t.now += 100
    assert [bucket.try_acquire() for _ in range(3)] == [True, True, False]


async def test_cancelled_waiter_returns_its_token() -> None:
    """Cancelling a waiting acquire gives the reserved token back."""
    bucket = TokenBucket(qps=1, burst=1)
    await bucket.acquire()
    waiter = asyncio.create_task(bucket.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert bucket.reserve() == pytest.approx(1.0, abs=0.05)


def test_zero_qps_disables_limiting() -> None:
    """qps <= 0 means no client-side limit."""
    bucket = TokenBucket(qps=0, burst=1)
    assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_backoff_grows_exponentially_with_jitter_and_cap() -> None:
    """Delays double per failure within [d/2, d], stop at the cap, and reset."""
    b = Backoff(base=0.1, factor=2, cap=1.0, rng=random.Random(7))
    delays = [b.next_delay() for _ in range(7)]
    ceilings = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    b.reset()
    assert b.next_delay() <= 0.1
