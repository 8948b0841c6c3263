"""Watch requests: a chunked NDJSON stream of ``{"type", "object"}`` events.

Starting points, as kube-apiserver defines them:

- ``resourceVersion`` unset or ``"0"``: synthetic ADDED for every current object, then changes.
- ``resourceVersion=N``: every change after N, replayed from history; too old → 410 Expired,
  sent as an ERROR event in a 200 stream (or as an HTTP 410 when the ``gone_as_http``
  fault is on). The ``too_large_rv_watches`` fault answers an in-stream 504 "Too large
  resource version" instead, as a lagging apiserver does.
- ``sendInitialEvents=true`` (with ``resourceVersionMatch=NotOlderThan`` and bookmarks): the
  current state as ADDED, then a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``,
  which is how ``kubectl rollout status`` (the WatchList client) knows it is in sync.

With ``allowWatchBookmarks`` a BOOKMARK carrying the current resourceVersion is sent every
``bookmark_seconds`` once the buffer is drained. The stream ends at ``timeoutSeconds``, when
the watch-drop fault fires, when the server stops, or when the client goes away.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from dsctl_api.fields import FieldSelector
from dsctl_api.labels import Selector
from dsctl_sim import semantics
from dsctl_sim.errors import BadRequest, Gone, Invalid, StorageError
from dsctl_sim.routing import RequestInfo
from dsctl_sim.state import ApiState
from dsctl_sim.watch import Doc, Watcher, WatchEvent

__all__ = ["WatchOptions", "serve_watch"]

_INITIAL_END = "k8s.io/initial-events-end"
_INITIAL_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """Parsed watch query parameters."""

    since_rv: int | None
    send_initial: bool
    initial_end_bookmark: bool
    bookmarks: bool
    timeout: float
    table: bool

    @classmethod
    def parse(cls, query: Any, *, state: ApiState, table: bool) -> WatchOptions:
        """From the request query; 400/422 for values kube-apiserver rejects."""
        raw_rv = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        sie = query.get("sendInitialEvents", "").lower()
        match = query.get("resourceVersionMatch", "")
        if sie == "true" and (match != "NotOlderThan" or not bookmarks):
            raise Invalid("sendInitialEvents requires resourceVersionMatch=NotOlderThan and "
                          "allowWatchBookmarks=true", causes=[{"field": "sendInitialEvents",
                          "reason": "FieldValueForbidden", "message": "requires NotOlderThan"}])
        try:
            rv = int(raw_rv) if raw_rv not in ("", "0") else None
        except ValueError as err:
            raise Invalid(f"invalid resourceVersion {raw_rv!r}") from err
        initial = sie == "true" or (rv is None and sie != "false")
        since = None if initial else rv
        try:
            asked = float(query.get("timeoutSeconds") or 0)
        except ValueError as err:
            raise BadRequest(f"invalid timeoutSeconds {query.get('timeoutSeconds')!r}") from err
        if asked > 0:
            timeout = asked
        else:  # unset or 0: the server picks, as kube-apiserver does
            lo, hi = state.min_watch_timeout, state.max_watch_timeout
            timeout = lo + state.faults.rng.random() * max(0.0, hi - lo)
        return cls(since, initial, sie == "true", bookmarks, timeout, table)


class _TooLargeResourceVersion(StorageError):
    code = 504
    reason = "Timeout"


def _too_large_rv(asked: int, current: int) -> _TooLargeResourceVersion:
    """What kube-apiserver's watch cache answers a resourceVersion it has not reached yet
    (``storage.NewTooLargeResourceVersionError``: a Timeout with a typed cause)."""
    return _TooLargeResourceVersion(
        f"Timeout: Too large resource version: {asked}, current: {current}",
        details={"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                 "retryAfterSeconds": 1},
    )


def _bookmark(info: RequestInfo, rv: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {_INITIAL_END: "true"}
    obj = {"kind": info.rt.kind, "apiVersion": info.rt.api_version, "metadata": meta}
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _error_line(err: StorageError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.to_status()}) + b"\n"


def _event_line(ev: WatchEvent, ctx: _StreamContext) -> bytes:
    if not ctx.opts.table:
        return ev.line()
    table = semantics.render_table(ctx.query, ctx.state.storage, ctx.info.rt, [ev.doc.obj], ctx.state.now(),
                                   include_headers=not ctx.headers_sent)
    ctx.headers_sent = True
    return orjson.dumps({"type": ev.type, "object": table}) + b"\n"


@dataclass(slots=True)
class _StreamContext:
    state: ApiState
    info: RequestInfo
    opts: WatchOptions
    query: Any
    headers_sent: bool = False


async def _start(resp: web.StreamResponse, request: web.BaseRequest) -> None:
    resp.content_type = "application/json"
    resp.enable_chunked_encoding()
    await resp.prepare(request)


async def serve_watch(
    request: web.BaseRequest,
    state: ApiState,
    info: RequestInfo,
    *,
    labels: Selector | None,
    fields: FieldSelector | None,
    opts: WatchOptions,
) -> web.StreamResponse:
    """Run one watch stream to its end. Raises ``Gone`` only in ``gone_as_http`` mode."""
    storage = state.storage
    key = info.rt.key
    ctx = _StreamContext(state, info, opts, request.query)
    resp = web.StreamResponse(status=200)
    docs: list[Doc] = []
    rv = 0
    try:
        if opts.send_initial:
            # Snapshot and registration happen in one synchronous step: nothing falls between.
            docs, rv = storage.list_docs(key, namespace=info.namespace, label_selector=labels,
                                         field_selector=fields)
            watcher = storage.watch(key, namespace=info.namespace, since_rv=None,
                                    label_selector=labels, field_selector=fields)
        else:
            if opts.since_rv is not None and state.faults.take_too_large_rv():
                raise _too_large_rv(opts.since_rv, storage.resource_version)
            watcher = storage.watch(key, namespace=info.namespace, since_rv=opts.since_rv,
                                    label_selector=labels, field_selector=fields)
    except (Gone, _TooLargeResourceVersion) as err:
        if isinstance(err, Gone) and state.faults.config.gone_as_http:
            raise
        await _start(resp, request)
        await resp.write(_error_line(err))
        return resp
    try:
        await _start(resp, request)
        # Encode the initial state a slice at a time: 150,000 pods are ~230 MB of lines.
        for i in range(0, len(docs), _INITIAL_CHUNK):
            await resp.write(b"".join(_event_line(WatchEvent("ADDED", d, rv), ctx)
                                      for d in docs[i:i + _INITIAL_CHUNK]))
        if opts.send_initial and opts.initial_end_bookmark:
            await resp.write(_bookmark(info, rv, initial_end=True))
        docs = []
        await _pump(resp, ctx, watcher)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        watcher.close()
    return resp


async def _pump(resp: web.StreamResponse, ctx: _StreamContext, watcher: Watcher) -> None:
    state, info, opts = ctx.state, ctx.info, ctx.opts
    start = time.monotonic()
    deadline = start + opts.timeout
    drop = state.faults.config.watch_drop_seconds
    if drop > 0:
        deadline = min(deadline, start + drop)
    next_bookmark = start + state.bookmark_seconds
    while not state.stopping:
        now = time.monotonic()
        if now >= deadline:
            return
        wait = deadline - now
        if opts.bookmarks:
            wait = min(wait, max(0.0, next_bookmark - now))
        batch = await watcher.next_batch(wait)
        if batch:
            delay = state.faults.config.watch_event_latency_ms / 1000.0
            if delay > 0:
                await asyncio.sleep(delay)
            lines = b"".join(_event_line(ev, ctx) for ev in batch)
            if watcher.batch_queued_at is not None and state.metrics is not None:
                state.metrics.watch_delivered(resource=info.rt.group_resource,
                                              seconds=time.monotonic() - watcher.batch_queued_at)
            await resp.write(lines)
        if watcher.closed and not watcher.pending():
            if watcher.expired:
                floor = state.storage.table(info.rt.key).floor
                await resp.write(_error_line(Gone(f"too old resource version: ({floor + 1})")))
            return
        if opts.bookmarks and time.monotonic() >= next_bookmark and not watcher.pending():
            await resp.write(_bookmark(info, state.storage.resource_version))
            next_bookmark = time.monotonic() + state.bookmark_seconds
