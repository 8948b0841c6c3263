"""Stored object versions, change events and the per-client watcher buffer.

``Doc`` is one immutable version of an object and its JSON encoding. The encoding is computed
at most once: a list of 150,000 pods and every watch stream that carries a version reuse the
same bytes.

Most types keep the decoded object for the version's lifetime. High-volume types (pods) keep
only the encoding: their ``Doc`` holds the decoded object while it sits in the table's
``DecodedCache`` (the versions written or read most recently), and decodes it again on demand
after that. A million stored pods then cost their encoding each, not a tree of dicts each
(ADR 0110).

A ``Watcher`` is what storage hands a watch request. Storage pushes every change of the
watched type into it synchronously (``offer``); the watcher applies the namespace and
selector filters, turning an object that starts or stops matching into ADDED or DELETED as
kube-apiserver does, and buffers the result for the HTTP stream to drain.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from dsctl_api.fields import FieldSelector
from dsctl_api.labels import Selector

__all__ = ["DecodedCache", "Doc", "WatchEvent", "Watcher"]

Obj = dict[str, Any]


def _encode(obj: Obj) -> bytes:
    # orjson's result keeps its over-allocated buffer (~4x the JSON for a pod); an exact-size
    # copy is what is worth keeping for the version's lifetime.
    return bytes(memoryview(orjson.dumps(obj)))


class DecodedCache:
    """The decoded objects of one table's most recently written or read versions.

    Holds at most ``capacity`` docs; the least recently used one gives up its decoded object
    (its encoding stays). Readers that already hold the dict keep it: a version is immutable,
    so a later decode gives an equal dict.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._docs: OrderedDict[int, Doc] = OrderedDict()
        self.decodes = 0

    def keep(self, doc: Doc, obj: Obj) -> None:
        """Hold ``obj`` as ``doc``'s decoded object, evicting the least recently used doc."""
        doc._obj = obj
        docs = self._docs
        key = id(doc)
        if key in docs:
            docs.move_to_end(key)
            return
        docs[key] = doc
        if len(docs) > self.capacity:
            _, evicted = docs.popitem(last=False)
            evicted._obj = None

    def forget(self, doc: Doc) -> None:
        """Drop ``doc`` (a version no longer current); its decoded object goes with the last reader."""
        self._docs.pop(id(doc), None)

    def __len__(self) -> int:
        return len(self._docs)


class Doc:
    """One stored version of an object. ``obj`` is shared: never mutate it.

    With ``cache`` the doc is compact: its encoding is made now and kept, and the decoded
    object lives only while ``cache`` holds the doc (see ``DecodedCache``).
    """

    __slots__ = ("_cache", "_obj", "_raw")

    def __init__(self, obj: Obj, *, cache: DecodedCache | None = None) -> None:
        self._obj: Obj | None = obj
        self._cache = cache
        self._raw: bytes | None = None
        if cache is not None:
            self._raw = _encode(obj)
            cache.keep(self, obj)

    @property
    def obj(self) -> Obj:
        """The decoded object (decoded again from ``raw`` when the cache let it go)."""
        obj = self._obj
        if obj is None:
            obj = orjson.loads(self._raw)  # type: ignore[arg-type]  # compact docs always have it
            cache = self._cache
            if cache is not None:
                cache.decodes += 1
                cache.keep(self, obj)
        return obj

    def peek(self) -> Obj:
        """The decoded object, without keeping it decoded: for a scan (a filtered list, an old
        version's selector match) that would otherwise push the loops' working set out."""
        obj = self._obj
        return obj if obj is not None else orjson.loads(self._raw)  # type: ignore[arg-type]

    @property
    def raw(self) -> bytes:
        """Compact JSON of ``obj``, encoded on first use and then cached."""
        raw = self._raw
        if raw is None:
            raw = self._raw = _encode(self.obj)
        return raw

    def release(self) -> None:
        """This version stopped being current: stop caching its decoded object."""
        if self._cache is not None:
            self._cache.forget(self)
            self._obj = None


class WatchEvent:
    """One change: ``type`` is ADDED, MODIFIED or DELETED; ``rv`` the global resourceVersion.

    ``old`` is the previous version for MODIFIED (used to compute selector transitions).
    """

    __slots__ = ("doc", "key", "old", "rv", "type")

    def __init__(self, type: str, doc: Doc, rv: int, *, key: str = "", old: Doc | None = None) -> None:
        self.type = type
        self.doc = doc
        self.rv = rv
        self.key = key
        self.old = old

    @property
    def object(self) -> Obj:
        """The object after the change (for DELETED: the last version, with the deletion RV)."""
        return self.doc.obj

    def line(self) -> bytes:
        """The NDJSON line a watch stream sends for this event."""
        return b'{"type":"' + self.type.encode() + b'","object":' + self.doc.raw + b"}\n"

    def __repr__(self) -> str:
        meta = self.doc.obj.get("metadata", {})
        where = f"{meta.get('namespace', '')}/{meta.get('name')}"
        return f"WatchEvent({self.type}, {self.key} {where}, rv={self.rv})"


