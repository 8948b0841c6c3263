"""The basic work queue: dedup, per-key exclusivity, replay after done, and shutdown."""

from __future__ import annotations

import asyncio

import pytest

from dsctl.workqueue import FakeClock, ShutDown, WorkQueue

from .helpers import eventually, settle


@pytest.fixture
def queue(clock: FakeClock) -> WorkQueue[str]:
    """A basic queue on the fake clock."""
    return WorkQueue(name="test", clock=clock)


async def test_duplicate_adds_are_queued_once_in_first_add_order(queue: WorkQueue[str]) -> None:
    """Adding a waiting key again neither duplicates it nor moves it back."""
    for key in ["ns/a", "ns/b", "ns/a", "ns/c", "ns/b"]:
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["ns/a", "ns/b", "ns/c"]


async def test_add_during_processing_is_replayed_after_done(queue: WorkQueue[str]) -> None:
    """A key added while a worker holds it waits for done() and is then handed out once."""
    queue.add("ns/a")
    key = await queue.get()
    queue.add("ns/a")
    queue.add("ns/a")
    assert len(queue) == 0
    second = asyncio.create_task(queue.get())
    await settle()
    assert not second.done(), "a processing key was handed to a second worker"
    queue.done(key)
    assert await second == "ns/a"
    queue.done("ns/a")
    assert len(queue) == 0
    assert queue.in_flight == 0


async def test_other_keys_flow_while_one_is_processing(queue: WorkQueue[str]) -> None:
    """Re-adding a processing key does not block the keys behind it."""
    queue.add("ns/a")
    held = await queue.get()
    queue.add("ns/a")
    queue.add("ns/b")
    assert await queue.get() == "ns/b"
    queue.done(held)
    assert await queue.get() == "ns/a"


async def test_done_for_a_key_not_held_raises(queue: WorkQueue[str]) -> None:
    """done() without a matching get() is a caller bug and is reported, not ignored."""
    queue.add("ns/a")
    with pytest.raises(ValueError, match="not being processed"):
        queue.done("ns/a")
    assert len(queue) == 1


async def test_get_waits_for_an_add(queue: WorkQueue[str]) -> None:
    """get() on an empty queue blocks until a key is added."""
    getter = asyncio.create_task(queue.get())
    await settle()
    assert not getter.done()
    queue.add("ns/a")
    assert await getter == "ns/a"


async def test_cancelled_waiting_get_loses_no_key(queue: WorkQueue[str]) -> None:
    """A get() cancelled while waiting leaves later keys for other workers."""
    getter = asyncio.create_task(queue.get())
    await settle()
    getter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await getter
    queue.add("ns/a")
    assert await queue.get() == "ns/a"


async def test_woken_then_cancelled_get_passes_the_key_on(queue: WorkQueue[str]) -> None:
    """A getter woken for a key but cancelled before taking it hands the wake-up to the next getter."""
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await settle()
    queue.add("ns/a")  # wakes `first`
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, timeout=5.0) == "ns/a"


async def test_shut_down_stops_intake_and_wakes_every_getter(queue: WorkQueue[str]) -> None:
    """After shut_down() adds are ignored, waiting keys are dropped and every get() raises ShutDown."""
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await settle()
    queue.shut_down()
    for getter in getters:
        with pytest.raises(ShutDown):
            await getter
    queue.add("ns/late")
    assert len(queue) == 0
    assert queue.shutting_down
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shut_down_drops_waiting_keys_and_replays(queue: WorkQueue[str]) -> None:
    """A hard shutdown forgets queued keys; an in-flight key can still be done but is not replayed."""
    queue.add("ns/a")
    queue.add("ns/b")
    held = await queue.get()
    queue.add(held)
    queue.shut_down()
    assert len(queue) == 0
    queue.done(held)
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()


async def test_drain_finishes_queued_and_in_flight_work(queue: WorkQueue[str]) -> None:
    """shut_down_with_drain() lets workers finish every existing key, a replay included, then returns True."""
    for key in ["ns/a", "ns/b", "ns/c"]:
        queue.add(key)
    held = await queue.get()
    queue.add(held)  # a replay is owed once `held` is done
    release = asyncio.Event()
    processed: list[str] = []

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            processed.append(key)
            await release.wait()
            queue.done(key)

    drain = asyncio.create_task(queue.shut_down_with_drain(timeout=30.0))
    workers = [asyncio.create_task(worker()) for _ in range(3)]
    await eventually(lambda: sorted(processed) == ["ns/b", "ns/c"])
    queue.add("ns/late")  # ignored: intake is closed
    release.set()
    await settle()
    assert not drain.done(), "drained while a key was still in flight"
    assert not any(worker.done() for worker in workers), "an idle worker left before the drain ended"
    queue.done(held)  # the replay of ns/a goes to a waiting worker
    assert await drain is True
    await asyncio.gather(*workers)
    assert sorted(processed) == ["ns/a", "ns/b", "ns/c"]
    assert len(queue) == 0
    assert queue.in_flight == 0


async def test_drain_of_an_idle_queue_returns_at_once(queue: WorkQueue[str]) -> None:
    """With nothing queued or in flight, a drain completes immediately and idle getters stop."""
    getter = asyncio.create_task(queue.get())
    await settle()
    assert await queue.shut_down_with_drain(timeout=1.0) is True
    with pytest.raises(ShutDown):
        await getter


async def test_drain_honours_its_deadline(queue: WorkQueue[str], clock: FakeClock) -> None:
    """A key never done makes the drain give up at the deadline: False, waiting keys dropped, getters stop."""
    queue.add("ns/stuck")
    queue.add("ns/waiting")
    stuck = await queue.get()
    assert await queue.get() == "ns/waiting"
    queue.done("ns/waiting")
    queue.add("ns/stuck")  # would be replayed if the drain completed
    idle = asyncio.create_task(queue.get())
    drain = asyncio.create_task(queue.shut_down_with_drain(timeout=10.0))
    await settle()
    clock.advance(9.999)
    await settle()
    assert not drain.done()
    assert not idle.done()
    clock.advance(0.001)
    assert await drain is False
    with pytest.raises(ShutDown):
        await idle
    queue.done(stuck)  # the late worker may still report; nothing is replayed
    assert len(queue) == 0
    assert clock.pending == 0


async def test_hard_shut_down_cuts_a_drain_short(queue: WorkQueue[str], clock: FakeClock) -> None:
    """shut_down() during a drain ends it at once with False, as client-go allows."""
    queue.add("ns/a")
    held = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await settle()
    queue.shut_down()
    assert await drain is False
    queue.done(held)
    assert await queue.shut_down_with_drain(timeout=1.0) is True
    assert clock.pending == 0
