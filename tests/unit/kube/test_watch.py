"""The raw watch: NDJSON decoding, large events, in-stream errors, silence, query parameters."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from dsctl.kube import NODES, ConnectionFailed, Gone, KubeClient, RetryPolicy, ServerError
from dsctl.kube.errors import ApiError, Invalid
from dsctl.kube.watch import decode_event
from tests.unit.kube.fakeserver import (
    FakeServer,
    event_line,
    reply,
    status_body,
    stream,
)


@pytest.fixture
def retry_policy() -> RetryPolicy:
    """Two fast attempts, so a watch that keeps failing to open gives up quickly."""
    return RetryPolicy(max_attempts=2, backoff_base=0.01, backoff_cap=0.02)


def _node(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}}


async def _collect(gen: Any) -> list[dict[str, Any]]:
    async with contextlib.aclosing(gen) as events:
        return [e async for e in events]


async def test_events_split_across_chunks(server: FakeServer, client: KubeClient) -> None:
    """Events arrive whole even when the server splits lines into tiny chunks."""
    lines = b"".join([
        event_line("ADDED", _node("a", "1")),
        event_line("MODIFIED", _node("a", "2")),
        event_line("BOOKMARK", {"metadata": {"resourceVersion": "3"}}),
        event_line("DELETED", _node("a", "4")),
    ])
    server.queue("GET", "/api/v1/nodes", stream(lines, chunk=7))
    events = await _collect(client.watch(NODES, resource_version="1", timeout_seconds=30))
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]
    assert events[3]["object"]["metadata"]["resourceVersion"] == "4"
    query = server.requests("GET", "/api/v1/nodes")[0].query
    assert query == {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": "1",
                     "timeoutSeconds": "30"}


async def test_event_larger_than_aiohttp_line_limit(
    server: FakeServer, client: KubeClient
) -> None:
    """A 6 MB event line (beyond aiohttp's 4 MiB readline limit) is decoded."""
    big = _node("big", "9")
    big["metadata"]["annotations"] = {"blob": "x" * (6 * 1024 * 1024)}
    server.queue("GET", "/api/v1/nodes", stream(event_line("ADDED", big)))
    events = await _collect(client.watch(NODES, resource_version="1"))
    assert len(events[0]["object"]["metadata"]["annotations"]["blob"]) == 6 * 1024 * 1024


async def test_in_stream_410_raises_gone(server: FakeServer, client: KubeClient) -> None:
    """An ERROR event with code 410 raises Gone after the events before it."""
    lines = event_line("ADDED", _node("a", "5")) + event_line(
        "ERROR", status_body(410, "Expired", "too old resource version: 1 (5)"))
    server.queue("GET", "/api/v1/nodes", stream(lines))
    seen: list[str] = []
    with pytest.raises(Gone, match="too old"):
        async with contextlib.aclosing(client.watch(NODES, resource_version="1")) as events:
            async for event in events:
                seen.append(event["type"])
    assert seen == ["ADDED"]


async def test_http_410_raises_gone(server: FakeServer, client: KubeClient) -> None:
    """An HTTP 410 answer to the watch request raises Gone (not retried)."""
    server.always("GET", "/api/v1/nodes", reply(410, status_body(410, "Expired", "too old")))
    with pytest.raises(Gone):
        await _collect(client.watch(NODES, resource_version="1"))
    assert len(server.requests("GET", "/api/v1/nodes")) == 1


async def test_http_500_text_body_raises_server_error(
    server: FakeServer, client: KubeClient
) -> None:
    """A plain-text 500 is an error, never a yielded string."""
    async def plain(_request: Any) -> Any:
        from aiohttp import web

        return web.Response(status=500, text="internal error\n")

    server.always("GET", "/api/v1/nodes", plain)
    with pytest.raises(ServerError, match="internal error"):
        await _collect(client.watch(NODES, resource_version="1"))


async def test_silent_stream_hits_inactivity_timeout(
    server: FakeServer, client: KubeClient
) -> None:
    """A stream that sends nothing for the inactivity timeout raises WatchInactive."""
    hold = asyncio.Event()
    server.queue("GET", "/api/v1/nodes", stream(event_line("ADDED", _node("a", "2")), hold=hold))
    seen: list[str] = []
    try:
        with pytest.raises(ConnectionFailed) as info:
            async with contextlib.aclosing(
                client.watch(NODES, resource_version="1", inactivity_timeout=0.3)
            ) as events:
                async for event in events:
                    seen.append(event["type"])
    finally:
        hold.set()
    assert seen == ["ADDED"]
    assert info.value.reason == "WatchInactive"


async def test_send_initial_events_parameters(server: FakeServer, client: KubeClient) -> None:
    """Streaming list asks for sendInitialEvents with NotOlderThan and bookmarks."""
    server.queue("GET", "/api/v1/nodes", stream(event_line(
        "BOOKMARK",
        {"metadata": {"resourceVersion": "7",
                      "annotations": {"k8s.io/initial-events-end": "true"}}})))
    await _collect(client.watch(NODES, send_initial_events=True, allow_bookmarks=False,
                                timeout_seconds=5))
    query = server.requests("GET", "/api/v1/nodes")[0].query
    assert query["sendInitialEvents"] == "true"
    assert query["resourceVersionMatch"] == "NotOlderThan"
    assert query["allowWatchBookmarks"] == "true"
    assert query["resourceVersion"] == ""


async def test_rejected_streaming_list_raises_mapped_error(
    server: FakeServer, client: KubeClient
) -> None:
    """A server refusing sendInitialEvents with 422 surfaces as Invalid."""
    server.queue("GET", "/api/v1/nodes",
                 reply(422, status_body(422, "Invalid", "sendInitialEvents unsupported")))
    with pytest.raises(Invalid):
        await _collect(client.watch(NODES, send_initial_events=True))


def _names(batches: list[list[dict[str, Any]]]) -> list[list[str]]:
    return [[e["object"]["metadata"]["name"] for e in batch] for batch in batches]


async def _collect_batches(gen: Any) -> list[list[dict[str, Any]]]:
    async with contextlib.aclosing(gen) as batches:
        return [batch async for batch in batches]


class _RunDecoder:
    """Decodes a run of whole lines with decode_event, refusing any run that holds a line it
    does not own (anything but MODIFIED), as the informer's lean decoder refuses; records
    every run it is handed."""

    def __init__(self) -> None:
        self.runs: list[bytes] = []

    def __call__(self, lines: memoryview) -> list[dict[str, Any]]:
        data = bytes(lines)
        self.runs.append(data)
        events = [decode_event(line) for line in data.split(b"\n") if line.strip()]
        if any(event["type"] != "MODIFIED" for event in events):
            raise ValueError("not a run of MODIFIED events")
        return events


async def test_batches_hold_a_chunk_of_events(server: FakeServer, client: KubeClient) -> None:
    """watch_batches yields the events of one received chunk together, decoded by the caller's decoder."""
    lines = b"".join(event_line("MODIFIED", _node(n, str(i))) for i, n in enumerate("abc", 2))
    server.queue("GET", "/api/v1/nodes", stream(lines))
    decoded: list[bytes] = []

    def decode(line: bytes | memoryview) -> dict[str, Any]:
        decoded.append(bytes(line))
        return decode_event(line)

    batches = await _collect_batches(client.watch_batches(NODES, decode=decode, resource_version="1"))
    assert _names(batches) == [["a", "b", "c"]]
    assert decoded == lines.splitlines()


@pytest.mark.parametrize("chunk", [pytest.param(None, id="whole"), pytest.param(5, id="5-byte-chunks"),
                                   pytest.param(300, id="300-byte-chunks")])
async def test_batches_rejoin_lines_split_across_chunks(
    server: FakeServer, client: KubeClient, chunk: int | None
) -> None:
    """However the stream is chunked, every event arrives once, whole and in order; blank lines
    are skipped and a last line without a newline is decoded."""
    lines = [event_line("MODIFIED", _node(f"n{i}", str(i))) for i in range(20)]
    body = b"\n".join(lines[:10]) + b"\r\n  \n" + b"".join(lines[10:]).rstrip(b"\n")
    server.queue("GET", "/api/v1/nodes", stream(body, chunk=chunk))
    batches = await _collect_batches(
        client.watch_batches(NODES, decode=decode_event, resource_version="1"))
    assert [name for batch in _names(batches) for name in batch] == [f"n{i}" for i in range(20)]
    assert all(batches)


@pytest.mark.parametrize(("bad", "error"), [
    pytest.param(event_line("ERROR", status_body(410, "Expired", "too old")), Gone, id="in-stream-410"),
    pytest.param(b"{not json\n", ConnectionFailed, id="malformed"),
])
@pytest.mark.parametrize("with_runs", [pytest.param(False, id="line-decoder"),
                                       pytest.param(True, id="refused-run")])
async def test_events_before_an_error_in_the_same_chunk_are_yielded_first(
    server: FakeServer, client: KubeClient, bad: bytes, error: type[Exception], with_runs: bool
) -> None:
    """An error line inside a chunk: the events before it come out, then the error; none after.
    A run decoder refuses that chunk, and its lines are decoded one by one with the same result."""
    lines = event_line("MODIFIED", _node("a", "2")) + event_line("MODIFIED", _node("b", "3")) + bad
    lines += event_line("MODIFIED", _node("c", "4"))
    server.queue("GET", "/api/v1/nodes", stream(lines))
    runs = _RunDecoder() if with_runs else None
    seen: list[list[dict[str, Any]]] = []
    with pytest.raises(error):
        async with contextlib.aclosing(
            client.watch_batches(NODES, decode=decode_event, decode_run=runs, resource_version="1")
        ) as batches:
            async for batch in batches:
                seen.append(batch)
    assert _names(seen) == [["a", "b"]]
    assert runs is None or len(runs.runs) == 1


async def test_batches_refuse_an_endless_line(server: FakeServer, client: KubeClient) -> None:
    """A line that never ends is refused once it outgrows max_event_bytes."""
    server.queue("GET", "/api/v1/nodes", stream(b"{" + b" " * 4096, chunk=512))
    with pytest.raises(ApiError, match="larger than 1000 bytes"):
        await _collect_batches(client.watch_batches(
            NODES, decode=decode_event, resource_version="1", max_event_bytes=1000))


@pytest.mark.parametrize("chunk", [pytest.param(None, id="whole"), pytest.param(5, id="5-byte-chunks"),
                                   pytest.param(300, id="300-byte-chunks")])
async def test_runs_of_whole_lines_decode_in_one_call(
    server: FakeServer, client: KubeClient, chunk: int | None
) -> None:
    """With a run decoder, a chunk's whole lines go to it in one call: only whole lines, each
    ending in a newline, and every event still arrives once and in order."""
    lines = [event_line("MODIFIED", _node(f"n{i}", str(i))) for i in range(20)]
    body = b"\n".join(lines[:10]) + b"\r\n  \n" + b"".join(lines[10:]).rstrip(b"\n")
    server.queue("GET", "/api/v1/nodes", stream(body, chunk=chunk))
    runs = _RunDecoder()
    batches = await _collect_batches(client.watch_batches(
        NODES, decode=decode_event, decode_run=runs, resource_version="1"))
    assert [name for batch in _names(batches) for name in batch] == [f"n{i}" for i in range(20)]
    assert runs.runs and all(run.endswith(b"\n") for run in runs.runs)
    assert all(decode_event(line) for run in runs.runs for line in run.split(b"\n") if line.strip())
    if chunk is None:
        assert len(runs.runs) == 1  # one chunk: one call, the unterminated last line aside
