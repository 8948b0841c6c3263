"""The view's HTTP server: the page, its snapshot, its live updates, and cell details.

Routes (all GET; the server has no route that changes anything):

- ``/``: the page; ``/static/view.js`` and ``/static/view.css``: its code and style, served from
  the package (no asset comes from anywhere else: the page's Content-Security-Policy allows only
  its own origin);
- ``/api/snapshot``: the whole grid (``GridModel.snapshot``), gzip-compressed when the browser
  accepts it;
- ``/api/events``: server-sent events. ``hello`` first (the page then fetches a snapshot),
  then ``delta`` (changed cells and headers) and ``layout`` (fetch a new snapshot) as
  ``flush`` produces them, every ``period`` seconds at most (ADR 0126, 0127);
- ``/api/cell?ds=NS/NAME&node=NODE``: the pod, the node and the pod's last events (read on
  demand with a field selector on ``involvedObject``);
- ``/healthz``.

Bound to loopback, it answers only requests whose ``Host`` names a loopback address, so a web
page elsewhere cannot read the cluster through it by rebinding a DNS name to 127.0.0.1.

``ViewServer`` owns the aiohttp runner, the flush task and the subscribers' queues; ``start``
then ``stop``. A page that falls ``queue_limit`` updates behind is disconnected; its
EventSource reconnects and starts again from a snapshot, so a slow page never holds memory
or slows the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any

import orjson
import structlog
from aiohttp import web

from dsctl.view.model import GridModel

__all__ = ["DEFAULT_PERIOD", "QUEUE_LIMIT", "EventReader", "ViewServer"]

log = structlog.get_logger(__name__)

DEFAULT_PERIOD = 0.15
"""Seconds between flushes: changes within one period reach the page as one message."""
QUEUE_LIMIT = 200
"""Updates a page may fall behind before it is disconnected (and starts over from a snapshot)."""
PING_SECONDS = 15.0
"""A comment line this often keeps idle connections (and proxies) from timing out."""
RETRY_MS = 1000
"""How soon a disconnected page's EventSource reconnects."""

EventReader = Callable[[str, str, str], Awaitable[list[dict[str, Any]]]]
"""``(namespace, pod name, pod uid) -> events`` of that pod, newest last."""

_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_STATIC = {"view.js": "text/javascript", "view.css": "text/css", "index.html": "text/html"}
_LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost"}


