"""The statistics the current figures use: percentiles, rate ratios over rounds, bootstrap intervals."""

from __future__ import annotations

import math

import pytest

from benchmarks.harness.stats import Round, bootstrap_interval, geometric_mean_ratio, percentile, ratio_of_medians


@pytest.mark.parametrize(("values", "q", "expected"), [
    pytest.param([3.0, 1.0, 2.0], 50, 2.0, id="median-of-three"),
    pytest.param([float(v) for v in range(1, 101)], 99, 99.0, id="p99-of-a-hundred"),
    pytest.param([5.0], 99, 5.0, id="one-value"),
    pytest.param([1.0, 2.0], 50, 1.0, id="median-of-two-is-the-lower"),
])
def test_percentile_is_nearest_rank(values: list[float], q: float, expected: float) -> None:
    """The q-th percentile is the value at rank ceil(q/100 * n)."""
    assert percentile(values, q) == expected


def test_percentile_of_nothing_is_nan() -> None:
    """No values, no percentile."""
    assert math.isnan(percentile([], 50))


@pytest.mark.parametrize(("rounds", "expected"), [
    ([(100.0, 80.0)], 0.8),
    ([(100.0, 80.0), (200.0, 160.0)], 0.8),
    # 0.5 and 2.0 average to 1 in logs, not 1.25 as plain ratios would.
    ([(100.0, 50.0), (100.0, 200.0)], 1.0),
])
def test_geometric_mean_ratio(rounds: list[Round], expected: float) -> None:
    """The ratios average in logs: 0.5 and 2.0 make 1."""
    assert geometric_mean_ratio(rounds) == pytest.approx(expected)


@pytest.mark.parametrize(("rounds", "expected"), [
    ([(100.0, 80.0)], 0.8),
    # medians 200 and 150, whichever rounds they came from
    ([(100.0, 150.0), (200.0, 100.0), (300.0, 160.0)], 0.75),
])
def test_ratio_of_medians(rounds: list[Round], expected: float) -> None:
    """The measured median over the baseline median, whichever rounds they came from."""
    assert ratio_of_medians(rounds) == pytest.approx(expected)


def test_bootstrap_interval_of_a_constant_ratio_is_that_ratio() -> None:
    """Rounds with one ratio resample to that ratio."""
    rounds = [(float(base), base * 0.8) for base in (900, 1000, 1300, 1700)]
    low, high = bootstrap_interval(rounds, geometric_mean_ratio, samples=500)
    assert low == pytest.approx(0.8)
    assert high == pytest.approx(0.8)


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible() -> None:
    """The interval holds the estimate, repeats for a seed and narrows with the level."""
    rounds = [(1000.0, 700.0), (1200.0, 1000.0), (900.0, 850.0), (1500.0, 1100.0), (1100.0, 800.0)]
    first = bootstrap_interval(rounds, geometric_mean_ratio, samples=800, seed=3)
    assert first == bootstrap_interval(rounds, geometric_mean_ratio, samples=800, seed=3)
    assert first[0] < geometric_mean_ratio(rounds) < first[1]
    narrow = bootstrap_interval(rounds, geometric_mean_ratio, samples=800, seed=3, level=0.5)
    assert first[0] <= narrow[0] <= narrow[1] <= first[1]


def test_bootstrap_interval_needs_rounds() -> None:
    """Nothing to resample is an error."""
    with pytest.raises(ValueError, match="no rounds"):
        bootstrap_interval([], geometric_mean_ratio)
