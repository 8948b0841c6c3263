"""Structural sharing of stored objects: equal sub-trees are kept once.

A large cluster's DaemonSet pods are near copies of a handful of templates: the same containers,
tolerations, labels and owner references, and an affinity shared by every pod of a node.
Stored objects are never mutated, so equal sub-trees can be one Python object. Interning the
dict and list children of ``metadata`` and ``spec`` before an object is stored shares most of
a pod's resident size with its siblings, for one ``orjson.dumps`` per child on a write (skipped
for children that are already interned).

The table is bounded; when it fills it is simply cleared, which only costs sharing for the
objects written afterwards, never correctness.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["Interner"]

_META_KEYS = ("labels", "annotations", "ownerReferences", "finalizers")


class Interner:
    """Maps the JSON encoding of a sub-tree to one shared instance of it.

    Invariant: ``_ids`` holds exactly the ids of the values in ``_table`` (which keeps them
    alive, so an id cannot be reused by another object while it is listed).
    """

    def __init__(self, *, capacity: int = 50_000) -> None:
        self._table: dict[bytes, Any] = {}
        self._ids: set[int] = set()
        self._capacity = capacity
        self.hits = 0

    def share(self, value: Any) -> Any:
        """The shared instance equal to ``value`` (``value`` itself the first time)."""
        if id(value) in self._ids:
            return value
        key = orjson.dumps(value)
        found = self._table.get(key)
        if found is not None:
            self.hits += 1
            return found
        if len(self._table) >= self._capacity:
            self._table.clear()
            self._ids.clear()
        self._table[key] = value
        self._ids.add(id(value))
        return value

    def object(self, obj: dict[str, Any]) -> None:
        """Share the sub-trees of a new stored object in place (equal values swapped for equal values)."""
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            for key in _META_KEYS:
                value = meta.get(key)
                if value:
                    meta[key] = self.share(value)
        spec = obj.get("spec")
        if isinstance(spec, dict):
            for key, value in spec.items():
                if isinstance(value, (dict, list)) and value:
                    spec[key] = self.share(value)
