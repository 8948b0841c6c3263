"""Stored object versions, change events and the per-client watcher buffer.

``Doc`` is one immutable version of an object plus its JSON encoding, computed at most once:
a list of 150,000 pods and every watch stream that carries a version reuse the same bytes.

A ``Watcher`` is what storage hands a watch request. Storage pushes every change of the
watched type into it synchronously (``offer``); the watcher applies the namespace and
selector filters, turning an object that starts or stops matching into ADDED or DELETED as
kube-apiserver does, and buffers the result for the HTTP stream to drain.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from dsctl_api.fields import FieldSelector
from dsctl_api.labels import Selector

__all__ = ["Doc", "WatchEvent", "Watcher"]

Obj = dict[str, Any]


class Doc:
    """One stored version of an object. ``obj`` is shared: never mutate it."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    @property
    def raw(self) -> bytes:
        """Compact JSON of ``obj``, encoded on first use and then cached."""
        raw = self._raw
        if raw is None:
            # orjson's result keeps its over-allocated buffer (~4x the JSON for a pod); an
            # exact-size copy is what is worth keeping for the object's lifetime.
            raw = self._raw = bytes(memoryview(orjson.dumps(self.obj)))
        return raw


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
            now_in, was_in = self.matches(ev.doc.obj), self.matches(ev.old.obj)
            if now_in and was_in:
                return ev
            if now_in:
                return WatchEvent("ADDED", ev.doc, ev.rv, key=ev.key)
            if was_in:
                return WatchEvent("DELETED", ev.doc, ev.rv, key=ev.key)
            return None
        return ev if self.matches(ev.doc.obj) else None

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
