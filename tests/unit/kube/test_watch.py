"""The raw watch: NDJSON decoding, large events, in-stream errors, silence, query parameters."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from dsctl.kube import NODES, ConnectionFailed, Gone, KubeClient, RetryPolicy, ServerError
from dsctl.kube.errors import Invalid
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
