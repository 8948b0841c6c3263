"""Rate limiters: exact delays on a fake clock, per-key reset, and composition."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dsctl.workqueue import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_delays_double_from_5ms_and_cap_at_1000s() -> None:
    """Consecutive failures of one key wait 5 ms, 10 ms, 20 ms, 40 ms ... and never more than 1000 s."""
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("ns/a") for _ in range(25)]
    expected = [min(0.005 * 2**n, 1000.0) for n in range(25)]
    assert delays == expected
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == 655.36
    assert delays[18:] == [1000.0] * 7
    assert limiter.num_requeues("ns/a") == 25


def test_exponential_forget_resets_only_that_key() -> None:
    """forget() restarts one key's backoff at the base delay and leaves other keys alone."""
    limiter = ItemExponentialFailureRateLimiter()
    for _ in range(3):
        limiter.when("ns/a")
        limiter.when("ns/b")
    limiter.forget("ns/a")
    assert limiter.num_requeues("ns/a") == 0
    assert limiter.when("ns/a") == 0.005
    assert limiter.when("ns/b") == 0.04
    limiter.forget("ns/never-seen")  # no error for unknown keys


def test_exponential_survives_failure_counts_beyond_float_range() -> None:
    """After thousands of failures the delay stays at the cap instead of overflowing."""
    limiter = ItemExponentialFailureRateLimiter(base=0.001, max=60.0)
    delays = [limiter.when("ns/a") for _ in range(2_000)]
    assert delays[-1] == 60.0


@pytest.mark.parametrize(
    ("base", "cap", "expected"),
    [
        pytest.param(1.0, 4.0, [1.0, 2.0, 4.0, 4.0], id="small-cap"),
        pytest.param(0.001, 1000.0, [0.001, 0.002, 0.004, 0.008], id="client-go-item-default"),
        pytest.param(2.0, 2.0, [2.0, 2.0, 2.0, 2.0], id="constant"),
        pytest.param(0.0, 1.0, [0.0, 0.0, 0.0, 0.0], id="zero-base"),
    ],
)
def test_exponential_with_custom_bounds(base: float, cap: float, expected: list[float]) -> None:
    """Base and cap are honoured exactly."""
    limiter = ItemExponentialFailureRateLimiter(base=base, max=cap)
    assert [limiter.when("k") for _ in expected] == expected


def test_bucket_allows_the_burst_then_spaces_by_one_over_qps(clock: FakeClock) -> None:
    """A full bucket of 100 lets 100 retries through at once, then each next one waits 0.1 s longer."""
    limiter = BucketRateLimiter(qps=10.0, burst=100, clock=clock)
    delays = [limiter.when(f"ns/{index}") for index in range(105)]
    assert delays[:100] == [0.0] * 100
    assert delays[100:] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])


def test_bucket_refills_at_qps_up_to_the_burst(clock: FakeClock) -> None:
    """Tokens come back at qps per second and never beyond the bucket size."""
    limiter = BucketRateLimiter(qps=10.0, burst=5, clock=clock)
    assert [limiter.when("k") for _ in range(5)] == [0.0] * 5
    clock.advance(0.3)  # three tokens back
    assert [limiter.when("k") for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])
    clock.advance(3_600.0)  # refill is capped at the burst
    assert [limiter.when("k") for _ in range(6)] == pytest.approx([0.0] * 5 + [0.1])


def test_bucket_debt_is_paid_back_before_new_tokens(clock: FakeClock) -> None:
    """Reservations beyond the bucket are debt: time first pays it back, like x/time/rate."""
    limiter = BucketRateLimiter(qps=2.0, burst=1, clock=clock)
    assert limiter.when("k") == 0.0
    assert limiter.when("k") == 0.5
    assert limiter.when("k") == 1.0
    clock.advance(1.0)  # exactly pays the two reserved tokens
    assert limiter.when("k") == pytest.approx(0.5)


def test_bucket_does_not_track_keys(clock: FakeClock) -> None:
    """The bucket is shared: no requeue counts, and forget is a no-op."""
    limiter = BucketRateLimiter(qps=1.0, burst=1, clock=clock)
    limiter.when("k")
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert limiter.when("k") == 1.0


def test_max_of_takes_the_longest_delay_and_highest_count(clock: FakeClock) -> None:
    """MaxOf asks every member each time and returns the worst answer; forget reaches all members."""
    slow = ItemExponentialFailureRateLimiter(base=1.0, max=100.0)
    fast = ItemExponentialFailureRateLimiter(base=0.5, max=0.5)
    limiter = MaxOfRateLimiter(fast, slow)
    assert [limiter.when("k") for _ in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert fast.num_requeues("k") == slow.num_requeues("k") == 4
    assert limiter.num_requeues("k") == 4
    limiter.forget("k")
    assert fast.num_requeues("k") == slow.num_requeues("k") == 0


def test_default_controller_limiter_combines_backoff_and_bucket(clock: FakeClock) -> None:
    """The default is max(5 ms..1000 s per key, 10 qps burst 100): a 101st retry in a burst waits 0.1 s."""
    limiter = default_controller_rate_limiter(clock=clock)
    assert limiter.when("ns/hot") == 0.005
    assert limiter.when("ns/hot") == 0.01
    for index in range(98):
        assert limiter.when(f"ns/{index}") == 0.005
    assert limiter.when("ns/late") == pytest.approx(0.1)
    assert limiter.num_requeues("ns/hot") == 2


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: ItemExponentialFailureRateLimiter(base=-1.0), id="negative-base"),
        pytest.param(lambda: ItemExponentialFailureRateLimiter(base=2.0, max=1.0), id="cap-below-base"),
        pytest.param(lambda: BucketRateLimiter(qps=0.0), id="zero-qps"),
        pytest.param(lambda: BucketRateLimiter(qps=float("nan")), id="nan-qps"),
        pytest.param(lambda: BucketRateLimiter(burst=0), id="zero-burst"),
        pytest.param(MaxOfRateLimiter, id="empty-max-of"),
    ],
)
def test_invalid_limiter_settings_are_rejected(make: Callable[[], object]) -> None:
    """Settings that could only misbehave raise ValueError at construction."""
    with pytest.raises(ValueError):
        make()
