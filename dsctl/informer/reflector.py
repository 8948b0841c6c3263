"""The reflector: keeps a :class:`~dsctl.informer.store.Store` equal to the server's state.

Cycle: list (paginated, ``limit`` per page, following ``continue``, each page written to the
store as it arrives while the next one is fetched; see :meth:`Reflector._list`), drop what the
list no longer holds, then
watch from the list's resourceVersion with bookmarks, applying each event to the store and then
notifying the sink. When a watch ends (server timeout, dropped connection, silence longer than
``inactivity_timeout``) it re-watches from the last resourceVersion seen, events and bookmarks
included. When the server answers 410 Gone the history it needs is compacted: it lists again and
*replaces* the store, so every object that vanished meanwhile is delivered as a delete and every
object that changed as an update.

With ``streaming_list`` the list is done by a watch with ``sendInitialEvents=true`` (ADDED
events, then a bookmark annotated ``k8s.io/initial-events-end``); a server that refuses it with a
4xx, or closes the stream before that bookmark, gets a plain list instead, from then on.

Every failure is classified in one place, :meth:`Reflector._classify`:

- Gone, or 504 "Too large resource version" (an apiserver behind our resourceVersion) →
  re-list now; TooManyRequests → wait ``Retry-After``;
- a dropped or silent watch (ConnectionFailed) → re-watch quietly, at once when the watch had
  been useful, after a backoff when it ended at once with nothing (a server that closes every
  watch immediately must not be hammered);
- anything else → log a warning and retry after a capped, jittered backoff.

Invariant: the store is only written here, and the sink is called after the store changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import structlog

from dsctl.informer.metrics import InformerMetrics
from dsctl.informer.store import Replacement, ReplaceResult, Store, object_key
from dsctl.informer.watchdecode import ListPage, PageDecoder, WatchEvent, event_decoder
from dsctl.kube.errors import ApiError, ConnectionFailed, Gone, TooManyRequests
from dsctl.kube.ratelimit import Backoff
from dsctl.kube.resources import Resource
from dsctl.kube.transport import gc_paused
from dsctl.kube.watch import LineDecoder, RunDecoder
from dsctl.tuning import LIST_APPLY_SLICE, RELIST_YIELD_EVERY

__all__ = [
    "INITIAL_EVENTS_END",
    "BatchListerWatcher",
    "ListerWatcher",
    "PageLister",
    "Reflector",
    "Sink",
    "is_too_large_resource_version",
]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
_T = TypeVar("_T")
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_SHORT_WATCH = 1.0
_TOO_LARGE_CAUSE = "ResourceVersionTooLarge"
_TOO_LARGE_MESSAGE = "Too large resource version"
_LIST_RESTARTS = 3
"""Consecutive restarts of one list after expired continue tokens (or pages of different
resourceVersions) before it counts as failed (then the reflector's Gone backoff applies)."""


class _MixedList(Exception):
    """A continued page carried another resourceVersion than the list's first page."""

    def __init__(self, first: str, page: str) -> None:
        super().__init__(f"page at resourceVersion {page}, first page at {first}")
        self.first = first
        self.page = page


class ListerWatcher(Protocol):
    """What a reflector needs from a client (``KubeClient`` provides it)."""

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> dict[str, Any]: ...

    def watch(
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
        inactivity_timeout: float | None = ...,
    ) -> AsyncGenerator[dict[str, Any], None]: ...


@runtime_checkable
class BatchListerWatcher(ListerWatcher, Protocol):
    """A client that also watches in batches, decoding lines with the reflector's decoder
    (``KubeClient`` does): one await per received chunk, and only the cached fields decoded."""

    def watch_batches(
        self,
        res: Resource,
        *,
        decode: LineDecoder[_T],
        decode_run: RunDecoder[_T] | None = None,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
        inactivity_timeout: float | None = ...,
    ) -> AsyncGenerator[list[_T], None]: ...


@runtime_checkable
class PageLister(Protocol):
    """A client that also lists a page into what a decoder of the raw body makes of it
    (``KubeClient`` does): the reflector's list path, which builds only the cached fields."""

    def list_page(
        self,
        res: Resource,
        *,
        decode: PageDecoder,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> Awaitable[ListPage]: ...


class Sink(Protocol):
    """Receives changes after they are in the store (the informer's handler fan-out)."""

    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj) -> None: ...


class _StreamingUnsupported(Exception):
    """The server ignored or refused ``sendInitialEvents``."""


@dataclass(frozen=True)
class _Action:
    relist: bool
    delay: float
    reason: str


def _rv_of(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return rv if isinstance(rv, str) and rv else None


def _discard_outcome(task: asyncio.Task[Any]) -> None:
    """Retrieve an abandoned task's failure, so that it is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()


def is_too_large_resource_version(exc: Exception) -> bool:
    """kube-apiserver's "Too large resource version" (504 Timeout, cause
    ``ResourceVersionTooLarge``; servers before 1.18.6 say it only in the message)."""
    if not isinstance(exc, ApiError) or exc.status != 504:
        return False
    if any(cause.get("reason") == _TOO_LARGE_CAUSE for cause in exc.causes):
        return True
    return _TOO_LARGE_MESSAGE in exc.message or any(
        cause.get("message") == _TOO_LARGE_MESSAGE for cause in exc.causes
    )


class Reflector:
    """List-then-watch loop for one resource; run :meth:`run` as a task, cancel to stop.

    ``clock`` is monotonic seconds (for ``last_progress``); ``wall`` is Unix time for metrics.
    """

    def __init__(
        self,
        client: ListerWatcher,
        resource: Resource,
        store: Store,
        sink: Sink,
        *,
        metrics: InformerMetrics,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        inactivity_timeout: float = 120.0,
        watch_timeout: int | None = None,
        streaming_list: bool = False,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.resource = resource
        self.store = store
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.inactivity_timeout = inactivity_timeout
        self.watch_timeout = watch_timeout
        self.streaming_list = streaming_list
        self.backoff = backoff or Backoff(base=0.5, cap=30.0)
        self._clock = clock
        self._wall = wall
        self.last_rv = ""
        self.need_list = True
        """Set until a list (or streaming list) replaced the store; set again by 410 Gone."""
        self.synced = asyncio.Event()
        self.last_progress = clock()
        self.relists = 0
        self.list_listeners: list[Callable[[], None]] = []
        """Called after every complete list, once its deletes are delivered (``Informer.on_listed``)."""
        self._watch_began: float | None = None
        self._gone_streak = 0
        label = resource.label
        self._log = log.bind(resource=label)
        self._m_events = metrics.events
        self._m_event_types = {
            kind: metrics.events.labels(resource=label, type=kind)
            for kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
        }
        self._m_relists = metrics.relists.labels(resource=label)
        self._m_last = metrics.last_event.labels(resource=label)
        self._m_objects = metrics.objects.labels(resource=label)
        # Both gauges are read when scraped, so an event pays for neither a lock nor a clock.
        self._m_last.set_function(self._last_progress_wall)
        self._m_objects.set_function(store.__len__)
        self._m_errors = metrics.errors
        self._label = label
        self._api_version = resource.api_version
        self._kind = resource.kind
        self._decode = event_decoder(store.transform, prepare=self._prepare,
                                     api_version=resource.api_version, kind=resource.kind)
        self._page_lister = client if isinstance(client, PageLister) else None

    # -- loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the store in sync until cancelled. Never returns otherwise."""
        while True:
            self._watch_began = None
            count = 0
            try:
                if self.need_list and self.streaming_list:
                    try:
                        count = await self._stream_list_and_watch()
                    except _StreamingUnsupported as exc:
                        self._log.info("informer.streaming_list.fallback", reason=str(exc))
                        self.streaming_list = False
                        continue
                else:
                    if self.need_list:
                        await self._list()
                    count = await self._watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                action = self._classify(exc, productive=self._productive(count))
                self.need_list = self.need_list or action.relist
                self._m_errors.labels(resource=self._label, reason=action.reason).inc()
                if action.delay > 0:
                    await asyncio.sleep(action.delay)
                continue
            # The watch ended cleanly (server timeout or EOF).
            if self._productive(count):
                self.backoff.reset()
                self._mark_progress()
            else:
                await asyncio.sleep(self.backoff.next_delay())

    def _productive(self, count: int) -> bool:
        """Did the last watch deliver events or stay up a while? (A failed list never did.)"""
        began = self._watch_began
        if began is None:
            return False
        return count > 0 or self._clock() - began >= _SHORT_WATCH

    def _classify(self, exc: Exception, *, productive: bool) -> _Action:
        """The single place that maps a list/watch failure to what to do next."""
        if isinstance(exc, Gone):
            return self._relist_action("gone", "Gone", productive=productive)
        if is_too_large_resource_version(exc):
            # This apiserver has not caught up with our resourceVersion (a lagging replica
            # after a failover): re-watching there fails again. client-go relists, reading
            # from etcd, and so do we (a list never names a resourceVersion).
            return self._relist_action("too_large_resource_version", "ResourceVersionTooLarge",
                                       productive=productive)
        if isinstance(exc, TooManyRequests):
            delay = exc.retry_after if exc.retry_after is not None else self.backoff.next_delay()
            self._log.info("informer.throttled", delay=round(delay, 3))
            return _Action(relist=False, delay=delay, reason="TooManyRequests")
        if isinstance(exc, ConnectionFailed):
            if productive:
                self.backoff.reset()
                self._mark_progress()
                self._log.debug("informer.rewatch", reason=exc.reason, detail=exc.message)
                return _Action(relist=False, delay=0.0, reason=exc.reason)
            delay = self.backoff.next_delay()
            self._log.info(
                "informer.connection_failed", detail=exc.message, attempt=self.backoff.failures,
                delay=round(delay, 3),
            )
            return _Action(relist=False, delay=delay, reason=exc.reason)
        delay = self.backoff.next_delay()
        if isinstance(exc, ApiError):
            self._log.warning(
                "informer.error", status=exc.status, reason=exc.reason, detail=exc.message,
                attempt=self.backoff.failures, delay=round(delay, 3),
            )
            return _Action(relist=False, delay=delay, reason=exc.reason)
        self._log.error(
            "informer.unexpected_error", attempt=self.backoff.failures, delay=round(delay, 3),
            exc_info=exc,
        )
        return _Action(relist=False, delay=delay, reason=type(exc).__name__)

    def _relist_action(self, cause: str, reason: str, *, productive: bool) -> _Action:
        """Re-list at once, unless the previous watch also ended this way before delivering
        anything: a history shorter than a list round trip must not become a hot loop."""
        self._gone_streak = 0 if productive else self._gone_streak + 1
        delay = self.backoff.next_delay() if self._gone_streak > 1 else 0.0
        self._log.info("informer.relist", cause=cause, last_rv=self.last_rv, delay=round(delay, 3))
        return _Action(relist=True, delay=delay, reason=reason)

    # -- list ----------------------------------------------------------------------------

    async def _list(self) -> None:
        """List page by page into the store, then drop what the list did not contain.

        Each page is projected and written to the store as it arrives, and its changes are
        delivered to the handlers, while the next page is fetched (ADR 0205), so a relist holds
        the cache plus two pages, never a second copy of the whole list. A continue token that
        expired mid-way (410: the list outlived the server's history) starts the list again
        from its first page, at most ``_LIST_RESTARTS`` times in a row. client-go's pager
        falls back to one unpaginated list instead, which at scale, decoded in one piece, holds
        a second copy of the whole cache in memory (ADR 0042).

        Every page of one list must carry the first page's resourceVersion: kube-apiserver serves
        continued pages at that version. A page at another one (a server or proxy that continued
        from its current state) restarts the list as well: the watch would start from the newer
        version and never deliver what changed, before it, among the objects of earlier pages.
        """
        replacement = self.store.begin_replace()
        restarts = 0
        while True:
            try:
                rv = await self._list_pages(replacement)
                break
            except (Gone, _MixedList) as exc:
                if restarts >= _LIST_RESTARTS:
                    if isinstance(exc, _MixedList):
                        raise Gone(410, "Expired", f"inconsistent paginated list: {exc}") from exc
                    raise
                restarts += 1
                if isinstance(exc, _MixedList):
                    self._log.warning("informer.list.inconsistent", restart=restarts, first_rv=exc.first,
                                      page_rv=exc.page)
                    self._m_errors.labels(resource=self._label, reason="InconsistentList").inc()
                else:
                    self._log.info("informer.list.continue_expired", restart=restarts)
                    self._m_errors.labels(resource=self._label, reason="ContinueExpired").inc()
                replacement.restart()
        await self._finish_list(replacement, rv)

    async def _list_pages(self, replacement: Replacement) -> str:
        """Fetch and apply every page; return the list's resourceVersion. Gone from a page
        after the first means its continue token expired."""
        rv = ""
        prepare = self._prepare
        first = True
        ahead: asyncio.Task[ListPage] | None = None
        try:
            page = await self._fetch_page(None)
            while True:
                page_rv = page.resource_version or rv
                if not first and page_rv != rv:
                    raise _MixedList(rv, page_rv)
                rv, first = page_rv, False
                token = page.continue_ or None
                if token:
                    # The server answers the next page while this one is applied: the request
                    # goes out at the first yield below.
                    ahead = asyncio.create_task(self._fetch_page(token),
                                                name=f"informer-list-ahead-{self._label}")
                items = page.items
                transform = None if page.prepared else prepare
                del page
                for at in range(0, len(items), LIST_APPLY_SLICE):
                    with gc_paused():
                        result = replacement.apply(items[at:at + LIST_APPLY_SLICE], prepare=transform)
                    self._applied(result)
                    await asyncio.sleep(0)
                del items
                if ahead is None:
                    return rv
                page = await ahead
                ahead = None
        finally:
            if ahead is not None:  # the list failed or was cancelled: its next page is moot
                ahead.cancel()
                ahead.add_done_callback(_discard_outcome)

    async def _fetch_page(self, token: str | None) -> ListPage:
        """One page of the list, its items prepared already when the client decodes with our
        page decoder (only the cached fields built), else as the client's ``list`` gives them."""
        options: dict[str, Any] = {
            "namespace": self.namespace,
            "label_selector": self.label_selector,
            "field_selector": self.field_selector,
            "limit": self.page_size,
            "continue_": token,
        }
        if self._page_lister is not None:
            return await self._page_lister.list_page(self.resource, decode=self._decode.page, **options)
        page = await self.client.list(self.resource, **options)
        meta = page.get("metadata") or {}
        return ListPage(meta.get("resourceVersion") or "", meta.get("continue") or "",
                        page.get("items") or [], False)

    def _applied(self, result: ReplaceResult) -> None:
        """Deliver one applied page's changes (the store already holds them). A page is
        progress: a long relist must not look like a stuck informer."""
        self._mark_progress()
        sink = self.sink
        for old, new in result.updated:
            sink.on_update(old, new)
        for new in result.added:
            sink.on_add(new)

    async def _finish_list(self, replacement: Replacement, rv: str) -> None:
        deleted = replacement.finish(rv)
        self.last_rv = rv
        self.need_list = False
        self.relists += 1
        self._m_relists.inc()
        self._mark_progress()
        self._log.info("informer.listed", objects=len(self.store), rv=rv, deleted=len(deleted))
        sink = self.sink
        for done, old in enumerate(deleted, 1):
            sink.on_delete(old)
            if done % RELIST_YIELD_EVERY == 0:
                await asyncio.sleep(0)
        self.synced.set()
        for listener in tuple(self.list_listeners):
            try:
                listener()
            except Exception as exc:  # a listener's bug must not cost the store its watch
                self._log.error("informer.list_listener_failed", exc_info=exc)

    # -- watch ---------------------------------------------------------------------------

    def _open_watch(self, *, initial: bool) -> AsyncGenerator[list[WatchEvent], None]:
        """Batches of prepared events: decoded by the client with our decoder when it can,
        else each raw event prepared here (a client with only ``watch``, like test fakes)."""
        options: dict[str, Any] = {
            "namespace": self.namespace,
            "resource_version": "" if initial else self.last_rv,
            "label_selector": self.label_selector,
            "field_selector": self.field_selector,
            "allow_bookmarks": True,
            "timeout_seconds": self.watch_timeout,
            "send_initial_events": initial,
            "inactivity_timeout": self.inactivity_timeout,
        }
        if isinstance(self.client, BatchListerWatcher):
            return self.client.watch_batches(self.resource, decode=self._decode.line,
                                             decode_run=self._decode.run, **options)
        return self._one_by_one(self.client.watch(self.resource, **options))

    async def _one_by_one(
        self, events: AsyncGenerator[dict[str, Any], None]
    ) -> AsyncGenerator[list[WatchEvent], None]:
        async with contextlib.aclosing(events):
            async for event in events:
                kind: str = event["type"]
                obj: Obj = event["object"]
                yield [(kind, obj if kind == "BOOKMARK" else self._prepare(obj))]

    async def _watch(self) -> int:
        self._watch_began = self._clock()
        count = 0
        async with contextlib.aclosing(self._open_watch(initial=False)) as batches:
            async for batch in batches:
                count += len(batch)
                self._apply(batch)
        return count

    async def _stream_list_and_watch(self) -> int:
        self._watch_began = self._clock()
        replacement = self.store.begin_replace()
        initial_done = False
        count = 0
        try:
            async with contextlib.aclosing(self._open_watch(initial=True)) as batches:
                async for batch in batches:
                    count += len(batch)
                    if initial_done:
                        self._apply(batch)
                        continue
                    for done, (kind, obj) in enumerate(batch, 1):
                        if kind == "BOOKMARK":
                            annotations = (obj.get("metadata") or {}).get("annotations") or {}
                            if annotations.get(INITIAL_EVENTS_END) == "true":
                                await self._finish_list(replacement, _rv_of(obj) or "")
                                initial_done = True
                                self._apply(batch[done:])
                                break
                        elif kind == "DELETED":
                            # Not sent by kube-apiserver before the bookmark; applied as a normal
                            # delete, and ``finish`` drops whatever else the stream never named.
                            self._apply([(kind, obj)])
                        else:
                            self._applied(replacement.apply((obj,), prepare=None))
        except ApiError as exc:
            if 400 <= exc.status < 500 and exc.status not in (410, 429) and not initial_done:
                raise _StreamingUnsupported(f"{exc.status} {exc.reason}") from None
            raise
        if not initial_done:
            raise _StreamingUnsupported("stream ended before the initial-events-end bookmark")
        return count

    def _apply(self, batch: list[WatchEvent]) -> None:
        """Watch events, in order, each stored and then delivered to the sink. The hot path of
        a busy cluster (tens of thousands of events per second): the objects arrive prepared,
        and metrics and the progress clock are touched once per batch, not per event."""
        store = self.store
        sink = self.sink
        counts: dict[str, int] = {}
        try:
            for kind, obj in batch:
                counts[kind] = counts.get(kind, 0) + 1
                meta = obj.get("metadata")
                rv = meta.get("resourceVersion") if meta.__class__ is dict else None
                if rv.__class__ is not str or not rv:
                    rv = None
                if kind == "BOOKMARK":
                    self._advance(rv)
                    continue
                key = object_key(obj)  # projections keep name and namespace: the cached key
                if kind == "DELETED":
                    old = store.delete(key)
                    self._advance(rv)
                    if old is not None:
                        sink.on_delete(obj)
                    continue
                old = store.swap(key, obj)
                if rv is not None:
                    self.last_rv = rv
                    store.resource_version = rv
                if old is None:
                    sink.on_add(obj)
                else:
                    sink.on_update(old, obj)
        finally:
            for kind, n in counts.items():
                counter = self._m_event_types.get(kind)
                if counter is None:
                    counter = self._m_events.labels(resource=self._label, type=kind)
                counter.inc(n)
            if counts:
                self.last_progress = self._clock()

    def _advance(self, rv: str | None) -> None:
        """The store now reflects ``rv`` (an event's or a bookmark's); re-watch from there."""
        if rv:
            self.last_rv = rv
            self.store.resource_version = rv

    def _prepare(self, obj: Obj) -> Obj:
        """Fill in apiVersion/kind (list items come without them, watch objects with them),
        then apply the store's transform. The decoded object is ours to complete."""
        if "kind" not in obj:
            obj["apiVersion"] = self._api_version
            obj["kind"] = self._kind
        return self.store.prepare(obj)

    def _mark_progress(self) -> None:
        self.last_progress = self._clock()

    def _last_progress_wall(self) -> float:
        """``last_progress`` as Unix time (what the last-event gauge shows when scraped)."""
        return self._wall() - (self._clock() - self.last_progress)
