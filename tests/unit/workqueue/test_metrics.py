"""The seven workqueue_* metrics, read back from a registry after scripted queue activity."""

from __future__ import annotations

import gc

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from dsctl.workqueue import DURATION_BUCKETS, FakeClock, RateLimitingQueue, WorkQueue, queue_metrics

METRIC_NAMES = [
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds",
    "workqueue_work_duration_seconds",
    "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds",
    "workqueue_retries_total",
]


def sample(registry: CollectorRegistry, metric: str, name: str = "ds", **labels: str) -> float | None:
    """One sample value of a series labelled name=`name`."""
    return registry.get_sample_value(metric, {"name": name, **labels})


async def test_scripted_sequence_produces_exact_values(registry: CollectorRegistry, clock: FakeClock) -> None:
    """Adds, waits, work and retries on a fake clock show up as exact metric values."""
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="ds", clock=clock, registry=registry)
    queue.add("ns/a")
    queue.add("ns/b")
    queue.add("ns/a")  # deduplicated: not an add
    assert sample(registry, "workqueue_adds_total") == 2
    assert sample(registry, "workqueue_depth") == 2

    clock.advance(1.0)
    a = await queue.get()  # waited 1.0 s
    assert sample(registry, "workqueue_depth") == 1
    clock.advance(0.5)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0.5
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0.5

    b = await queue.get()  # waited 1.5 s
    clock.advance(1.0)
    assert sample(registry, "workqueue_unfinished_work_seconds") == 2.5  # 1.5 + 1.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 1.5

    queue.add_rate_limited(a)  # a retry, due in 5 ms
    queue.done(a)  # worked 1.5 s
    queue.forget(b)
    queue.done(b)  # worked 1.0 s
    assert sample(registry, "workqueue_retries_total") == 1
    assert sample(registry, "workqueue_unfinished_work_seconds") == 0.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 0.0

    clock.advance(0.005)
    assert sample(registry, "workqueue_adds_total") == 3
    assert sample(registry, "workqueue_depth") == 1

    assert sample(registry, "workqueue_queue_duration_seconds_count") == 2
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 2.5
    assert sample(registry, "workqueue_queue_duration_seconds_bucket", le="0.1") == 0
    assert sample(registry, "workqueue_queue_duration_seconds_bucket", le="1.0") == 1  # le is inclusive
    assert sample(registry, "workqueue_queue_duration_seconds_bucket", le="10.0") == 2
    assert sample(registry, "workqueue_work_duration_seconds_count") == 2
    assert sample(registry, "workqueue_work_duration_seconds_sum") == 2.5
    assert sample(registry, "workqueue_work_duration_seconds_bucket", le="1.0") == 1
    queue.shut_down()
    assert sample(registry, "workqueue_depth") == 0, "keys dropped by shutdown still counted as depth"


async def test_queue_duration_counts_from_the_first_add(registry: CollectorRegistry, clock: FakeClock) -> None:
    """A key added again while waiting keeps its original wait time."""
    queue: WorkQueue[str] = WorkQueue(name="ds", clock=clock, registry=registry)
    queue.add("ns/a")
    clock.advance(2.0)
    queue.add("ns/a")
    clock.advance(1.0)
    queue.done(await queue.get())
    assert sample(registry, "workqueue_queue_duration_seconds_sum") == 3.0


def test_histograms_use_client_go_buckets(registry: CollectorRegistry, clock: FakeClock) -> None:
    """Duration buckets are 10 ns to 10 s, one per decade, like ExponentialBuckets(10e-9, 10, 10)."""
    assert DURATION_BUCKETS == (1e-08, 1e-07, 1e-06, 1e-05, 1e-04, 1e-03, 1e-02, 1e-01, 1.0, 10.0)
    queue: WorkQueue[str] = WorkQueue(name="ds", clock=clock, registry=registry)
    queue.add("k")
    for bound in ["1e-08", "1e-07", "0.001", "1.0", "10.0", "+Inf"]:
        assert sample(registry, "workqueue_queue_duration_seconds_bucket", le=bound) == 0


def test_exposition_has_all_seven_metrics(registry: CollectorRegistry, clock: FakeClock) -> None:
    """/metrics text lists every client-go workqueue metric with the name label."""
    queue: WorkQueue[str] = WorkQueue(name="ds", clock=clock, registry=registry)
    text = generate_latest(registry).decode()
    for metric in METRIC_NAMES:
        assert f"# TYPE {metric.removesuffix('_total')}" in text, metric
    assert 'workqueue_unfinished_work_seconds{name="ds"} 0.0' in text
    assert 'workqueue_longest_running_processor_seconds{name="ds"} 0.0' in text
    queue.shut_down()


async def test_queues_sharing_a_registry_do_not_collide(registry: CollectorRegistry, clock: FakeClock) -> None:
    """Two queues with different names in one registry keep separate series."""
    first: WorkQueue[str] = WorkQueue(name="daemonset", clock=clock, registry=registry)
    second: WorkQueue[str] = WorkQueue(name="daemonset-node-updates", clock=clock, registry=registry)
    first.add("ns/a")
    second.add("node-1")
    second.add("node-2")
    await second.get()
    clock.advance(1.0)
    assert sample(registry, "workqueue_adds_total", "daemonset") == 1
    assert sample(registry, "workqueue_adds_total", "daemonset-node-updates") == 2
    assert sample(registry, "workqueue_unfinished_work_seconds", "daemonset") == 0.0
    assert sample(registry, "workqueue_unfinished_work_seconds", "daemonset-node-updates") == 1.0


async def test_queues_sharing_a_name_report_one_series(registry: CollectorRegistry, clock: FakeClock) -> None:
    """A second live queue with the same name adds to the same series instead of failing."""
    old: WorkQueue[str] = WorkQueue(name="ds", clock=clock, registry=registry)
    new: WorkQueue[str] = WorkQueue(name="ds", clock=clock, registry=registry)
    old.add("ns/a")
    new.add("ns/b")
    await old.get()
    await new.get()
    clock.advance(2.0)
    assert sample(registry, "workqueue_adds_total") == 2
    assert sample(registry, "workqueue_unfinished_work_seconds") == 4.0
    assert sample(registry, "workqueue_longest_running_processor_seconds") == 2.0


def test_collected_queue_leaves_the_in_flight_gauges(registry: CollectorRegistry, clock: FakeClock) -> None:
    """A garbage-collected queue stops being reported by the scrape-time gauges."""
    queue: WorkQueue[str] = WorkQueue(name="gone", clock=clock, registry=registry)
    assert sample(registry, "workqueue_unfinished_work_seconds", "gone") == 0.0
    del queue
    gc.collect()
    assert sample(registry, "workqueue_unfinished_work_seconds", "gone") is None


def test_metrics_need_a_queue_name(registry: CollectorRegistry, clock: FakeClock) -> None:
    """Exporting metrics for an unnamed queue is refused: its series could not be told apart."""
    with pytest.raises(ValueError, match="non-empty name"):
        queue_metrics(registry, "", clock=clock)
    with pytest.raises(ValueError, match="non-empty name"):
        WorkQueue(clock=clock, registry=registry)


def test_queue_without_registry_exports_nothing(clock: FakeClock) -> None:
    """Metrics are opt-in: a queue built without a registry registers nothing anywhere."""
    queue: WorkQueue[str] = WorkQueue(name="quiet", clock=clock)
    queue.add("k")
    assert queue._metrics is None
