"""JSON bytes exactly as Go's ``encoding/json`` writes them, for fields the API server compares as bytes.

kube-apiserver keeps a ControllerRevision's ``data`` (a ``RawExtension``) as the bytes it was
sent, and refuses an update whose ``data`` bytes differ from the stored ones ("field is
immutable"), even when both parse to the same value. kube-controller-manager writes those bytes
with Go's encoder, which differs from orjson in three ways that matter here:

- ``<``, ``>`` and ``&`` are written ``\\u003c``, ``\\u003e``, ``\\u0026``, and U+2028/U+2029
  as ``\\u2028``/``\\u2029`` (HTML-safe output; a shell ``&&`` in a command is enough);
- a float64 is written in the shortest form that round-trips, in positional notation between
  1e-6 and 1e21 and as ``1e+21``/``1e-7`` outside (orjson writes ``1e16``);
- the keys of a map are sorted; a struct keeps its field order. The revision data upstream
  builds goes through a ``map[string]interface{}``, so its keys are sorted at every level.

Everything else (control characters as ``\\b \\f \\n \\r \\t \\u00XX``, raw UTF-8, no
whitespace) is already what orjson writes, so ``encode`` lets orjson do the work and fixes up
the rest. ``compact`` is Go's ``json.Compact`` with HTML escaping: what the server's encoder does
to stored raw bytes when it serialises them again (on a GET, or before applying a patch).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

import orjson

__all__ = ["compact", "encode", "fragment", "go_float", "html_escape_changes"]

_HTML_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)
_NEEDS_ESCAPE = re.compile("[<>&\u2028\u2029]")
# A JSON string (escapes included) or a run of insignificant whitespace.
_STRING_OR_SPACE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[ \t\r\n]+', re.DOTALL)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _escape_html(data: bytes) -> bytes:
    # Safe on whole documents: these characters can only occur inside strings, and never
    # inside an escape sequence orjson writes.
    for raw, escaped in _HTML_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def go_float(value: float) -> bytes:
    """A float64 as ``encoding/json`` writes it (``strconv.AppendFloat`` with 'f' or 'e', -1)."""
    if not math.isfinite(value):
        raise ValueError(f"unsupported value: {value!r}")
    if value == 0:
        return b"-0" if math.copysign(1.0, value) < 0 else b"0"
    # repr is the shortest round-tripping decimal, as Go's -1 precision is.
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    prefix = "-" if sign else ""
    magnitude = abs(value)
    text = "".join(map(str, digits))
    if 1e-6 <= magnitude < 1e21:
        point = len(text) + exponent  # digits before the decimal point
        if exponent >= 0:
            body = text + "0" * exponent
        elif point > 0:
            body = f"{text[:point]}.{text[point:]}"
        else:
            body = f"0.{'0' * -point}{text}"
        return f"{prefix}{body}".encode()
    power = exponent + len(text) - 1
    mantissa = text[0] + (f".{text[1:]}" if len(text) > 1 else "")
    # Go writes at least two exponent digits, then encoding/json trims e-07 to e-7.
    exp = f"e+{power:02d}" if power >= 0 else f"e-{-power}"
    return f"{prefix}{mantissa}{exp}".encode()


def _prepare(value: Any) -> Any:
    """``value`` with what orjson would write differently from Go replaced by fragments."""
    if isinstance(value, float):
        return orjson.Fragment(go_float(value))
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        return orjson.Fragment(str(value).encode())  # orjson refuses integers beyond 64 bits
    if isinstance(value, dict):
        return {k: _prepare(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_prepare(v) for v in value]
    return value


def encode(value: Any, *, sort_keys: bool = False) -> bytes:
    """``value`` (decoded JSON: dicts, lists, str, int, float, bool, None) as Go writes it.

    Dict keys keep their order unless ``sort_keys`` (Go's order for a map); pass the order the
    bytes were read in to write them back unchanged.
    """
    option = orjson.OPT_SORT_KEYS if sort_keys else 0
    return _escape_html(orjson.dumps(_prepare(value), option=option))


def fragment(value: Any, *, sort_keys: bool = False) -> orjson.Fragment:
    """``encode(value)`` wrapped so that orjson embeds it verbatim inside a larger body."""
    return orjson.Fragment(encode(value, sort_keys=sort_keys))


def html_escape_changes(value: Any) -> bool:
    """Whether Go's HTML escaping changes the encoding of ``value`` (any ``<>&`` or U+2028/9)."""
    if isinstance(value, str):
        return _NEEDS_ESCAPE.search(value) is not None
    if isinstance(value, dict):
        return any(html_escape_changes(k) or html_escape_changes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(html_escape_changes(v) for v in value)
    return False


def compact(raw: bytes) -> bytes:
    """Go's ``json.Compact`` with HTML escaping: whitespace outside strings dropped, ``<>&`` and
    U+2028/U+2029 inside strings escaped, every other byte (and escape) kept as it was."""

    def fix(match: re.Match[bytes]) -> bytes:
        token = match.group()
        return _escape_html(token) if token.startswith(b'"') else b""

    return _STRING_OR_SPACE.sub(fix, raw)
