"""The rate-limiting layer: retries with backoff, on top of the delaying queue.

This is the queue a controller uses. A worker whose sync fails calls
``add_rate_limited(key)``, and the key comes back after the delay the rate limiter picks
(by default growing per key from 5 ms to 1000 s, and at most 10 retries per second overall).
A worker whose sync succeeds calls ``forget(key)`` so the next failure starts small again.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from prometheus_client import CollectorRegistry

from dsctl.workqueue.clock import Clock
from dsctl.workqueue.delaying import DelayingQueue
from dsctl.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]

K = TypeVar("K", bound=Hashable)


class RateLimitingQueue(DelayingQueue[K]):
    """A ``DelayingQueue`` whose retries are paced by a ``RateLimiter``.

    Caller duty: ``forget`` a key once it is processed successfully (or given up on).
    ``forget`` only resets the limiter; ``done`` must still be called.
    Without ``rate_limiter`` the queue uses ``default_controller_rate_limiter`` on its clock.
    """

    def __init__(
        self,
        *,
        name: str = "",
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, registry=registry)
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock=self.clock)
        )

    def add_rate_limited(self, key: K) -> None:
        """Add ``key`` after the delay the rate limiter decides; counts as one requeue."""
        if self.shutting_down:
            return  # asking the limiter would spend a bucket token for nothing
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff. Does not remove a pending retry, and ``done`` is still needed."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How many rate-limited adds ``key`` has had since it was last forgotten."""
        return self.rate_limiter.num_requeues(key)
