"""Rate limiters: small objects that decide how long a key waits before its next retry.

Each limiter answers ``when(key)`` (seconds to wait, and records the attempt),
``forget(key)`` (stop tracking a key that succeeded or was given up on) and
``num_requeues(key)``. They compose: ``MaxOfRateLimiter`` asks every member and keeps the
longest delay, which is how the default controller limiter combines per-key exponential
backoff with one token bucket shared by all keys.

They hold no tasks and never sleep; the bucket reads time from an injected ``Clock``, so
every delay is exact on a ``FakeClock``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Protocol

from dsctl.workqueue.clock import Clock, RealClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]


class RateLimiter(Protocol):
    """Decides retry delays. ``when`` is not a query: each call counts as one more attempt."""

    def when(self, key: Hashable) -> float:
        """Seconds ``key`` must wait before it is added again; records the attempt."""

    def forget(self, key: Hashable) -> None:
        """Stop tracking ``key``: its next failure starts from the first delay again."""

    def num_requeues(self, key: Hashable) -> int:
        """How many times ``when`` was asked for ``key`` since it was last forgotten."""


class ItemExponentialFailureRateLimiter:
    """Per-key backoff: ``base * 2**failures`` seconds, capped at ``max``.

    With the defaults a key waits 5 ms, 10 ms, 20 ms, 40 ms ... and never more than
    1000 s (reached on the 19th consecutive failure). Only ``forget`` resets a key, so the
    caller must forget keys that succeed, or their failure counts are kept forever.
    """

    def __init__(self, *, base: float = 0.005, max: float = 1000.0) -> None:
        if base < 0 or max < base:
            raise ValueError(f"need 0 <= base <= max, got base={base} max={max}")
        self.base = base
        self.max_delay = max
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        """The delay for this failure of ``key``, then count the failure."""
        exponent = self._failures.get(key, 0)
        self._failures[key] = exponent + 1
        # 2.0**exponent overflows a float past 1023; any such delay is far beyond the cap.
        if exponent >= 1023:
            return self.max_delay
        return min(self.base * 2.0**exponent, self.max_delay)

    def forget(self, key: Hashable) -> None:
        """Reset ``key``'s failure count."""
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        """Failures counted for ``key`` since it was last forgotten."""
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """One token bucket for all keys: ``qps`` tokens per second, holding at most ``burst``.

    Like ``golang.org/x/time/rate``'s ``Reserve``, every ``when`` takes a token even when
    none is left: the bucket goes into debt and the caller is told how long until its
    token exists. The bucket starts full, so the first ``burst`` calls return 0 and the
    next ones 1/qps, 2/qps, ... seconds. Keys are not tracked: ``forget`` does nothing.
    """

    def __init__(self, *, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be > 0, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock: Clock = clock if clock is not None else RealClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, key: Hashable) -> float:
        """Reserve one token; return how long until it is available (0 when one is left)."""
        if math.isinf(self.qps):
            return 0.0
        now = self._clock.now()
        # Refill for the time since the last reservation, never above the bucket size.
        elapsed = max(0.0, now - self._last)
        tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
        self._tokens = tokens
        self._last = max(now, self._last)
        return -tokens / self.qps if tokens < 0 else 0.0

    def forget(self, key: Hashable) -> None:
        """Nothing to forget: the bucket is shared by all keys."""

    def num_requeues(self, key: Hashable) -> int:
        """Always 0: the bucket does not count per key."""
        return 0


class MaxOfRateLimiter:
    """Asks every limiter and returns the longest delay (and the highest requeue count).

    Every member's ``when`` is called each time, so each keeps its own count. Because a
    key's long exponential delay also spends a bucket token, the burst can look exceeded
    when several keys are delayed separately; client-go has the same property.
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters: tuple[RateLimiter, ...] = limiters

    def when(self, key: Hashable) -> float:
        """The longest delay any member asks for."""
        return max([limiter.when(key) for limiter in self.limiters])

    def forget(self, key: Hashable) -> None:
        """Forget ``key`` in every member."""
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        """The highest count any member keeps for ``key``."""
        return max(limiter.num_requeues(key) for limiter in self.limiters)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's default: per-key 5 ms .. 1000 s backoff, and 10 retries/s with a burst of 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base=0.005, max=1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
