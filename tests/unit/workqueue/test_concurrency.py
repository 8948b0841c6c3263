"""Many producers and consumers trying to break the queue's per-key guarantees."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from dsctl.workqueue import FakeClock, RateLimitingQueue, ShutDown, WorkQueue

from .helpers import eventually


@pytest.mark.parametrize(
    ("producers", "adds_each", "keys", "consumers"),
    [
        pytest.param(20, 2_000, 200, 16, id="20x2000-adds-200-keys-16-workers"),
        pytest.param(4, 500, 3, 8, id="hot-keys-more-workers-than-keys"),
        pytest.param(1, 1_000, 1_000, 1, id="single-producer-single-worker"),
    ],
)
async def test_no_key_is_worked_twice_at_once_and_every_add_is_processed(
    producers: int, adds_each: int, keys: int, consumers: int
) -> None:
    """No key is ever active in two workers; every add is followed by a processing that starts after it."""
    queue: WorkQueue[str] = WorkQueue(name="stress")
    rng = random.Random(1234)
    ticks = itertools.count(1)  # one logical clock for adds and processing starts
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    active: set[str] = set()
    violations: list[str] = []
    processed = 0

    async def produce(seed: int) -> None:
        local = random.Random(seed)
        for _ in range(adds_each):
            key = f"ns/ds-{local.randrange(keys)}"
            last_add[key] = next(ticks)
            queue.add(key)
            if local.random() < 0.3:
                await asyncio.sleep(0)

    async def consume(seed: float) -> None:
        nonlocal processed
        local = random.Random(seed)
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                if key in active:
                    violations.append(key)
                active.add(key)
                last_start[key] = next(ticks)
                for _ in range(local.randrange(3)):
                    await asyncio.sleep(0)  # let producers re-add this key while it is in flight
                processed += 1
            finally:
                active.discard(key)
                queue.done(key)

    workers = [asyncio.create_task(consume(rng.random())) for _ in range(consumers)]
    await asyncio.gather(*(produce(seed) for seed in range(producers)))
    await eventually(lambda: len(queue) == 0 and queue.in_flight == 0, within=60.0)
    assert await queue.shut_down_with_drain(timeout=None) is True
    await asyncio.gather(*workers)

    assert violations == []
    stale = {key: (added, last_start.get(key, 0)) for key, added in last_add.items() if last_start.get(key, 0) < added}
    assert stale == {}, "adds never followed by a processing"
    assert processed <= producers * adds_each  # dedup can only merge adds, never invent work
    assert set(last_start) == set(last_add)


async def test_failing_workers_with_rate_limited_retries_keep_keys_exclusive(clock: FakeClock) -> None:
    """Workers failing and retrying via add_rate_limited never share a key, and every key ends up synced."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="retries", clock=clock)
    rng = random.Random(99)
    active: set[str] = set()
    violations: list[str] = []
    synced: set[str] = set()
    keys = [f"ns/ds-{index}" for index in range(50)]

    async def consume() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                if key in active:
                    violations.append(key)
                active.add(key)
                await asyncio.sleep(0)
                if rng.random() < 0.4:
                    queue.add_rate_limited(key)
                else:
                    queue.forget(key)
                    synced.add(key)
            finally:
                active.discard(key)
                queue.done(key)

    workers = [asyncio.create_task(consume()) for _ in range(6)]
    for round_ in range(5):
        for key in keys:
            queue.add(key)
            if rng.random() < 0.2:
                queue.add_after(key, rng.uniform(0.0, 0.5))
        for _ in range(round_):
            await asyncio.sleep(0)
    deadline = clock.now() + 3_600.0
    while len(queue) or queue.in_flight or queue.waiting:
        assert clock.now() < deadline, "retries never settled"
        await eventually(lambda: len(queue) == 0 and queue.in_flight == 0)
        clock.advance(0.05)
    assert await queue.shut_down_with_drain(timeout=None) is True
    await asyncio.gather(*workers)
    assert violations == []
    assert synced == set(keys)
    assert all(queue.num_requeues(key) == 0 for key in keys)
