"""An in-memory list/watch source for reflector tests, the seam client-go's tests also use.

It keeps objects with a global resourceVersion and an event history that tests can compact
(next watches from older RVs get Gone), can end every open watch (a dropped connection), can
inject errors into the next list/watch calls, honours the inactivity timeout like the real
client (a silent watch raises ConnectionFailed "WatchInactive"), and records every call.

A paginated list is served as kube-apiserver serves it: every page from the state and at the
resourceVersion of the first page. ``current_pages`` makes the next N continued pages come
from the current state at the current resourceVersion instead (a server that does not keep
the snapshot), to test that the reflector refuses such a list.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from dsctl.informer.reflector import INITIAL_EVENTS_END
from dsctl.informer.store import object_key
from dsctl.kube.errors import ApiError, ConnectionFailed, Gone
from dsctl.kube.resources import Resource

Obj = dict[str, Any]
_T = TypeVar("_T")


@dataclass
class Call:
    """One list or watch call."""

    verb: str
    resource_version: str | None = None
    continue_: str | None = None
    send_initial_events: bool = False
    limit: int | None = None


@dataclass
class FakeSource:
    """Objects plus history; ``supports_streaming`` False makes sendInitialEvents a 422."""

    supports_streaming: bool = True
    objects: dict[str, Obj] = field(default_factory=dict)
    history: list[tuple[int, str, Obj]] = field(default_factory=list)
    rv: int = 100
    oldest: int = 100
    calls: list[Call] = field(default_factory=list)
    list_errors: deque[Exception | None] = field(default_factory=deque)
    """Errors for the next list calls, in order; None lets that call succeed."""
    watch_errors: deque[Exception | None] = field(default_factory=deque)
    current_pages: int = 0
    """How many of the next continued pages come from the current state, not the first page's."""
    on_page: list[Any] = field(default_factory=list)
    """Callbacks run (and dropped) after the next pages are served: writes between two pages."""
    _snapshot: tuple[list[Obj], int] = field(default_factory=lambda: ([], 0))
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _generation: int = 0

    # -- mutations ---------------------------------------------------------------------

    def _record(self, kind: str, obj: Obj) -> Obj:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, kind, obj))
        return obj

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def put(self, obj: Obj) -> Obj:
        """Create or update an object."""
        key = object_key(obj)
        kind = "MODIFIED" if key in self.objects else "ADDED"
        stored = self._record(kind, obj)
        self.objects[key] = stored
        await self._notify()
        return stored

    async def remove(self, key: str) -> None:
        """Delete an object."""
        old = self.objects.pop(key)
        self._record("DELETED", old)
        await self._notify()

    def compact(self) -> None:
        """Forget all history: watches from any older RV now get Gone."""
        self.oldest = self.rv
        self.history.clear()

    async def drop_watches(self) -> None:
        """End every open watch stream, as a dropped connection would."""
        self._generation += 1
        await self._notify()

    # -- ListerWatcher -----------------------------------------------------------------

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> dict[str, Any]:
        self.calls.append(Call("list", continue_=continue_, limit=limit))
        if self.list_errors and (error := self.list_errors.popleft()) is not None:
            raise error
        if continue_ is None:
            self._snapshot = (copy.deepcopy(sorted(self.objects.values(), key=object_key)), self.rv)
        items, rv = self._snapshot
        if continue_ is not None and self.current_pages > 0:
            self.current_pages -= 1
            items, rv = copy.deepcopy(sorted(self.objects.values(), key=object_key)), self.rv
        start = int(continue_ or 0)
        end = len(items) if not limit else start + limit
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if end < len(items):
            meta["continue"] = str(end)
        page = {"items": copy.deepcopy(items[start:end]), "metadata": meta}
        if self.on_page:
            await self.on_page.pop(0)()
        return page

    async def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
        inactivity_timeout: float | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        self.calls.append(Call("watch", resource_version, send_initial_events=send_initial_events))
        if self.watch_errors and (error := self.watch_errors.popleft()) is not None:
            raise error
        generation = self._generation
        if send_initial_events:
            if not self.supports_streaming:
                raise ApiError(422, "Invalid", "sendInitialEvents is not supported")
            since = self.rv
            for obj in sorted(self.objects.values(), key=object_key):
                yield {"type": "ADDED", "object": copy.deepcopy(obj)}
            yield {"type": "BOOKMARK", "object": {"metadata": {
                "resourceVersion": str(since), "annotations": {INITIAL_EVENTS_END: "true"}}}}
        else:
            since = int(resource_version or self.rv)
            if since < self.oldest:
                raise Gone(410, "Expired", f"too old resource version: {since} ({self.oldest})")
        while True:
            for rv, kind, obj in list(self.history):
                if rv > since:
                    since = rv
                    yield {"type": kind, "object": copy.deepcopy(obj)}
            async with self._changed:
                if self._generation != generation:
                    return
                if not any(rv > since for rv, _, _ in self.history):
                    try:
                        await asyncio.wait_for(self._changed.wait(), inactivity_timeout)
                    except TimeoutError:
                        raise ConnectionFailed("watch silent", reason="WatchInactive") from None
            if self._generation != generation:
                return


@dataclass
class PagedFakeSource(FakeSource):
    """A source that also lists pages into what the reflector's page decoder makes of the
    encoded body, as ``KubeClient.list_page`` does; ``page_log`` records each page asked for."""

    page_log: list[Any] = field(default_factory=list)
    """Shared with a test's handlers, to see when each page was asked for."""

    async def list_page(
        self,
        res: Resource,
        *,
        decode: Callable[[bytes], _T],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> _T:
        self.page_log.append(("page", continue_))
        page = await self.list(res, namespace=namespace, label_selector=label_selector,
                               field_selector=field_selector, limit=limit, continue_=continue_)
        return decode(orjson.dumps(page))
