"""``gojson`` writes the bytes Go's encoding/json writes, so byte-compared fields survive a round trip."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from dsctl_api.gojson import compact, encode, go_float, html_escape_changes

# A revision's data as kube-controller-manager writes it (getPatch: typed object -> map -> Marshal).
KCM_DATA = (b'{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,'
            b'"labels":{"app":"agent"}},"spec":{"containers":[{"command":["sh","-c",'
            b'"a \\u0026\\u0026 b \\u003e /x \\u003c /y"],"image":"agent:1","name":"agent",'
            b'"resources":{},"terminationMessagePath":"/dev/termination-log"}],'
            b'"terminationGracePeriodSeconds":30}}}}')


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("a && b", b'"a \\u0026\\u0026 b"', id="ampersand"),
        pytest.param("<x>", b'"\\u003cx\\u003e"', id="angle-brackets"),
        pytest.param("\u2028\u2029", b'"\\u2028\\u2029"', id="line-separators"),
        pytest.param("\b\f\n\r\t\x01\x7f", b'"\\b\\f\\n\\r\\t\\u0001\x7f"', id="control-characters"),
        pytest.param('q"\\', b'"q\\"\\\\"', id="quote-backslash"),
        pytest.param("é☃", "\"é☃\"".encode(), id="utf8-raw"),
        pytest.param({"a&": 1}, b'{"a\\u0026":1}', id="keys-escaped-too"),
        pytest.param(80.0, b"80", id="integral-float"),
        pytest.param(1e16, b"10000000000000000", id="float-positional-below-1e21"),
        pytest.param(1e21, b"1e+21", id="float-exponent-from-1e21"),
        pytest.param(1.5e-7, b"1.5e-7", id="small-float-exponent-trimmed"),
        pytest.param(1e-6, b"0.000001", id="float-1e-6-positional"),
        pytest.param(-0.0, b"-0", id="negative-zero"),
        pytest.param(10**20, b"100000000000000000000", id="int-beyond-64-bits"),
        pytest.param([None, True, False], b"[null,true,false]", id="literals"),
    ],
)
def test_encode_matches_go(value: Any, expected: bytes) -> None:
    """Strings HTML-escaped, floats in Go's shortest form, nothing else changed."""
    assert encode(value) == expected


def test_kcm_revision_round_trips_byte_for_byte() -> None:
    """A revision written by kube-controller-manager, decoded and encoded again, is the same bytes."""
    decoded = orjson.loads(KCM_DATA)
    assert encode(decoded) == KCM_DATA
    assert encode(decoded, sort_keys=True) == KCM_DATA


def test_key_order_kept_unless_sorted() -> None:
    """Keys keep the order they were read in; sort_keys gives Go's order for a map."""
    value = {"b": 1, "a": {"d": 2, "c": 3}}
    assert encode(value) == b'{"b":1,"a":{"d":2,"c":3}}'
    assert encode(value, sort_keys=True) == b'{"a":{"c":3,"d":2},"b":1}'


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(b'{ "a" : [1, 2] }', b'{"a":[1,2]}', id="whitespace-dropped"),
        pytest.param(b'{"a":"x y & <z>"}', b'{"a":"x y \\u0026 \\u003cz\\u003e"}', id="html-escaped-in-strings"),
        pytest.param(b'{"a":"\\u0026\\"}"}', b'{"a":"\\u0026\\"}"}', id="escapes-kept"),
        pytest.param(b'{"a":1.50}', b'{"a":1.50}', id="numbers-untouched"),
    ],
)
def test_compact(raw: bytes, expected: bytes) -> None:
    """json.Compact with HTML escaping: only whitespace and <>& (and U+2028/9) change."""
    assert compact(raw) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"a": ["x", {"y": "1 > 0"}]}, True, id="nested"),
        pytest.param({"a&b": 1}, True, id="key"),
        pytest.param({"a": ["plain", 1, None]}, False, id="none"),
    ],
)
def test_html_escape_changes(value: Any, expected: bool) -> None:
    """Whether Go's encoding of a value differs from an unescaped one."""
    assert html_escape_changes(value) is expected


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_go_float_refuses_non_finite(value: float) -> None:
    """Go's encoder refuses NaN and infinities; so do we."""
    with pytest.raises(ValueError, match="unsupported value"):
        go_float(value)
