"""The priority lane: ``add_prioritized`` is served before the FIFO, by priority, ties in add order."""

from __future__ import annotations

import pytest

from dsctl.workqueue import FakeClock, WorkQueue
from dsctl.workqueue.lanes import Lanes


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
    assert [await queue.get() for _ in order] == order
    assert len(queue) == 0


async def test_prioritized_add_while_processing_replays_in_lane(queue: WorkQueue[str]) -> None:
    """A processing key added with priority is not handed out twice, and comes back ahead of the FIFO."""
    queue.add("a")
    held = await queue.get()
    queue.add("b")
    queue.add_prioritized("a", 7)
    assert len(queue) == 1
    queue.done(held)
    assert [await queue.get(), await queue.get()] == ["a", "b"]


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
