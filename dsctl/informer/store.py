"""The informer's cache: objects by key, plus secondary indexes.

Keys are ``namespace/name`` for namespaced objects and ``name`` for cluster-scoped ones.
An index is a function from an object to the list of values it is filed under (a pod under its
node name, a pod or ControllerRevision under its controller's UID); ``by_index`` answers "all
objects filed under this value" without scanning. An index function may declare the fields it
reads (:func:`index_reads`): an update whose old and new objects hold the very same values there
(the same objects, as a projection's shared values and interned strings are) then skips that
index, which is most updates of a busy cache (a pod's status changes, not its node or owner).

Contract: objects returned by the store are the cached objects themselves, shared with every
reader. **Do not mutate them**; copy before changing. The store is single-threaded: it is
written only by its reflector, on the event loop, and never awaits, so readers always see a
consistent state between two events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dsctl_api.pods import controller_ref

__all__ = [
    "BY_NODE_NAME",
    "BY_OWNER_UID",
    "IndexFunc",
    "ReadOnlyStore",
    "ReplaceResult",
    "Replacement",
    "Store",
    "Transform",
    "by_node_name",
    "by_owner_uid",
    "index_reads",
    "object_key",
]

Obj = dict[str, Any]
Objs = list[Obj]
Keys = list[str]
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]
Transform = Callable[[Obj], Obj]

BY_NODE_NAME = "byNodeName"
BY_OWNER_UID = "byOwnerUID"
_READS = "__index_reads__"
_F = TypeVar("_F", bound=Callable[..., Any])


def index_reads(*paths: str) -> Callable[[_F], _F]:
    """Declare every field an index function reads, as paths of one or two keys
    (``"spec.nodeName"``, ``"metadata"``).

    Contract: the function's result depends on nothing but the values at these paths (a
    missing field, or a non-dict where a dict was expected, counts as a value). The store then
    skips the function on an update where every path holds the *same object* (or an equal
    string) in the old and the new version; equal but distinct containers are recomputed. An
    undeclared read would go stale silently: declare every one.
    """
    split: list[tuple[str, str | None]] = []
    for path in paths:
        parts = path.split(".")
        if not 1 <= len(parts) <= 2 or not all(parts):
            raise ValueError(f"index_reads: {path!r} is not one or two keys")
        split.append((parts[0], parts[1] if len(parts) == 2 else None))
    reads = _grouped(split)

    def declare(func: _F) -> _F:
        setattr(func, _READS, reads)
        return func

    return declare


_Reads = tuple[tuple[str, tuple[str, ...] | None], ...]


def _reads_of(func: IndexFunc) -> _Reads | None:
    reads = getattr(func, _READS, None)
    return reads if isinstance(reads, tuple) else None


def _grouped(paths: Iterable[tuple[str, str | None]]) -> _Reads:
    """``(first key, second key or None)`` paths by first key, each looked up once per update,
    then its second keys; a read of the whole first-level value (None) covers its keys."""
    grouped: dict[str, list[str] | None] = {}
    for first, second in paths:
        seconds = grouped.setdefault(first, [])
        if second is None:
            grouped[first] = None
        elif seconds is not None and second not in seconds:
            seconds.append(second)
    return tuple((first, None if seconds is None else tuple(seconds))
                 for first, seconds in grouped.items())


def _union(all_reads: list[_Reads | None]) -> _Reads | None:
    """Every path any of the functions reads, or None if one of them declared nothing."""
    if any(reads is None for reads in all_reads):
        return None
    return _grouped((first, second) for reads in all_reads if reads is not None
                    for first, seconds in reads for second in (seconds or (None,)))


_ABSENT: Any = object()


def _same_inputs(old: Obj, new: Obj, reads: _Reads) -> bool:
    """Whether every path holds the same object (or an equal string) in both versions. The
    same object at a path's first key means the same value under it (cached objects are never
    mutated); where it is not a dict, it is itself the value compared."""
    for first, seconds in reads:
        a = old.get(first, _ABSENT)
        b = new.get(first, _ABSENT)
        if a is b:
            continue
        if seconds is not None and a.__class__ is dict and b.__class__ is dict:
            for second in seconds:
                x = a.get(second, _ABSENT)
                y = b.get(second, _ABSENT)
                if x is not y and (x.__class__ is not str or x != y):
                    return False
            continue
        if a.__class__ is not str or a != b:
            return False
    return True


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


@index_reads("spec.nodeName")
def by_node_name(obj: Mapping[str, Any]) -> list[str]:
    """Index function: the pod's ``spec.nodeName`` (unscheduled pods are filed under nothing)."""
    spec = obj.get("spec")
    if spec.__class__ is dict or isinstance(spec, Mapping):
        node = spec.get("nodeName")
        if node.__class__ is str and node:
            return [node]
    return []


