"""An immutable sorted set of node names, cheap to change at a few names and to read from the front.

The rolling update without surge deletes old pods in node-name order, the first ``budget`` of
the nodes whose old pod is available (``update.plan_no_surge``). A ``NodeTable`` keeps those
nodes from sync to sync, and each sync changes a few of them and reads the first few: the
nodes it picks are the ones that leave the set next (ADR 0195).

A ``SortedNames`` is a sorted *base* tuple read from ``start`` on, the names of it removed
since (``gone``) and a small sorted tuple of names added since (``added``). A removal at the
front moves ``start``; once ``gone`` and ``added`` outgrow a sixteenth of the set, or the
dead head of the base outgrows the set, a new base is made. Changing k names therefore costs
O(k log n) plus, amortised, a constant per name, and reading the first k costs O(k) plus the
removed names it steps over; no instance is ever mutated, so tables share them freely.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

__all__ = ["SortedNames"]

_MIN_SLACK: Final = 64


class SortedNames:
    """A read-only sorted set of strings; ``updated`` returns a new one."""

    __slots__ = ("_added", "_base", "_gone", "_len", "_start")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._base: tuple[str, ...] = tuple(sorted(set(names)))
        self._start = 0
        self._gone: frozenset[str] = frozenset()
        self._added: tuple[str, ...] = ()
        self._len = len(self._base)

    @classmethod
    def _of(cls, base: tuple[str, ...], start: int, gone: frozenset[str], added: tuple[str, ...],
            length: int) -> SortedNames:
        made = cls.__new__(cls)
        made._base, made._start, made._gone, made._added, made._len = base, start, gone, added, length
        return made

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return (self._in_base(name) and name not in self._gone) or _in_sorted(self._added, name)

    def __iter__(self) -> Iterator[str]:
        return self._walk()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SortedNames):
            return NotImplemented
        return self._len == other._len and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"SortedNames({list(self)!r})"

    def first(self, count: int) -> list[str]:
        """The ``count`` smallest names (fewer if the set is smaller), in order."""
        out: list[str] = []
        if count <= 0:
            return out
        for name in self._walk():
            out.append(name)
            if len(out) >= count:
                break
        return out

    def updated(self, changes: Mapping[str, bool]) -> SortedNames:
        """A set with each name of ``changes`` present (True) or absent (False)."""
        if not changes:
            return self
        if len(changes) > max(_MIN_SLACK, self._len // 16):
            # Many at once (a table planned from scratch): one new base. Names come in order
            # from a planner that plans nodes by name, and sorting a sorted run is linear.
            kept = [n for n in self._walk() if changes.get(n, True)]
            joining = sorted(n for n, present in changes.items() if present and n not in self)
            merged = tuple(heapq.merge(kept, joining)) if kept and joining else tuple(kept or joining)
            return SortedNames._of(merged, 0, frozenset(), (), len(merged))
        base, start = self._base, self._start
        gone = set(self._gone)
        added = list(self._added)
        length = self._len
        for name, present in changes.items():
            in_base = self._in_base(name)
            if present:
                if in_base:
                    if name in gone:
                        gone.discard(name)
                        length += 1
                elif not _in_sorted(added, name):
                    bisect.insort(added, name)
                    length += 1
            elif in_base:
                if name not in gone:
                    gone.add(name)
                    length -= 1
            else:
                at = bisect.bisect_left(added, name)
                if at < len(added) and added[at] == name:
                    del added[at]
                    length -= 1
        while start < len(base) and base[start] in gone:
            gone.discard(base[start])
            start += 1
        if len(gone) + len(added) > max(_MIN_SLACK, length // 16) or start > max(_MIN_SLACK, length):
            return SortedNames._of(tuple(self._merged(base, start, gone, added)), 0, frozenset(), (), length)
        return SortedNames._of(base, start, frozenset(gone), tuple(added), length)

    def _in_base(self, name: str) -> bool:
        base = self._base
        at = bisect.bisect_left(base, name, self._start)
        return at < len(base) and base[at] == name

    def _walk(self) -> Iterator[str]:
        return self._merged(self._base, self._start, self._gone, self._added)

    @staticmethod
    def _merged(base: tuple[str, ...], start: int, gone: set[str] | frozenset[str],
                added: list[str] | tuple[str, ...]) -> Iterator[str]:
        """The live names of ``base[start:]`` and ``added`` merged in order (the two are disjoint)."""
        j, extra = 0, len(added)
        for i in range(start, len(base)):
            name = base[i]
            if name in gone:
                continue
            while j < extra and added[j] < name:
                yield added[j]
                j += 1
            yield name
        while j < extra:
            yield added[j]
            j += 1


def _in_sorted(names: list[str] | tuple[str, ...], name: str) -> bool:
    at = bisect.bisect_left(names, name)
    return at < len(names) and names[at] == name
