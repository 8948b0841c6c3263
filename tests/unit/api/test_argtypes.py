"""argparse value types: what each takes, and the one line that refuses the rest."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from dsctl_api.argtypes import int_range, non_negative


@pytest.mark.parametrize(("parse", "text", "value"), [
    pytest.param(non_negative, "0", 0.0, id="seconds-zero"),
    pytest.param(non_negative, "2.5", 2.5, id="seconds-fraction"),
    pytest.param(int_range(0), "0", 0, id="count-zero"),
    pytest.param(int_range(1), "250", 250, id="positive"),
    pytest.param(int_range(0, 65535), "65535", 65535, id="port-top"),
])
def test_values_taken(parse: Callable[[str], float], text: str, value: float) -> None:
    """A value in range parses to its number."""
    assert parse(text) == value


@pytest.mark.parametrize(("parse", "text", "message"), [
    pytest.param(non_negative, "-1", "must not be negative: -1", id="seconds-negative"),
    pytest.param(non_negative, "nan", "must not be negative: nan", id="seconds-nan"),
    pytest.param(non_negative, "soon", "not a number: 'soon'", id="seconds-word"),
    pytest.param(int_range(1), "0", "must be at least 1: 0", id="positive-zero"),
    pytest.param(int_range(0), "1.5", "not a whole number: '1.5'", id="count-fraction"),
    pytest.param(int_range(0, 65535), "65536", "must be between 0 and 65535: 65536", id="port-over"),
])
def test_values_refused(parse: Callable[[str], float], text: str, message: str) -> None:
    """A bad value is refused with one line that names the value."""
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse(text)
    assert str(refused.value) == message