@index_reads("metadata.ownerReferences")
def by_owner_uid(obj: Mapping[str, Any]) -> list[str]:
    """Index function: the UID of the controller ownerReference (pods and ControllerRevisions)."""
    meta = obj.get("metadata")
    if meta.__class__ is dict:
        # The common shape (decoded JSON), read without the generic Mapping checks: this
        # runs twice per cached update.
        refs = meta.get("ownerReferences")
        if not refs:
            return []
        if refs.__class__ is list:
            for ref in refs:
                if ref.__class__ is dict and ref.get("controller") is True:
                    uid = ref.get("uid")
                    return [uid] if uid.__class__ is str and uid else []
            if all(ref.__class__ is dict for ref in refs):
                return []
    ref = controller_ref(obj)
    uid = ref.get("uid") if ref is not None else None
    return [uid] if isinstance(uid, str) and uid else []


@dataclass
class ReplaceResult:
    """What a :meth:`Store.replace` changed, for delivering handler calls."""

    added: list[Obj] = field(default_factory=list)
    updated: list[tuple[Obj, Obj]] = field(default_factory=list)
    deleted: list[Obj] = field(default_factory=list)


def _rv(obj: Mapping[str, Any]) -> Any:
    meta = obj.get("metadata")
    return meta.get("resourceVersion") if isinstance(meta, Mapping) else None


