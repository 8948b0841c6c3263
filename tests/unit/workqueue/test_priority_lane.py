"""The priority lane: ``add_prioritized`` is served before the FIFO, by priority, ties in add order."""

from __future__ import annotations

import asyncio

import pytest

from dsctl.workqueue import FakeClock, WorkQueue
from dsctl.workqueue.lanes import Lanes

from .helpers import eventually, settle


@pytest.fixture
def queue(clock: FakeClock) -> WorkQueue[str]:
    """A basic queue on the fake clock."""
    return WorkQueue(name="test", clock=clock)


# Each step: ("add", key) or ("prio", key, priority).
@pytest.mark.parametrize(
    ("steps", "order"),
    [
        pytest.param([("add", "a"), ("add", "b")], ["a", "b"], id="plain-adds-stay-fifo"),
        pytest.param([("add", "a"), ("prio", "b", 5), ("prio", "c", 9)], ["c", "b", "a"],
                     id="priority-lane-first-highest-first"),
        pytest.param([("prio", "a", 1), ("prio", "b", 1), ("prio", "c", 1)], ["a", "b", "c"], id="ties-fifo"),
        pytest.param([("add", "a"), ("add", "b"), ("prio", "b", 3)], ["b", "a"], id="waiting-key-promoted"),
        pytest.param([("prio", "a", 9), ("prio", "b", 5), ("prio", "a", 1)], ["a", "b"],
                     id="never-lowered"),
        pytest.param([("prio", "a", 1), ("prio", "b", 5), ("prio", "a", 9)], ["a", "b"], id="raised-in-lane"),
        pytest.param([("prio", "a", 1), ("add", "a"), ("add", "b")], ["a", "b"], id="plain-add-keeps-lane"),
        pytest.param([("prio", "a", -5), ("add", "b")], ["a", "b"], id="negative-priority-still-ahead-of-fifo"),
    ],
)
async def test_order(queue: WorkQueue[str], steps: list[tuple[object, ...]], order: list[str]) -> None:
    """Keys come out in lane order, each once."""
    for step in steps:
        if step[0] == "add":
            queue.add(str(step[1]))
        else:
            queue.add_prioritized(str(step[1]), int(str(step[2])))
    assert len(queue) == len(order)
    assert [await _take(queue) for _ in order] == order
    assert len(queue) == 0


async def _take(queue: WorkQueue[str]) -> str:
    """Get a key and finish it at once (a prioritized key in flight would hold the rest back)."""
    key = await queue.get()
    queue.done(key)
    return key


async def test_prioritized_add_while_processing_replays_in_lane(queue: WorkQueue[str]) -> None:
    """A processing key added with priority is not handed out twice, and comes back ahead of the FIFO."""
    queue.add("a")
    held = await queue.get()
    queue.add("b")
    queue.add_prioritized("a", 7)
    assert len(queue) == 1
    queue.done(held)
    assert [await _take(queue), await _take(queue)] == ["a", "b"]


async def test_shutdown_drops_the_lane(queue: WorkQueue[str]) -> None:
    """shut_down forgets prioritized keys and replays; later prioritized adds are ignored."""
    queue.add("a")
    held = await queue.get()
    queue.add_prioritized("a", 3)
    queue.add_prioritized("b", 3)
    queue.shut_down()
    queue.add_prioritized("c", 3)
    queue.done(held)
    assert len(queue) == 0


def test_lanes_pop_empty_raises() -> None:
    """An empty Lanes has no next key, also after superseded entries."""
    lanes: Lanes[str] = Lanes()
    lanes.push("a")
    lanes.push_priority("a", 1)
    assert lanes.pop() == "a"
    assert not lanes
    with pytest.raises(IndexError):
        lanes.pop()


async def test_lower_work_waits_while_a_prioritized_key_is_in_flight(queue: WorkQueue[str]) -> None:
    """A second worker gets neither a lower lane key nor a FIFO key until the critical one is done."""
    queue.add("fifo")
    queue.add_prioritized("critical", 100)
    queue.add_prioritized("agent", 0)
    assert await queue.get() == "critical"
    second = asyncio.create_task(queue.get())
    await settle()
    assert not second.done(), "lower-priority work started beside the critical key"
    queue.done("critical")
    assert await second == "agent"
    third = asyncio.create_task(queue.get())
    await settle()
    assert not third.done(), "FIFO work started beside a prioritized key"
    queue.done("agent")
    assert await third == "fifo"


async def test_equal_priorities_run_in_parallel(queue: WorkQueue[str]) -> None:
    """Ties do not hold each other back."""
    queue.add_prioritized("a", 5)
    queue.add_prioritized("b", 5)
    assert [await queue.get(), await queue.get()] == ["a", "b"]


async def test_a_hung_key_holds_the_gate_only_for_the_hold(clock: FakeClock) -> None:
    """After priority_hold seconds a stuck prioritized sync no longer blocks other work."""
    queue: WorkQueue[str] = WorkQueue(name="test", clock=clock, priority_hold=10.0)
    queue.add_prioritized("critical", 100)
    queue.add("fifo")
    assert await queue.get() == "critical"
    second = asyncio.create_task(queue.get())
    await settle()
    clock.advance(9.0)
    await settle()
    assert not second.done()
    clock.advance(1.5)
    await eventually(second.done)
    assert second.result() == "fifo"
