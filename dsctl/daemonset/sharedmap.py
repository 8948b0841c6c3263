"""An immutable mapping whose updated copies share the entries they did not change.

A ``NodeTable`` holds one entry per node and is replaced, not mutated, by every sync. Copying a
dict of every node per sync is cheap in isolation but not in the controller: a copy and the
release of the old one touch every key and value, scattered over a heap of cached pods, and
node joins, which sync every DaemonSet once per node, would spend much of their CPU on it
(ADR 0068).

A ``SharedMap`` is a frozen *base* dict plus a small *top* dict of the entries changed since,
with ``_GONE`` marking a removed key. ``updated`` copies only the top; once the top outgrows a
sixteenth of the base, the two are merged into a new base. Updating k entries therefore costs
O(k) plus, amortised, a constant per entry; lookups cost at most two dict probes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final, Generic, TypeVar

__all__ = ["SharedMap"]

K = TypeVar("K")
V = TypeVar("V")


class _Gone:
    __slots__ = ()


_GONE: Final = _Gone()
_MIN_TOP: Final = 64


class SharedMap(Mapping[K, V], Generic[K, V]):
    """A read-only mapping; ``updated`` returns a new one. Neither dict is ever mutated after
    construction, so any number of maps can share them."""

    __slots__ = ("_base", "_len", "_top")

    def __init__(self, entries: Mapping[K, V] | None = None) -> None:
        self._base: dict[K, V] = dict(entries) if entries else {}
        self._top: dict[K, V | _Gone] = {}
        self._len = len(self._base)

    @classmethod
    def _of(cls, base: dict[K, V], top: dict[K, V | _Gone], length: int) -> SharedMap[K, V]:
        made: SharedMap[K, V] = cls.__new__(cls)
        made._base, made._top, made._len = base, top, length
        return made

    def __getitem__(self, key: K) -> V:
        top = self._top
        if key in top:
            value = top[key]
            if isinstance(value, _Gone):
                raise KeyError(key)
            return value
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        top = self._top
        if key in top:
            return not isinstance(top[key], _Gone)
        return key in self._base

    def __iter__(self) -> Iterator[K]:
        top = self._top
        for key, value in top.items():
            if not isinstance(value, _Gone):
                yield key
        if not top:
            yield from self._base
            return
        for key in self._base:
            if key not in top:
                yield key

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"SharedMap({dict(self)!r})"

    def updated(self, put: Iterable[tuple[K, V]] = (), *, drop: Iterable[K] = ()) -> SharedMap[K, V]:
        """A map with ``drop``'s keys removed, then ``put``'s pairs set (a later pair wins)."""
        base = self._base
        top = dict(self._top)
        length = self._len
        for key in drop:
            if key in top:
                if isinstance(top[key], _Gone):
                    continue
                if key in base:
                    top[key] = _GONE
                else:
                    del top[key]
                length -= 1
            elif key in base:
                top[key] = _GONE
                length -= 1
        for key, value in put:
            present = (not isinstance(top[key], _Gone)) if key in top else key in base
            if not present:
                length += 1
            top[key] = value
        if len(top) > max(_MIN_TOP, len(base) // 16):
            merged = dict(base)
            for key, entry in top.items():
                if isinstance(entry, _Gone):
                    del merged[key]
                else:
                    merged[key] = entry
            return SharedMap._of(merged, {}, length)
        return SharedMap._of(base, top, length)
