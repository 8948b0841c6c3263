"""The package's public surface: exactly the names in ``__all__``, each importable."""

from __future__ import annotations

import dsctl.workqueue

EXPECTED = {
    "BucketRateLimiter",
    "Clock",
    "DURATION_BUCKETS",
    "DelayingQueue",
    "FakeClock",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "QueueMetrics",
    "RateLimiter",
    "RateLimitingQueue",
    "RealClock",
    "ShutDown",
    "Timer",
    "WorkQueue",
    "default_controller_rate_limiter",
    "queue_metrics",
}


def test_all_lists_exactly_the_public_api() -> None:
    """``__all__`` is the agreed public API and every name in it resolves."""
    assert set(dsctl.workqueue.__all__) == EXPECTED
    for name in dsctl.workqueue.__all__:
        assert getattr(dsctl.workqueue, name) is not None


def test_layers_stack_one_capability_each() -> None:
    """Each queue layer extends the one below it, so a rate-limiting queue is usable as a plain queue."""
    assert issubclass(dsctl.workqueue.RateLimitingQueue, dsctl.workqueue.DelayingQueue)
    assert issubclass(dsctl.workqueue.DelayingQueue, dsctl.workqueue.WorkQueue)
