"""The lower bound of a rolling update: waves of maxUnavailable nodes, each terminating and starting."""

from __future__ import annotations

import pytest

from benchmarks.harness.bounds import RolloutBound, rolling_update_bound


@pytest.mark.parametrize(("desired", "max_unavailable", "startup", "termination", "expected"), [
    pytest.param(1000, "10%", 1.0, 1.0, RolloutBound(budget=100, waves=10, seconds=20.0), id="ten-percent"),
    pytest.param(100_000, "10%", 0.5, 1.0, RolloutBound(budget=10_000, waves=10, seconds=15.0), id="large"),
    pytest.param(1001, "10%", 1.0, 1.0, RolloutBound(budget=101, waves=10, seconds=20.0), id="percent-rounds-up"),
    pytest.param(10, 3, 1.0, 0.0, RolloutBound(budget=3, waves=4, seconds=4.0), id="absolute-in-place"),
    pytest.param(10, 0, 1.0, 1.0, RolloutBound(budget=1, waves=10, seconds=20.0), id="zero-counts-as-one"),
    pytest.param(0, "10%", 1.0, 1.0, RolloutBound(budget=1, waves=0, seconds=0.0), id="nothing-to-update"),
])
def test_rolling_update_bound(desired: int, max_unavailable: int | str, startup: float, termination: float,
                              expected: RolloutBound) -> None:
    """The budget rounds up like the DaemonSet controller's; the bound is waves x (termination + startup)."""
    assert rolling_update_bound(desired, max_unavailable, startup=startup, termination=termination) == expected


@pytest.mark.parametrize(("desired", "rate", "write_seconds", "api_seconds"), [
    pytest.param(100_000, 2000.0, 100.0, 100.0, id="writes-dominate-a-large-fleet"),
    pytest.param(5000, 2000.0, 5.0, 15.0, id="waves-dominate-a-small-one"),
    pytest.param(5000, None, 0.0, 15.0, id="no-rate-is-the-wave-bound"),
])
def test_the_write_bound_counts_a_delete_and_a_create_per_node(
        desired: int, rate: float | None, write_seconds: float, api_seconds: float) -> None:
    """Each node costs two writes at the raw rate; the API bound is the larger of the two bounds, not their sum."""
    bound = rolling_update_bound(desired, "10%", startup=0.5, termination=1.0, write_rate=rate)
    assert bound.write_seconds == pytest.approx(write_seconds)
    assert bound.api_seconds == pytest.approx(api_seconds)