def _asset(name: str) -> bytes:
    return resources.files("dsctl.view").joinpath("static", name).read_bytes()


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8089`` -> ``::1``)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class ViewServer:
    """Serves one ``GridModel``; ``read_events`` answers the details' event lists."""

    def __init__(
        self,
        model: GridModel,
        *,
        read_events: EventReader | None = None,
        period: float = DEFAULT_PERIOD,
        queue_limit: int = QUEUE_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.queue_limit = queue_limit
        self._read_events = read_events
        self.period = period
        self._clock = clock
        self._assets = {name: _asset(name) for name in _STATIC}
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()
        self._runner: web.AppRunner | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._loopback_only = True
        self.url = ""
        self.stats = {"updates": 0, "bytes_pushed": 0, "dropped_pages": 0, "flush_seconds": 0.0}
        """Counters since start: updates pushed, bytes pushed to all pages, pages dropped for
        falling behind, and seconds spent in ``flush``."""

    def app(self) -> web.Application:
        """The aiohttp application (also what tests drive with aiohttp's test client)."""
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_get("/api/events", self._events)
        app.router.add_get("/api/cell", self._cell)
        app.router.add_get("/healthz", self._healthz)
        return app

    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` and start flushing; returns the page's URL. Raises ``OSError``."""
        self._loopback_only = _is_loopback(host)
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        bound = self._runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
        self.url = f"http://{shown}:{bound[1]}/"
        self.run_flusher()
        return self.url

    def run_flusher(self) -> None:
        """Start the flush task (``start`` does; tests on aiohttp's own server call it)."""
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_loop(), name="view-flush")

    async def stop(self) -> None:
        """Stop flushing, end every page's stream, close the listener."""
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.gather(self._flusher, return_exceptions=True)
            self._flusher = None
        for queue in list(self._subscribers):
            _offer(queue, None)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- pushing -----------------------------------------------------------------------------

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            self.flush_once()

    def flush_once(self) -> int:
        """One flush and broadcast; returns the bytes of the message (0 when nothing changed)."""
        started = self._clock()
        update = self.model.flush()
        self.stats["flush_seconds"] += self._clock() - started
        if update is None:
            return 0
        event = "layout" if update.layout_changed else "delta"
        message = b"event: " + event.encode() + b"\ndata: " + orjson.dumps(update.wire()) + b"\n\n"
        self.stats["updates"] += 1
        for queue in list(self._subscribers):
            if not _offer(queue, message):
                self._subscribers.discard(queue)
                self.stats["dropped_pages"] += 1
                continue
            self.stats["bytes_pushed"] += len(message)
        return len(message)

    # -- handlers ----------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
        if self._loopback_only and not _is_loopback(_host_name(request.host)):
            return web.Response(status=421, text="dsctl view answers only on a loopback address\n")
        return await handler(request)

    async def _index(self, _request: web.Request) -> web.Response:
        return web.Response(body=self._assets["index.html"], content_type="text/html", charset="utf-8",
                            headers={"Content-Security-Policy": _CSP, "Cache-Control": "no-cache",
                                     "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"})

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _STATIC or name == "index.html":
            raise web.HTTPNotFound()
        return web.Response(body=self._assets[name], content_type=_STATIC[name], charset="utf-8",
                            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})

    async def _snapshot(self, _request: web.Request) -> web.Response:
        body = orjson.dumps(self.model.snapshot())
        response = web.Response(body=body, content_type="application/json", headers={"Cache-Control": "no-store"})
        response.enable_compression()
        return response

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok\n" if self.model.synced else "syncing\n")

    async def _events(self, request: web.Request) -> web.StreamResponse:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=self.queue_limit)
        # Registered before anything is awaited: every update flushed after this point reaches
        # this page, and the snapshot it fetches on "hello" holds every earlier one.
        self._subscribers.add(queue)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                               "X-Accel-Buffering": "no"})
        try:
            await response.prepare(request)
            hello = orjson.dumps({"seq": self.model.seq, "layout": self.model.layout})
            await response.write(b"retry: %d\nevent: hello\ndata: %s\n\n" % (RETRY_MS, hello))
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), PING_SECONDS)
                except TimeoutError:
                    message = b": ping\n\n"
                if message is None:
                    break
                await response.write(message)
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            self._subscribers.discard(queue)
        return response

    async def _cell(self, request: web.Request) -> web.Response:
        ds_key = request.query.get("ds", "")
        node = request.query.get("node", "")
        details = self.model.details(ds_key, node)
        if details is None:
            return web.json_response({"error": f"no DaemonSet {ds_key!r} or node {node!r} in the grid"}, status=404)
        pod = self.model.pod_of(ds_key, node)
        events: list[dict[str, Any]] = []
        error = ""
        if pod is not None and self._read_events is not None:
            meta: Mapping[str, Any] = pod.get("metadata") or {}
            try:
                async with asyncio.timeout(10):
                    events = await self._read_events(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                                     str(meta.get("uid") or ""))
            except Exception as exc:  # shown on the page; the grid goes on
                error = f"events could not be read: {exc}"
                log.warning("view.events_failed", pod=meta.get("name"), error=str(exc))
        details["events"] = events[-10:]
        details["eventsError"] = error
        return web.Response(body=orjson.dumps(details), content_type="application/json",
                            headers={"Cache-Control": "no-store"})

    @property
    def subscribers(self) -> int:
        """Pages connected to the event stream."""
        return len(self._subscribers)


def _offer(queue: asyncio.Queue[bytes | None], message: bytes | None) -> bool:
    """Queue ``message``; a full queue gets the end marker instead (returns False)."""
    try:
        queue.put_nowait(message)
        return True
    except asyncio.QueueFull:
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
        queue.put_nowait(None)
        return False
