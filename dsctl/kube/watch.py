"""Decoding a watch stream: newline-delimited JSON events from a chunked HTTP response.

kubernetes_asyncio's ``Watch`` reads lines with aiohttp's line reader (which fails on lines over
its buffer limit), yields HTTP error bodies as strings and never surfaces a 410 cleanly. This
module reads the body in raw chunks and splits lines itself, so one event may be as large as
``max_event_bytes``.

:func:`iter_event_batches` is the primitive: it decodes every complete line of a chunk with a
caller's ``decode`` (by default :func:`decode_event`, one orjson decode into ``{"type",
"object"}``) and yields them as one list, so a busy stream costs one await per chunk, not per
event. An informer hands in a decoder that materialises only the fields it caches, and one
that decodes a chunk's whole lines in a single call (see ``dsctl.informer.watchdecode``).
:func:`iter_events` flattens the batches.

In-stream ``ERROR`` events raise the mapped :class:`~dsctl.kube.errors.ApiError` (``Gone`` for
the 410 "Expired" that a compacted history produces); a malformed line raises
:class:`~dsctl.kube.errors.ConnectionFailed` with reason ``BadWatchEvent``. Either way the events
decoded before it are yielded first, so nothing is lost. A stream that stays silent for
``inactivity_timeout`` seconds raises ``ConnectionFailed`` with reason ``WatchInactive``: a watch
silently dropped by a load balancer must not hang the informer. A clean end of stream (the
server's ``timeoutSeconds``) simply ends the iteration.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, TypeVar

import aiohttp
import orjson

from dsctl.kube.errors import ApiError, ConnectionFailed, from_status_object, one_line

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "EVENT_TYPES",
    "LineDecoder",
    "RunDecoder",
    "decode_event",
    "iter_event_batches",
    "iter_events",
]

DEFAULT_MAX_EVENT_BYTES = 64 * 1024 * 1024
EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})

T = TypeVar("T")
LineDecoder = Callable[[bytes | memoryview], T]
"""Decodes one non-blank NDJSON line; raises ApiError for ERROR events and ConnectionFailed
(reason ``BadWatchEvent``) for malformed lines, like :func:`decode_event`."""
RunDecoder = Callable[[memoryview], list[T]]
"""Decodes a run of whole NDJSON lines at once (each ends with a newline): the events of its
non-blank lines, in order, equal to what the :data:`LineDecoder` gives for each. It may raise
on any run it does not handle, for any reason; those lines are then decoded one by one, and
the line decoder decides (so it alone has to get errors right). A run decoder may be laxer
about line breaks than the line decoder (msgspec's ``decode_lines`` splits on any whitespace
between values); checking would cost what it saves, and kube-apiserver writes one event per line."""


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


def _is_blank(line: bytes | memoryview) -> bool:
    # Blank lines (keep-alive newlines) are rare; a line of JSON starts with "{".
    return not line or (line[0] != 0x7B and not bytes(line).strip())


def _decode_lines(
    data: bytes, start: int, decode: LineDecoder[T], out: list[T],
    decode_run: RunDecoder[T] | None = None,
) -> tuple[int, Exception | None]:
    """Decode the complete lines of ``data`` from ``start`` into ``out``; return the offset of
    the unfinished tail and the error that stopped decoding, if any. With ``decode_run``, all
    the complete lines are first tried as one run (one call for a chunk's ~60 events)."""
    view = memoryview(data)
    if decode_run is not None:
        end = data.rfind(b"\n", start)
        if end >= start:
            try:
                decoded = decode_run(view[start:end + 1])
            except Exception:  # anything unusual in the run: the line decoder decides
                pass
            else:
                out.extend(decoded)
                return end + 1, None
    find = data.find
    append = out.append
    try:
        while (end := find(b"\n", start)) >= 0:
            line = view[start:end]
            start = end + 1
            if line and (line[0] == 0x7B or not _is_blank(line)):
                append(decode(line))
    except Exception as exc:  # an ERROR event or a malformed line: deliver what came before
        return start, exc
    return start, None


async def iter_event_batches(
    response: aiohttp.ClientResponse,
    *,
    decode: LineDecoder[T],
    decode_run: RunDecoder[T] | None = None,
    inactivity_timeout: float | None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[list[T], None]:
    """Yield the decoded events of each chunk read from an open watch response (never an
    empty list), closing the response when done or abandoned.

    Lines are decoded from views of the received chunks, without copying; only a line split
    across chunks is joined. A chunk's whole lines go to ``decode_run`` first, if given."""
    pending: list[bytes] = []  # the unfinished line: pieces of earlier chunks
    pending_size = 0
    finished = False
    content = response.content
    try:
        while True:
            try:
                async with asyncio.timeout(inactivity_timeout):
                    chunk = await content.readany()
            except TimeoutError:
                raise ConnectionFailed(
                    f"watch stream silent for {inactivity_timeout}s", reason="WatchInactive"
                ) from None
            except aiohttp.ClientError as exc:
                raise ConnectionFailed(f"watch stream broken: {one_line(exc)}") from None
            if not chunk:
                finished = True
                break
            batch: list[T] = []
            error: Exception | None = None
            start = 0
            if pending:
                newline = chunk.find(b"\n")
                if newline < 0:
                    pending.append(chunk)
                    pending_size += len(chunk)
                    start = len(chunk)
                else:
                    pending.append(chunk[:newline + 1])
                    head = b"".join(pending)
                    pending.clear()
                    pending_size = 0
                    _, error = _decode_lines(head, 0, decode, batch)
                    start = newline + 1
            if error is None and start < len(chunk):
                start, error = _decode_lines(chunk, start, decode, batch, decode_run)
                if error is None and start < len(chunk):
                    pending.append(chunk[start:])
                    pending_size += len(chunk) - start
            if batch:
                yield batch
            if error is not None:
                raise error
            if pending_size > max_event_bytes:
                raise ApiError(
                    0, "EventTooLarge", f"watch event larger than {max_event_bytes} bytes"
                )
        if pending:
            tail = b"".join(pending)
            if not _is_blank(tail):
                yield [decode(tail)]
    finally:
        if finished:
            response.release()
        else:
            response.close()


async def iter_events(
    response: aiohttp.ClientResponse,
    *,
    inactivity_timeout: float | None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncIterator[dict[str, Any]]:
    """Yield decoded events (:func:`decode_event`) one by one from an open watch response."""
    batches = iter_event_batches(
        response, decode=decode_event, inactivity_timeout=inactivity_timeout,
        max_event_bytes=max_event_bytes,
    )
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()
