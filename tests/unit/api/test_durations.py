"""``parse_duration``: Go's ``time.ParseDuration``, as Kubernetes flags take durations."""

from __future__ import annotations

import pytest

from dsctl_api.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("10m", 600.0, id="minutes"),
        pytest.param("90s", 90.0, id="seconds"),
        pytest.param("1h30m", 5400.0, id="compound"),
        pytest.param("1.5h", 5400.0, id="fraction"),
        pytest.param(".5s", 0.5, id="leading-dot"),
        pytest.param("300ms", 0.3, id="milliseconds"),
        pytest.param("2us", 2e-6, id="microseconds"),
        pytest.param("-1m", -60.0, id="negative"),
        pytest.param("+5s", 5.0, id="plus"),
        pytest.param("0", 0.0, id="bare-zero"),
    ],
)
def test_go_durations_parse(text: str, seconds: float) -> None:
    """What Go accepts reads as its seconds."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("10", id="no-unit"),
        pytest.param("5 m", id="space"),
        pytest.param("m", id="unit-alone"),
        pytest.param("1d", id="days-are-not-go"),
        pytest.param(".s", id="dot-alone"),
        pytest.param("-", id="sign-alone"),
    ],
)
def test_what_go_refuses_is_refused(text: str) -> None:
    """What Go refuses raises ValueError quoting the text."""
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)
