"""A scriptable in-process HTTP server for testing the real client over real HTTP.

Each test queues responses per ``(method, path)``; every request is logged with its query and
headers. This is the seam for transport and watch behaviour that the simulator cannot produce on
demand (a 5 MB event line, a stream that goes silent, a plain-text 500).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

Responder = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeServer:
    """Queued responses by (method, path); unmatched requests get 404 Status."""

    routes: dict[tuple[str, str], deque[Responder]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    sticky: dict[tuple[str, str], Responder] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    def queue(self, method: str, path: str, *responders: Responder) -> None:
        """Answer the next requests to ``method path`` with these, in order."""
        self.routes[(method, path)].extend(responders)

    def always(self, method: str, path: str, responder: Responder) -> None:
        """Answer every request to ``method path`` (after the queued ones) with this."""
        self.sticky[(method, path)] = responder

    def requests(self, method: str, path: str) -> list[Seen]:
        """Requests received for ``method path``."""
        return [s for s in self.seen if s.method == method and s.path == path]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(
            Seen(request.method, request.path, dict(request.query), dict(request.headers), body)
        )
        key = (request.method, request.path)
        if self.routes[key]:
            return await self.routes[key].popleft()(request)
        if key in self.sticky:
            return await self.sticky[key](request)
        return json_response(404, status_body(404, "NotFound", f"{request.path} not found"))

    async def start(self) -> None:
        """Listen on an ephemeral port on 127.0.0.1."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        """Stop listening and close open connections."""
        if self._runner is not None:
            await self._runner.cleanup()


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """A metav1.Status dict."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def json_response(
    status: int, body: Any, *, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON response."""
    return web.Response(
        status=status,
        body=orjson.dumps(body),
        content_type="application/json",
        headers=headers,
    )


def reply(
    status: int, body: Any, *, headers: dict[str, str] | None = None
) -> Responder:
    """A responder that sends a fixed JSON answer."""

    async def respond(_request: web.Request) -> web.StreamResponse:
        return json_response(status, body, headers=headers)

    return respond


def stream(
    *lines: bytes, hold: asyncio.Event | None = None, chunk: int | None = None
) -> Responder:
    """A chunked streaming responder writing ``lines`` (optionally split into small chunks),
    then waiting for ``hold`` (if given) before ending the stream."""

    async def respond(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        for line in lines:
            if chunk:
                for i in range(0, len(line), chunk):
                    await response.write(line[i : i + chunk])
            else:
                await response.write(line)
        if hold is not None:
            await hold.wait()
        await response.write_eof()
        return response

    return respond


def event_line(kind: str, obj: dict[str, Any]) -> bytes:
    """One NDJSON watch event line."""
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def write_kubeconfig(
    path: Path,
    server: str,
    *,
    token: str | None = "test-token",
    context: str = "test",
    extra_contexts: tuple[str, ...] = (),
) -> Path:
    """Write a kubeconfig with one cluster/user and the given context names."""
    names = (context, *extra_contexts)
    user: dict[str, Any] = {"token": token} if token else {}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in names],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(config))
    return path