FieldGetter = Callable[[Obj, str], str | None]


class Watcher:
    """A filtered, buffered feed of one resource type's changes for one client.

    Storage calls ``offer`` for every change; the consumer drains with ``next_batch``. When the
    buffer exceeds ``max_buffer`` the watcher closes itself (a slow client is cut off, as
    kube-apiserver does) and the client must re-watch from its last resourceVersion.
    """

    def __init__(
        self,
        key: str,
        *,
        namespace: str | None,
        label_selector: Selector | None,
        field_selector: FieldSelector | None,
        field_getter: FieldGetter,
        on_close: Callable[[Watcher], None],
        max_buffer: int = 200_000,
    ) -> None:
        self.key = key
        self.namespace = namespace
        self._labels = None if label_selector is None or label_selector.empty else label_selector
        self._fields = None if field_selector is None or field_selector.empty else field_selector
        self._getter = field_getter
        self._on_close = on_close
        self._max = max_buffer
        self._buf: deque[WatchEvent] = deque()
        self._offered: deque[float | None] = deque()  # beside _buf: when each was offered (None: preloaded)
        self._wake = asyncio.Event()
        self.closed = False
        self.overflowed = False
        self.expired = False
        self.batch_queued_at: float | None = None
        """When the oldest change in the last ``next_batch`` was offered; None when it held none,
        only the initial state or a history replay. The stream times the batch's delivery from it."""

    def matches(self, obj: Obj) -> bool:
        """Whether ``obj`` passes this watcher's namespace and selector filters."""
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self._labels is not None and not self._labels.matches(meta.get("labels")):
            return False
        if self._fields is not None:
            getter = self._getter
            return self._fields.matches(lambda path: getter(obj, path))
        return True

    def translate(self, ev: WatchEvent) -> WatchEvent | None:
        """The event this watcher should see for ``ev``, or None if it is filtered out."""
        if ev.type == "MODIFIED" and ev.old is not None and (self._labels or self._fields):
            now_in, was_in = self.matches(ev.doc.peek()), self.matches(ev.old.peek())
            if now_in and was_in:
                return ev
            if now_in:
                return WatchEvent("ADDED", ev.doc, ev.rv, key=ev.key)
            if was_in:
                return WatchEvent("DELETED", ev.doc, ev.rv, key=ev.key)
            return None
        return ev if self.matches(ev.doc.peek()) else None

    def offer(self, ev: WatchEvent) -> None:
        """Filter and buffer one change; called synchronously by storage."""
        if self.closed:
            return
        out = self.translate(ev)
        if out is None:
            return
        self._buf.append(out)
        self._offered.append(time.monotonic())
        if len(self._buf) > self._max:
            self.overflowed = True
            self._buf.clear()
            self._offered.clear()
            self.close()
            return
        self._wake.set()

    def preload(self, events: list[WatchEvent]) -> None:
        """Queue already-filtered events (the initial state or a history replay)."""
        self._buf.extend(events)
        self._offered.extend([None] * len(events))
        if self._buf:
            self._wake.set()

    def pending(self) -> int:
        """Events buffered and not yet drained."""
        return len(self._buf)

    async def next_batch(self, max_wait: float | None = None, *, limit: int = 1000) -> list[WatchEvent]:
        """Up to ``limit`` buffered events, waiting up to ``max_wait`` seconds for the first.

        Returns an empty list on timeout, and whatever is left (possibly nothing) once closed.
        """
        self.batch_queued_at = None
        if not self._buf and not self.closed:
            self._wake.clear()
            if max_wait is None:
                await self._wake.wait()
            else:
                try:
                    # Not ``wait_for``: it wraps the wait in a task of its own, so a wake-up
                    # took three turns of a loop that is busy admitting creates, not one.
                    async with asyncio.timeout(max_wait):
                        await self._wake.wait()
                except TimeoutError:
                    return []
        out: list[WatchEvent] = []
        buf, offered = self._buf, self._offered
        while buf and len(out) < limit:
            out.append(buf.popleft())
            at = offered.popleft()
            if self.batch_queued_at is None:
                self.batch_queued_at = at
        return out

    def close(self) -> None:
        """Stop the feed; a pending ``next_batch`` returns. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._wake.set()
        self._on_close(self)

    def expire(self) -> None:
        """Close as if the history behind this watch was compacted: the stream ends with 410."""
        self.expired = True
        self._buf.clear()
        self._offered.clear()
        self.close()

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        """Yield events one by one until the watcher is closed and drained."""
        while True:
            batch = await self.next_batch()
            if not batch and self.closed:
                return
            for ev in batch:
                yield ev
