"""Where every stored change goes: history, watchers, in-process queues, listeners.

Storage calls ``publish`` once per committed change; the change is recorded in its type's
bounded history, offered to that type's open watchers, put on every ``subscribe`` queue and
passed to every listener, in that order. ``open_watch`` builds a watcher that first replays
the recorded changes after a resourceVersion, then stays live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from dsctl_api.fields import FieldSelector
from dsctl_api.labels import Selector
from dsctl_sim.errors import Gone
from dsctl_sim.strategy import field_value
from dsctl_sim.table import Table
from dsctl_sim.watch import Watcher, WatchEvent

__all__ = ["ChangeFeeds", "Listener"]

log = structlog.get_logger(__name__)

Listener = Callable[[WatchEvent], None]


class ChangeFeeds:
    """The fan-out side of storage; one instance per ``Storage``."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[asyncio.Queue[WatchEvent]]] = {}
        self._listeners: dict[str, list[Listener]] = {}

    def publish(self, table: Table, ev: WatchEvent) -> None:
        """Record and deliver one committed change of ``table``'s type."""
        table.record(ev)
        for w in list(table.watchers):
            w.offer(ev)
        key = table.rt.key
        for q in self._subscribers.get(key, ()):
            q.put_nowait(ev)
        for fn in list(self._listeners.get(key, ())):
            try:
                fn(ev)
            except Exception:
                log.exception("storage_listener_failed", key=key)

    def open_watch(
        self,
        table: Table,
        *,
        namespace: str | None,
        since_rv: int | None,
        current_rv: int,
        labels: Selector | None,
        fields: FieldSelector | None,
        max_buffer: int,
    ) -> Watcher:
        """A registered watcher for ``table``; ``Gone`` if ``since_rv`` predates its history."""
        if since_rv is not None and since_rv < table.floor:
            raise Gone(f"too old resource version: {since_rv} ({table.floor + 1})")
        w = Watcher(
            table.rt.key,
            namespace=namespace if table.rt.namespaced else None,
            label_selector=labels,
            field_selector=fields,
            field_getter=field_value,
            on_close=lambda w: table.watchers.remove(w) if w in table.watchers else None,
            max_buffer=max_buffer,
        )
        if since_rv is not None and since_rv < current_rv:
            w.preload([out for ev in table.since(since_rv) if (out := w.translate(ev)) is not None])
        table.watchers.append(w)
        return w

    def subscribe(self, key: str) -> asyncio.Queue[WatchEvent]:
        """A new unbounded queue fed with every change of ``key``."""
        q: asyncio.Queue[WatchEvent] = asyncio.Queue()
        self._subscribers.setdefault(key, []).append(q)
        return q

    def unsubscribe(self, key: str, queue: asyncio.Queue[WatchEvent]) -> None:
        """Stop feeding ``queue``."""
        subs = self._subscribers.get(key, [])
        if queue in subs:
            subs.remove(queue)

    def add_listener(self, key: str, fn: Listener) -> Callable[[], None]:
        """Register ``fn`` for changes of ``key``; returns its remover."""
        self._listeners.setdefault(key, []).append(fn)

        def remove() -> None:
            fns = self._listeners.get(key, [])
            if fn in fns:
                fns.remove(fn)

        return remove
