"""Client-side pacing: the QPS/burst token bucket and the jittered retry backoff.

Both decide *when* the next request may go out, so they live together; neither knows HTTP.

Defaults: **50 QPS, burst 100**. kube-controller-manager runs its DaemonSet controller at 20 QPS
and burst 30 (shared with every other controller in that process). dsctl is a single controller
with its own client, and a rollout onto 5,000 nodes needs at least 5,000 creates: 250 s at 20 QPS,
100 s at 50. The server still protects itself with API Priority and Fairness, and every 429 it
sends is honoured (``Retry-After``), so a higher client budget cannot overload it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_BURST", "DEFAULT_QPS", "Backoff", "TokenBucket"]

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """A token bucket: ``burst`` requests at once, then ``qps`` per second on average.

    ``acquire()`` reserves a token and sleeps until it is due, so waiters are served in the order
    they arrived without a lock: the bucket may go negative, and each waiter sleeps for its own
    place in the debt. A cancelled waiter gives its token back. ``qps <= 0`` disables limiting.
    The clock and sleep are injectable for tests.
    """

    def __init__(
        self,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)

    def reserve(self) -> float:
        """Take one token now; return how many seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_acquire(self) -> bool:
        """Take a token only if one is available right now."""
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    async def acquire(self) -> float:
        """Wait for a token; return the seconds waited (0 when a token was free)."""
        delay = self.reserve()
        if delay > 0:
            try:
                await self._sleep(delay)
            except asyncio.CancelledError:
                self._tokens += 1.0
                raise
        return delay


@dataclass
class Backoff:
    """Capped exponential backoff with full jitter, for retries and for reconnect loops.

    The n-th consecutive failure (1-based) waits a uniform random time in
    ``[delay/2, delay]`` where ``delay = min(cap, base * factor**(n-1))``; half the delay is kept
    so that a retry storm never collapses to zero wait. ``reset()`` after a success.
    """

    base: float = 0.2
    factor: float = 2.0
    cap: float = 30.0
    rng: random.Random | None = None
    failures: int = 0

    def peek(self, failures: int) -> float:
        """The un-jittered delay after ``failures`` consecutive failures."""
        if failures <= 0:
            return 0.0
        return min(self.cap, self.base * self.factor ** min(failures - 1, 64))

    def next_delay(self) -> float:
        """Record one more failure and return the jittered delay to wait before trying again."""
        self.failures += 1
        delay = self.peek(self.failures)
        rng = self.rng or random
        return delay / 2 + rng.random() * delay / 2

    def reset(self) -> None:
        """Forget past failures (after a success)."""
        self.failures = 0
