"""The bytes a ControllerRevision's ``data`` was stored as, and the immutability check on them.

kube-apiserver decodes ``data`` into a ``RawExtension``: it keeps the literal bytes of the JSON
value it was sent, and ``ValidateControllerRevisionUpdate`` refuses an update whose ``data``
is not ``DeepEqual`` to the stored one, which for raw bytes is byte equality. Two encodings of
the same value (``"&&"`` and ``"\\u0026\\u0026"``, or another key order) are different data
there, and the update fails with 422 "field is immutable". The simulator used to compare the
parsed values, so a client that re-encoded a revision differently passed here and failed on a
real cluster.

So the simulator keeps those bytes: ``RawData`` is the parsed ``data`` (a dict, served and
compared like any other) that also remembers ``raw``. Where the bytes come from follows what
the server does with each kind of write:

- create or update with a JSON body: the literal bytes of the body's ``data`` member;
- a YAML body (converted to JSON through a map) or a strategic-merge patch (applied on a map):
  Go's encoding of the value with sorted keys;
- a JSON merge patch or JSON patch: the server re-encodes the stored object before patching,
  which compacts and HTML-escapes the stored bytes (``gojson.compact``); data the patch changed
  is written afresh, with sorted keys;
- a protobuf body, or an object stored without passing through here: Go's encoding of the
  value in its stored key order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from dsctl_api import gojson

__all__ = [
    "REVISIONS_KEY",
    "RawData",
    "attach_after_patch",
    "attach_from_body",
    "data_unchanged",
    "member_bytes",
    "stored_bytes",
]

REVISIONS_KEY = "apps/controllerrevisions"

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(rb"[^,}\]\s]+")
_STRING_OR_BRACKET = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]', re.DOTALL)


class RawData(dict[str, Any]):
    """A revision's parsed ``data`` that remembers the bytes it was stored as (``raw``)."""

    __slots__ = ("raw",)

    def __init__(self, value: Mapping[str, Any], raw: bytes) -> None:
        super().__init__(value)
        self.raw = raw


def stored_bytes(data: Any) -> bytes:
    """The bytes ``data`` is (or would be) stored as."""
    if isinstance(data, RawData):
        return data.raw
    return gojson.encode(data)


def data_unchanged(new: Any, old: Any) -> bool:
    """Whether an update keeps ``data`` as kube-apiserver sees it: the same bytes."""
    if new is None or old is None:
        return new is old
    return stored_bytes(new) == stored_bytes(old)


def _skip_space(body: bytes, pos: int) -> int:
    while body[pos:pos + 1] in (b" ", b"\t", b"\r", b"\n"):
        pos += 1
    return pos


def _skip_value(body: bytes, pos: int) -> int:
    """The end offset of the JSON value starting at ``pos``."""
    first = body[pos:pos + 1]
    if first == b'"':
        match = _STRING.match(body, pos)
        if match is None:
            raise ValueError("unterminated string")
        return match.end()
    if first not in (b"{", b"["):
        match = _SCALAR.match(body, pos)
        if match is None:
            raise ValueError("expected a value")
        return match.end()
    depth = 0
    # Jump from bracket to bracket, stepping over whole strings (which may hold brackets).
    for token in _STRING_OR_BRACKET.finditer(body, pos):
        char = token.group()[:1]
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return token.end()
    raise ValueError("unterminated value")


def member_bytes(body: bytes, name: str) -> bytes | None:
    """The literal bytes of the top-level member ``name`` of a JSON object (the last, if repeated)."""
    found: bytes | None = None
    pos = _skip_space(body, 0)
    if body[pos:pos + 1] != b"{":
        return None
    pos += 1
    while True:
        pos = _skip_space(body, pos)
        if body[pos:pos + 1] == b"}":
            return found
        key_match = _STRING.match(body, pos)
        if key_match is None:
            return found
        key = json.loads(key_match.group())
        pos = _skip_space(body, key_match.end())
        if body[pos:pos + 1] != b":":
            return found
        pos = _skip_space(body, pos + 1)
        end = _skip_value(body, pos)
        if key == name:
            found = body[pos:end]
        pos = _skip_space(body, end)
        if body[pos:pos + 1] == b",":
            pos += 1


def attach_from_body(key: str, obj: dict[str, Any], body: bytes, content_type: str) -> None:
    """Remember, on ``obj["data"]``, the bytes a create or update body carried for it."""
    data = obj.get("data")
    if key != REVISIONS_KEY or not isinstance(data, dict):
        return
    media = content_type.split(";", 1)[0].strip().lower()
    raw: bytes | None
    if "yaml" in media:
        raw = gojson.encode(data, sort_keys=True)
    elif "protobuf" in media:
        raw = gojson.encode(data)
    else:
        try:
            raw = member_bytes(body, "data")
        except ValueError:
            raw = None
        raw = raw if raw is not None else gojson.encode(data)
    obj["data"] = RawData(data, raw)


def attach_after_patch(key: str, new: dict[str, Any], old: Mapping[str, Any], content_type: str) -> None:
    """Remember, on ``new["data"]``, the bytes a patch leaves for it (see the module docstring)."""
    data = new.get("data")
    if key != REVISIONS_KEY or not isinstance(data, dict):
        return
    media = content_type.split(";", 1)[0].strip().lower()
    old_data = old.get("data")
    if media in ("application/merge-patch+json", "application/json-patch+json") and data == old_data:
        raw = gojson.compact(stored_bytes(old_data))
    else:
        raw = gojson.encode(data, sort_keys=True)
    new["data"] = RawData(data, raw)
