"""The seven client-go work-queue metrics, exported with prometheus_client.

Names, types and buckets follow ``k8s.io/component-base``'s workqueue provider so dashboards
built for kube-controller-manager work unchanged; every series carries the label ``name``:

- ``workqueue_depth`` (gauge): keys waiting to be handed out (dirty keys).
- ``workqueue_adds_total`` (counter): adds that were not deduplicated away.
- ``workqueue_queue_duration_seconds`` (histogram): from the first add to ``get``.
- ``workqueue_work_duration_seconds`` (histogram): from ``get`` to ``done``.
- ``workqueue_unfinished_work_seconds`` (gauge): summed age of all in-flight keys.
- ``workqueue_longest_running_processor_seconds`` (gauge): age of the oldest in-flight key.
- ``workqueue_retries_total`` (counter): ``add_after`` calls, which includes rate-limited adds.

prometheus_client allows one metric family per name in a registry, so the families live in
one ``_Families`` object per registry, shared by every queue registered there; a queue gets
a ``QueueMetrics`` bound to its label. The two "in-flight age" gauges are computed by a
collector at scrape time from the live queues' start times, instead of by a ticking task as
in client-go: the value is always current and there is no task to own or cancel.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from dsctl.workqueue.clock import Clock

__all__ = ["DURATION_BUCKETS", "QueueMetrics", "queue_metrics"]

# 10 ns to 10 s, one bucket per decade, as client-go's ExponentialBuckets(10e-9, 10, 10).
# Built from decimal literals so the bucket bounds print as 1e-08 ... 10.0, not 1.0000000000000001e-07.
DURATION_BUCKETS: tuple[float, ...] = tuple(float(f"1e{exponent}") for exponent in range(-8, 2))

_UNFINISHED = "workqueue_unfinished_work_seconds"
_LONGEST = "workqueue_longest_running_processor_seconds"


class QueueMetrics:
    """The metrics of one queue. The queue calls the hooks; nothing else should.

    Keeps the first-add time of each waiting key and the start time of each in-flight key,
    both read from the queue's clock, so durations are exact on a fake clock.
    """

    def __init__(self, families: _Families, name: str, clock: Clock) -> None:
        self.name = name
        self._clock = clock
        self._depth = families.depth.labels(name)
        self._adds = families.adds.labels(name)
        self._queue_duration = families.queue_duration.labels(name)
        self._work_duration = families.work_duration.labels(name)
        self._retries = families.retries.labels(name)
        self._added_at: dict[Hashable, float] = {}
        self._started_at: dict[Hashable, float] = {}

    def add(self, key: Hashable) -> None:
        """A key became dirty (a new add, not a duplicate)."""
        self._adds.inc()
        self._depth.inc()
        # The first add counts: a key re-added while waiting keeps its original wait time.
        self._added_at.setdefault(key, self._clock.now())

    def get(self, key: Hashable) -> None:
        """A worker took ``key``."""
        now = self._clock.now()
        self._depth.dec()
        self._started_at[key] = now
        added = self._added_at.pop(key, None)
        if added is not None:
            self._queue_duration.observe(now - added)

    def done(self, key: Hashable) -> None:
        """A worker finished ``key``."""
        started = self._started_at.pop(key, None)
        if started is not None:
            self._work_duration.observe(self._clock.now() - started)

    def discard(self, keys: int) -> None:
        """``keys`` waiting keys were dropped by a shutdown: they will never be taken."""
        self._depth.dec(keys)
        self._added_at.clear()

    def retry(self) -> None:
        """``add_after`` was called (rate-limited adds included)."""
        self._retries.inc()

    def in_flight_ages(self) -> tuple[float, float]:
        """(sum of ages, oldest age) of the keys being processed now, in seconds."""
        now = self._clock.now()
        ages = [now - started for started in self._started_at.values()]
        return sum(ages), max(ages, default=0.0)


class _InFlightCollector(Collector):
    """Computes the two in-flight age gauges from the live queues at scrape time."""

    def __init__(self) -> None:
        self.queues: weakref.WeakSet[QueueMetrics] = weakref.WeakSet()

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(_UNFINISHED, "", labels=["name"])
        yield GaugeMetricFamily(_LONGEST, "", labels=["name"])

    def collect(self) -> Iterator[GaugeMetricFamily]:
        unfinished = GaugeMetricFamily(
            _UNFINISHED,
            "Seconds of work in progress that no done() has accounted for yet; large values suggest stuck workers.",
            labels=["name"],
        )
        longest = GaugeMetricFamily(
            _LONGEST, "Seconds the longest-running worker of a queue has been busy.", labels=["name"]
        )
        # Two live queues may share a name (a restarted controller): report them as one.
        totals: dict[str, tuple[float, float]] = {}
        for queue in list(self.queues):
            total, oldest = queue.in_flight_ages()
            prev_total, prev_oldest = totals.get(queue.name, (0.0, 0.0))
            totals[queue.name] = (prev_total + total, max(prev_oldest, oldest))
        for name, (total, oldest) in sorted(totals.items()):
            unfinished.add_metric([name], total)
            longest.add_metric([name], oldest)
        yield unfinished
        yield longest


class _Families:
    """The metric families of one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["name"]
        self.depth = Gauge("workqueue_depth", "Current depth of the work queue.", labels, registry=registry)
        self.adds = Counter("workqueue_adds", "Adds handled by the work queue.", labels, registry=registry)
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the work queue before a worker takes it.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "Seconds a worker spends on one key.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.retries = Counter("workqueue_retries", "Delayed and rate-limited adds.", labels, registry=registry)
        self.in_flight = _InFlightCollector()
        registry.register(self.in_flight)


# Weak keys: a registry dropped by its owner (a finished test) takes its families with it.
_families_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, _Families] = weakref.WeakKeyDictionary()


def queue_metrics(registry: CollectorRegistry, name: str, *, clock: Clock) -> QueueMetrics:
    """Bind the work-queue metrics of ``registry`` to one queue ``name``.

    The first call for a registry registers the seven families in it; later calls reuse them.
    A name already in use shares its counters, and its in-flight gauges sum over both queues.
    """
    if not name:
        raise ValueError("a queue needs a non-empty name to export metrics")
    families = _families_by_registry.get(registry)
    if families is None:
        families = _Families(registry)
        _families_by_registry[registry] = families
    metrics = QueueMetrics(families, name, clock)
    families.in_flight.queues.add(metrics)
    return metrics
