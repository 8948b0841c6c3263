"""The machine-steadiness record of the benchmarks: pure arithmetic over timings and /proc/stat."""

from __future__ import annotations

import pytest

from benchmarks.harness.machine import Steal, spread, timing_summary

PROC_STAT = """cpu  74157 2899 9704 224031 308 0 1525 23 0 0
cpu0 37000 1400 4800 112000 150 0 760 11 0 0
intr 123 0 0
"""


@pytest.mark.parametrize(("timings", "expected"), [
    pytest.param([], 0.0, id="none"),
    pytest.param([8.0], 0.0, id="one"),
    pytest.param([8.0] * 10, 0.0, id="steady"),
    # Ten timings: p10 is the 2nd fastest, p90 the 2nd slowest (nearest rank over 9 gaps).
    pytest.param([8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 12.0, 20.0], 0.5, id="two-slow"),
    pytest.param([10.0, 20.0], 1.0 / 15.0 * 10.0, id="two"),
])
def test_spread(timings: list[float], expected: float) -> None:
    """The spread is (p90 - p10) / median, and 0 when nothing varies."""
    assert spread(timings) == pytest.approx(expected)


def test_timing_summary_rounds_and_keeps_the_extremes() -> None:
    """A CPU's summary names its median, fastest and slowest loop and the spread."""
    assert timing_summary([8.0, 9.0, 10.0]) == {"median_ms": 9.0, "min_ms": 8.0, "max_ms": 10.0,
                                                 "spread": pytest.approx(0.222, abs=1e-3)}


def test_steal_parse_reads_the_aggregate_line() -> None:
    """Steal is the 8th value of the aggregate cpu line; the total leaves out guest time."""
    steal = Steal.parse(PROC_STAT)
    assert steal == Steal(stolen=23, total=74157 + 2899 + 9704 + 224031 + 308 + 0 + 1525 + 23)


def test_steal_parse_refuses_text_without_it() -> None:
    """A /proc/stat without the aggregate line is an error, not a silent zero."""
    with pytest.raises(ValueError, match="aggregate cpu line"):
        Steal.parse("cpu0 1 2 3 4 5 6 7 8\n")


@pytest.mark.parametrize(("before", "after", "expected"), [
    pytest.param(Steal(10, 1000), Steal(20, 1100), 0.1, id="a-tenth"),
    pytest.param(Steal(10, 1000), Steal(10, 2000), 0.0, id="none"),
    pytest.param(Steal(10, 1000), Steal(10, 1000), 0.0, id="no-time"),
])
def test_steal_share_since(before: Steal, after: Steal, expected: float) -> None:
    """The stolen share is stolen jiffies over all jiffies between two readings."""
    assert after.share_since(before) == pytest.approx(expected)