class Store:
    """Indexed object cache; see the module docstring for the sharing contract.

    ``transform`` (a projection) is applied to every object before it is stored; it must return
    a new dict or the one it was given, and must keep ``metadata.name``/``namespace``.
    """

    def __init__(
        self,
        *,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
    ) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indexes: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}
        self._updaters = [
            (self._indexes[n], func, _reads_of(func)) for n, func in self._indexers.items()
        ]
        # Checked first on every update: most (status) updates leave every index input alone.
        self._every_read = _union([reads for _, _, reads in self._updaters])
        self._transform = transform
        self.resource_version: str = ""
        """The resourceVersion the store is known to be current at (list RV, then event RVs)."""

    # -- reads ---------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The object stored under ``key``, or None. Do not mutate it."""
        return self._items.get(key)

    def get_by_name(self, name: str, *, namespace: str | None = None) -> Obj | None:
        """The object with this name (and namespace, for namespaced kinds)."""
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> Objs:
        """All objects (a new list of the shared objects)."""
        return list(self._items.values())

    def keys(self) -> Keys:
        """All keys."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Obj]:
        return iter(list(self._items.values()))

    def index_names(self) -> Keys:
        """Names of the configured indexes."""
        return list(self._indexers)

    def by_index(self, index: str, value: str) -> Objs:
        """Objects filed under ``value`` in ``index``. Raises KeyError for an unknown index."""
        keys = self._index(index).get(value)
        if not keys:
            return []
        items = self._items
        return [items[k] for k in keys]

    def index_keys(self, index: str, value: str) -> Keys:
        """Keys of the objects filed under ``value`` in ``index``."""
        return list(self._index(index).get(value, ()))

    def index_values(self, index: str) -> Keys:
        """Every value that currently has at least one object in ``index``."""
        return list(self._index(index))

    def _index(self, index: str) -> dict[str, set[str]]:
        try:
            return self._indexes[index]
        except KeyError:
            raise KeyError(f"no index named {index!r}") from None

    # -- writes (the reflector's) --------------------------------------------------------

    @property
    def transform(self) -> Transform | None:
        """The projection applied to incoming objects, if any."""
        return self._transform

    def prepare(self, obj: Obj) -> Obj:
        """Apply the store's transform (projection) to an incoming object."""
        return self._transform(obj) if self._transform is not None else obj

    def swap(self, key: str, new: Obj) -> Obj | None:
        """Store the prepared ``new`` under ``key``; return what was stored there (the
        reflector's per-event path, which already knows the key)."""
        items = self._items
        old = items.get(key)
        items[key] = new
        if old is None:
            self._index_obj(key, new)
        else:
            self._reindex(key, old, new)
        return old

    def upsert(self, obj: Obj, *, prepared: bool = False) -> tuple[Obj | None, Obj]:
        """Store ``obj`` (transformed unless ``prepared``); return ``(old, stored)``."""
        new = obj if prepared else self.prepare(obj)
        key = object_key(new)
        old = self._items.get(key)
        self._items[key] = new
        if old is None:
            self._index_obj(key, new)
        else:
            self._reindex(key, old, new)
        return old, new

    def delete(self, key: str) -> Obj | None:
        """Remove ``key``; return the object that was stored, or None."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def begin_replace(self) -> Replacement:
        """Start replacing the whole content page by page (see :class:`Replacement`)."""
        return Replacement(self)

    def replace(
        self, objects: Iterable[Obj], resource_version: str, *, prepared: bool = False
    ) -> ReplaceResult:
        """Make the store hold exactly ``objects``; report additions, changes and deletions.

        An object counts as updated when its resourceVersion differs from the cached one.
        """
        replacement = self.begin_replace()
        result = replacement.apply(objects, prepare=None if prepared else self.prepare)
        result.deleted = replacement.finish(resource_version)
        return result

    def _index_obj(self, key: str, obj: Obj) -> None:
        for name, func in self._indexers.items():
            index = self._indexes[name]
            for value in func(obj):
                bucket = index.get(value)
                if bucket is None:
                    index[value] = {key}
                else:
                    bucket.add(key)

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, func in self._indexers.items():
            index = self._indexes[name]
            for value in func(obj):
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]

    def _reindex(self, key: str, old: Obj, new: Obj) -> None:
        """Move ``key`` from ``old``'s index values to ``new``'s, touching only what changed
        (a pod update rarely changes its node or its owner). An index whose declared reads
        hold the same objects in both versions is not even computed; when that holds for
        every index, one pass over the union of their reads says so."""
        every = self._every_read
        if every is not None and _same_inputs(old, new, every):
            return
        for index, func, reads in self._updaters:
            if reads is not None and _same_inputs(old, new, reads):
                continue  # every input is the same: so is the result
            before = func(old)
            after = func(new)
            if before == after:
                continue
            for value in before:
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]
            for value in after:
                bucket = index.get(value)
                if bucket is None:
                    index[value] = {key}
                else:
                    bucket.add(key)


class Replacement:
    """A relist applied to the live store one page at a time, so memory stays bounded.

    Each :meth:`apply` writes one page into the store at once (readers see every object at the
    state of the page that carried it, never a half-written one) and returns what it added and
    changed, for the handlers. An object whose resourceVersion equals the cached one is not
    even projected: the cached object is kept. Only the keys seen so far are remembered (one
    set of key strings, no objects), so :meth:`finish` removes and returns every cached object
    the list did not contain: the deletions missed while the watch was down. There is never a
    second copy of the cache, and a page's raw objects are garbage once it is applied.

    :meth:`restart` forgets the keys seen: used when the list had to start again from its first
    page (an expired continue token), objects written by the abandoned attempt stay cached
    until the new attempt either re-lists them or deletes them in :meth:`finish`.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._seen: set[str] = set()

    def restart(self) -> None:
        """The list starts again from its first page."""
        self._seen = set()

    def apply(self, objects: Iterable[Obj], *, prepare: Transform | None) -> ReplaceResult:
        """Write one page (raw objects, projected by ``prepare``; None if already prepared)."""
        store = self._store
        items = store._items
        seen = self._seen
        result = ReplaceResult()
        for obj in objects:
            key = object_key(obj)
            seen.add(key)
            old = items.get(key)
            if old is not None:
                rv = _rv(obj)
                if rv is not None and rv == _rv(old):
                    continue
            new = obj if prepare is None else prepare(obj)
            items[key] = new
            if old is None:
                store._index_obj(key, new)
                result.added.append(new)
            else:
                store._reindex(key, old, new)
                result.updated.append((old, new))
        return result

    def finish(self, resource_version: str) -> Objs:
        """The list is complete: drop and return every cached object it did not contain."""
        store = self._store
        items = store._items
        seen = self._seen
        deleted: Objs = []
        for key in [k for k in items if k not in seen]:
            old = items.pop(key)
            store._unindex(key, old)
            deleted.append(old)
        self._seen = set()
        store.resource_version = resource_version
        return deleted


class ReadOnlyStore:
    """A read-only view of a :class:`Store` (what informers hand out as listers).

    The objects it returns are the shared cached objects: do not mutate them.
    """

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, key: str) -> Obj | None:
        """The object under ``key`` (``ns/name`` or ``name``), or None."""
        return self._store.get(key)

    def get_by_name(self, name: str, *, namespace: str | None = None) -> Obj | None:
        """The object with this name (and namespace), or None."""
        return self._store.get_by_name(name, namespace=namespace)

    def list(self) -> Objs:
        """All cached objects."""
        return self._store.list()

    def keys(self) -> Keys:
        """All keys."""
        return self._store.keys()

    def by_index(self, index: str, value: str) -> Objs:
        """Objects filed under ``value`` in ``index``."""
        return self._store.by_index(index, value)

    def index_keys(self, index: str, value: str) -> Keys:
        """Keys filed under ``value`` in ``index``."""
        return self._store.index_keys(index, value)

    def index_values(self, index: str) -> Keys:
        """Values present in ``index``."""
        return self._store.index_values(index)

    @property
    def resource_version(self) -> str:
        """The resourceVersion the cache is current at."""
        return self._store.resource_version

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, key: object) -> bool:
        return key in self._store
