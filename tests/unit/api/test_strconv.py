"""``parse_int64`` reads integers exactly as Go's ``strconv.ParseInt(s, 10, 64)``."""

from __future__ import annotations

import pytest

from dsctl_api.strconv import INT64_MAX, INT64_MIN, parse_int64


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param("42", 42, id="plain"),
        pytest.param("+5", 5, id="plus-sign"),
        pytest.param("-5", -5, id="minus-sign"),
        pytest.param("007", 7, id="leading-zeros"),
        pytest.param("-0", 0, id="negative-zero"),
        pytest.param("9223372036854775807", INT64_MAX, id="int64-max"),
        pytest.param("-9223372036854775808", INT64_MIN, id="int64-min"),
        pytest.param("9223372036854775808", None, id="above-int64"),
        pytest.param("-9223372036854775809", None, id="below-int64"),
        pytest.param("5_0", None, id="underscore-base10"),
        pytest.param("", None, id="empty"),
        pytest.param("+", None, id="bare-plus"),
        pytest.param("-", None, id="bare-minus"),
        pytest.param("+-5", None, id="two-signs"),
        pytest.param(" 5", None, id="leading-space"),
        pytest.param("5 ", None, id="trailing-space"),
        pytest.param("5\n", None, id="trailing-newline"),
        pytest.param("0x10", None, id="hex-prefix"),
        pytest.param("1e3", None, id="exponent"),
        pytest.param("5.0", None, id="decimal-point"),
        pytest.param("\u0665", None, id="arabic-indic-digit"),
        pytest.param("\uff15", None, id="fullwidth-digit"),
        pytest.param(5, None, id="not-a-string"),
    ],
)
def test_parse_int64(text: object, expected: int | None) -> None:
    """Sign and leading zeros accepted; underscores, spaces, non-ASCII digits and int64 overflow refused."""
    assert parse_int64(text) == expected
