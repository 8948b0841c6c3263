"""Request bodies encoded once and sent many times.

A cold start posts thousands of pods that differ only in their node's name. Building each pod
as a fresh dict and encoding it costs more than the rest of the request's client-side work
(ADR 0077). ``JsonTemplate`` encodes the object once with a hole where the varying
string goes, and fills the hole by joining bytes; ``Encoded`` carries the result to the
transport, which sends the bytes as they are.

``Encoded`` is also a ``Mapping``: code that reads the body (a fake client in a test,
``KubeClient`` looking for the namespace) sees the decoded object, decoded at most once. Neither
the bytes nor what they decode to are to be changed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

__all__ = ["Encoded", "JsonTemplate"]


class Encoded(Mapping[str, Any]):
    """A JSON object in its wire form; read as a mapping, it is decoded on first access."""

    __slots__ = ("_raw", "_tree")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._tree: dict[str, Any] | None = None

    @property
    def raw(self) -> bytes:
        """The body as sent."""
        return self._raw

    def _decoded(self) -> dict[str, Any]:
        if self._tree is None:
            tree = orjson.loads(self._raw)
            if not isinstance(tree, dict):
                raise TypeError("an encoded body must be a JSON object")
            self._tree = tree
        return self._tree

    def __getitem__(self, key: str) -> Any:
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        more = "..." if len(self._raw) > 60 else ""
        return f"Encoded({self._raw[:60]!r}{more})"


class JsonTemplate:
    """An encoded JSON object with holes, all filled with one string per ``fill``."""

    __slots__ = ("_parts",)

    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    @classmethod
    def of(cls, build: Callable[[str], Mapping[str, Any]], *, probe: str) -> JsonTemplate | None:
        """The template of ``build``, or None when splicing cannot reproduce it.

        ``build(hole)`` is encoded with a random marker as ``hole``; every place the marker
        lands, inside any string, becomes a hole. Splicing is only right when ``build`` puts
        its argument into strings verbatim and never branches on it, so the template is
        checked once against ``build(probe)``, decoded; a mismatch gives None and the caller
        builds each object itself.
        """
        marker = f"dsctl-hole-{uuid.uuid4().hex}"
        parts = orjson.dumps(build(marker)).split(marker.encode())
        if len(parts) < 2:
            return None
        template = cls(parts)
        if orjson.loads(template.fill(probe).raw) != build(probe):
            return None
        return template

    def fill(self, value: str) -> Encoded:
        """The object with every hole holding ``value`` (escaped as JSON requires)."""
        return Encoded(orjson.dumps(value)[1:-1].join(self._parts))
