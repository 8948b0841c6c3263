"""The in-memory table of one resource type: objects by key, indexes, history and watchers.

Objects live in ``{namespace: {name: Doc}}`` (``""`` for cluster-scoped types), so a get, an
update and a namespace list are dict hits. Pods also carry a ``spec.nodeName`` index, which
is what the kubelet loop and ``fieldSelector=spec.nodeName=x`` lists use.

A compact type's versions keep only their encoding once they leave the table's
``DecodedCache`` (see ``watch.Doc``).

Each table keeps its own bounded change history (like kube-apiserver's per-resource watch
cache): a burst of pod events never pushes DaemonSet events out. ``floor`` is the newest
resourceVersion no longer replayable; a watch from an older version gets 410.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from dsctl_sim.registry import ResourceType
from dsctl_sim.strategy import field_value
from dsctl_sim.watch import DecodedCache, Doc, Watcher, WatchEvent

__all__ = ["INDEXED_FIELDS", "Table"]

Obj = dict[str, Any]
Key = tuple[str, str]

# Field paths kept in an exact-value index, per storage key.
INDEXED_FIELDS: dict[str, tuple[str, ...]] = {"pods": ("spec.nodeName",)}


class Table:
    """One resource type's objects and the structures derived from them.

    Invariant: every index holds exactly the (namespace, name) keys of stored objects whose
    field has that value (missing field = ``""``); ``_sorted`` is None or the sorted keys.
    """

    def __init__(self, rt: ResourceType, *, history_size: int, decoded_cache_size: int = 32_768) -> None:
        self.rt = rt
        self.cache = DecodedCache(decoded_cache_size) if rt.compact else None
        self.by_ns: dict[str, dict[str, Doc]] = {}
        self.count = 0
        self.fields = INDEXED_FIELDS.get(rt.key, ())
        self.index: dict[str, dict[str, set[Key]]] = {f: {} for f in self.fields}
        self.history: deque[WatchEvent] = deque(maxlen=max(1, history_size))
        self.floor = 0
        self.watchers: list[Watcher] = []
        self._sorted: list[Key] | None = None
        self._sorted_ns: dict[str, list[str]] = {}
        self._stale: list[list[Key] | list[str]] = []
        """Sorted key lists a create or delete made stale, released by the next list instead of
        by the write: dropping the last reference to a million keys touches every one of them,
        a pause of a tenth of a second that no write to kube-apiserver's watch cache has."""

    # -- objects ------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Doc | None:
        """The current version, or None."""
        names = self.by_ns.get(namespace)
        return None if names is None else names.get(name)

    def new_doc(self, obj: Obj) -> Doc:
        """A version of ``obj`` as this table stores it (compact or not)."""
        return Doc(obj, cache=self.cache)

    def put(self, namespace: str, name: str, doc: Doc, old: Doc | None) -> None:
        """Store ``doc`` as the current version, replacing ``old`` (None for a create)."""
        names = self.by_ns.get(namespace)
        if names is None:
            names = self.by_ns[namespace] = {}
        names[name] = doc
        if old is None:
            self.count += 1
            self._keys_changed(namespace)
        for path in self.fields:
            before = None if old is None else field_value(old.obj, path) or ""
            after = field_value(doc.obj, path) or ""
            if before != after:
                if before is not None:
                    self._unindex(path, before, (namespace, name))
                self.index[path].setdefault(after, set()).add((namespace, name))

    def remove(self, namespace: str, name: str) -> Doc | None:
        """Drop the object; returns its last version."""
        names = self.by_ns.get(namespace)
        if names is None or name not in names:
            return None
        doc = names.pop(name)
        if not names:
            del self.by_ns[namespace]
        self.count -= 1
        self._keys_changed(namespace)
        for path in self.fields:
            self._unindex(path, field_value(doc.obj, path) or "", (namespace, name))
        return doc

    def _keys_changed(self, namespace: str) -> None:
        if self._sorted is not None:
            self._stale.append(self._sorted)
            self._sorted = None
        names = self._sorted_ns.pop(namespace, None)
        if names is not None:
            self._stale.append(names)

    def _unindex(self, path: str, value: str, key: Key) -> None:
        bucket = self.index[path].get(value)
        if bucket is not None:
            bucket.discard(key)
            if not bucket:
                del self.index[path][value]

    # -- listing ------------------------------------------------------------------------

    def sorted_keys(self, namespace: str | None) -> list[Key]:
        """All keys (or one namespace's) in (namespace, name) order; cached until a create/delete."""
        self._stale.clear()  # a list costs O(keys) anyway: the stale lists go here
        if namespace is not None:
            names = self._sorted_ns.get(namespace)
            if names is None:
                names = self._sorted_ns[namespace] = sorted(self.by_ns.get(namespace, ()))
            return [(namespace, n) for n in names]
        if self._sorted is None:
            self._sorted = sorted((ns, n) for ns, names in self.by_ns.items() for n in names)
        return self._sorted

    def candidates(self, namespace: str | None, exact: dict[str, str]) -> list[Key]:
        """Sorted keys that can match: an index bucket when an indexed field is pinned."""
        for path in self.fields:
            value = exact.get(path)
            if value is not None:
                bucket = self.index[path].get(value, set())
                keys = sorted(bucket)
                if namespace is not None:
                    keys = [k for k in keys if k[0] == namespace]
                return keys
        return self.sorted_keys(namespace)

    def docs(self, keys: Iterable[Key]) -> Iterator[Doc]:
        """The current versions for ``keys`` that still exist."""
        by_ns = self.by_ns
        for ns, name in keys:
            names = by_ns.get(ns)
            if names is not None:
                doc = names.get(name)
                if doc is not None:
                    yield doc

    def all_docs(self) -> Iterator[Doc]:
        """Every current version, unordered."""
        for names in list(self.by_ns.values()):
            yield from list(names.values())

    # -- history ------------------------------------------------------------------------

    def record(self, ev: WatchEvent) -> None:
        """Append to the history, moving the floor past any event that falls off."""
        if len(self.history) == self.history.maxlen:
            self.floor = self.history[0].rv
        self.history.append(ev)

    def compact(self, rv: int) -> None:
        """Forget all history up to and including ``rv``."""
        while self.history and self.history[0].rv <= rv:
            self.history.popleft()
        self.floor = max(self.floor, rv)

    def since(self, rv: int) -> list[WatchEvent]:
        """Recorded events newer than ``rv``, oldest first (caller checked ``rv >= floor``)."""
        out: list[WatchEvent] = []
        for ev in reversed(self.history):
            if ev.rv <= rv:
                break
            out.append(ev)
        out.reverse()
        return out
