"""The scale benchmark's report: growth ratios between two sizes and the headline rows, from results alone."""

from __future__ import annotations

from typing import Any

from benchmarks.scale import dig, growth, headline


def _size(*, raw: float, cold: float, baseline: float, p99: float | None,
          failed_relist: bool = False) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "raw": {"creates_per_second": raw},
        "posted_by_daemonset": [{"creates_per_second": 10.0}, {"creates_per_second": baseline}],
        "cold_start": {"sim_log": {"creates_per_second": cold}, "controller_cpu_ms_per_pod": 0.5},
        "node_join": {"all_pods_created": {"p50_ms": 20.0, "p99_ms": p99}},
    }
    figures["forced_relist"] = {"error": "TimeoutError()"} if failed_relist else {"peak_over_steady": 1.1}
    return figures


def test_growth_divides_the_large_size_by_the_small_and_skips_what_is_missing() -> None:
    """A ratio needs a number at both sizes: a failed or absent stage gives none."""
    small = _size(raw=2000.0, cold=1600.0, baseline=2000.0, p99=40.0)
    large = _size(raw=1800.0, cold=1200.0, baseline=1500.0, p99=None, failed_relist=True)
    assert growth(small, large) == {
        "raw_creates_per_second": 0.9,
        "cold_start_creates_per_second": 0.75,
        "controller_cpu_ms_per_created_pod": 1.0,
        "node_join_p50_ms": 1.0,
    }


def test_headline_compares_the_cold_start_with_the_last_raw_posting() -> None:
    """The cold start's baseline is the DaemonSet the raw client posted last, on the same simulator."""
    rows = headline({"sizes": {"5000": _size(raw=2000.0, cold=1600.0, baseline=2000.0, p99=40.0)}})
    assert rows["5000"]["cold_start_over_raw"] == 0.8
    assert rows["5000"]["relist_peak_over_steady"] == 1.1
    assert rows["5000"]["steady_state_writes"] is None


def test_dig_stops_at_the_first_missing_step() -> None:
    """A path through a missing or non-dict step is None, not an error."""
    assert dig({"a": {"b": 1}}, ("a", "b")) == 1
    assert dig({"a": {"b": 1}}, ("a", "c", "d")) is None
    assert dig({"a": 3}, ("a", "b")) is None
