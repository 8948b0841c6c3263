"""``WorkerPool``: each sync outcome mapped to one queue action and one ``dsctl_sync_total`` label."""

from __future__ import annotations

from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from dsctl.controller.workers import Deferred, Done, Outcome, Retry, Terminal, WorkerPool


class RecordingQueue:
    """The queue calls a worker makes after a sync, recorded in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def forget(self, key: str) -> None:
        self.calls.append(("forget", key))

    def add_after(self, key: str, delay: float) -> None:
        self.calls.append(("add_after", key, delay))

    def add_rate_limited(self, key: str) -> None:
        self.calls.append(("add_rate_limited", key))

    def num_requeues(self, key: str) -> int:
        return 0


@pytest.mark.parametrize(("outcome", "calls", "label"), [
    pytest.param(Done(), [("forget", "ns/a")], "success", id="done"),
    pytest.param(Done(requeue_after=2.0), [("forget", "ns/a"), ("add_after", "ns/a", 2.0)], "success",
                 id="done-requeue"),
    pytest.param(Retry("boom"), [("add_rate_limited", "ns/a")], "error", id="retry"),
    pytest.param(Terminal("invalid"), [("forget", "ns/a")], "terminal", id="terminal"),
    # Put off, nothing succeeded: the key keeps its failure history (no forget).
    pytest.param(Deferred(requeue_after=0.6), [("add_after", "ns/a", 0.6)], "deferred", id="deferred"),
])
async def test_each_outcome_maps_to_one_queue_action(outcome: Outcome, calls: list[tuple[Any, ...]],
                                                     label: str) -> None:
    queue = RecordingQueue()
    registry = CollectorRegistry()

    async def sync(key: str, sync_id: str) -> Outcome:
        return outcome

    pool = WorkerPool(queue=cast(Any, queue), sync=sync, workers=1, registry=registry)
    assert await pool._run("ns/a", "0-1") == outcome
    assert queue.calls == calls
    assert registry.get_sample_value("dsctl_sync_total", {"result": label}) == 1.0


async def test_an_exception_is_retried_rate_limited() -> None:
    queue = RecordingQueue()
    registry = CollectorRegistry()

    async def sync(key: str, sync_id: str) -> Outcome:
        raise RuntimeError("bug")

    pool = WorkerPool(queue=cast(Any, queue), sync=sync, workers=1, registry=registry)
    outcome = await pool._run("ns/a", "0-1")
    assert isinstance(outcome, Retry)
    assert queue.calls == [("add_rate_limited", "ns/a")]
    assert registry.get_sample_value("dsctl_sync_total", {"result": "exception"}) == 1.0
