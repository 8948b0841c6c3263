"""An asyncio port of client-go's ``util/workqueue``: the queue between informers and workers.

Event handlers ``add`` keys ("namespace/name"); worker coroutines ``get`` them, sync, and
call ``done``. The queue deduplicates keys, never gives one key to two workers at once,
replays a key that was added while it was being worked, and paces retries.

Layers, each adding one capability to the one below:

- ``WorkQueue``: dedup, per-key exclusivity, FIFO fairness, shutdown with drain; beyond
  client-go, ``add_prioritized`` (a priority lane ahead of the FIFO, see ``lanes``).
- ``DelayingQueue``: ``add_after(key, delay)``.
- ``RateLimitingQueue``: ``add_rate_limited``, ``forget``, ``num_requeues``, paced by a
  ``RateLimiter`` (``ItemExponentialFailureRateLimiter``, ``BucketRateLimiter``,
  ``MaxOfRateLimiter``, ``default_controller_rate_limiter``).

Time comes from a ``Clock`` (``RealClock`` by default, ``FakeClock`` in tests). Metrics
(the seven ``workqueue_*`` series, labelled ``name``) are exported when a prometheus
``registry`` is passed.

A worker loop::

    queue: RateLimitingQueue[str] = RateLimitingQueue(name="daemonset", registry=registry)

    async def worker() -> None:
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                await sync(key)
            except Exception:
                log.exception("sync_failed", key=key)
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            finally:
                queue.done(key)

    # On SIGTERM: stop intake, let in-flight syncs finish, give up after 30 s.
    if not await queue.shut_down_with_drain(timeout=30.0):
        ...  # cancel the worker tasks
"""

from dsctl.workqueue.clock import Clock, FakeClock, RealClock, Timer
from dsctl.workqueue.delaying import DelayingQueue
from dsctl.workqueue.metrics import DURATION_BUCKETS, QueueMetrics, queue_metrics
from dsctl.workqueue.queue import ShutDown, WorkQueue
from dsctl.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from dsctl.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "DURATION_BUCKETS",
    "BucketRateLimiter",
    "Clock",
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
]
