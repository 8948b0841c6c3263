"""Decoding a watch stream: newline-delimited JSON events from a chunked HTTP response.

kubernetes_asyncio's ``Watch`` reads lines with aiohttp's line reader (which fails on lines over
its buffer limit), yields HTTP error bodies as strings and never surfaces a 410 cleanly. This
module reads the body in raw chunks and splits lines itself, so one event may be as large as
``max_event_bytes``; every event is decoded once with orjson into ``{"type", "object"}``.

In-stream ``ERROR`` events raise the mapped :class:`~dsctl.kube.errors.ApiError` (``Gone`` for
the 410 "Expired" that a compacted history produces). A stream that stays silent for
``inactivity_timeout`` seconds raises :class:`~dsctl.kube.errors.ConnectionFailed` with reason
``WatchInactive``: a watch silently dropped by a load balancer must not hang the informer. A
clean end of stream (the server's ``timeoutSeconds``) simply ends the iteration.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson

from dsctl.kube.errors import ApiError, ConnectionFailed, from_status_object, one_line

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "EVENT_TYPES", "decode_event", "iter_events"]

DEFAULT_MAX_EVENT_BYTES = 64 * 1024 * 1024
EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})


def decode_event(line: bytes | bytearray | memoryview) -> dict[str, Any]:
    """One NDJSON line to an event dict; raise for ``ERROR`` events and malformed lines."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ConnectionFailed(f"malformed watch event: {exc}", reason="BadWatchEvent") from None
    if not isinstance(event, dict):
        raise ConnectionFailed("malformed watch event: not an object", reason="BadWatchEvent")
    kind = event.get("type")
    obj = event.get("object")
    if kind == "ERROR":
        raise from_status_object(200, obj if isinstance(obj, dict) else None)
    if kind not in EVENT_TYPES or not isinstance(obj, dict):
        # A bare Status line without type/object is how some servers report errors mid-stream.
        if isinstance(event.get("kind"), str) and event.get("kind") == "Status":
            raise from_status_object(200, event)
        raise ConnectionFailed(
            f"malformed watch event of type {kind!r}", reason="BadWatchEvent"
        )
    return event


async def iter_events(
    response: aiohttp.ClientResponse,
    *,
    inactivity_timeout: float | None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncIterator[dict[str, Any]]:
    """Yield decoded events from an open watch response, closing it when done or abandoned."""
    buffer = bytearray()
    finished = False
    try:
        while True:
            try:
                async with asyncio.timeout(inactivity_timeout):
                    chunk = await response.content.readany()
            except TimeoutError:
                raise ConnectionFailed(
                    f"watch stream silent for {inactivity_timeout}s", reason="WatchInactive"
                ) from None
            except aiohttp.ClientError as exc:
                raise ConnectionFailed(f"watch stream broken: {one_line(exc)}") from None
            if not chunk:
                finished = True
                break
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                line = bytes(buffer[start:end])
                start = end + 1
                if line.strip():
                    yield decode_event(line)
            if start:
                del buffer[:start]
            if len(buffer) > max_event_bytes:
                raise ApiError(
                    0, "EventTooLarge", f"watch event larger than {max_event_bytes} bytes"
                )
        if buffer.strip():
            yield decode_event(bytes(buffer))
    finally:
        if finished:
            response.release()
        else:
            response.close()
