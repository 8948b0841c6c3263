"""The view's HTTP surface: the page and its assets, the snapshot, the event stream, cell details."""

from __future__ import annotations

import asyncio
import gzip
import re
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

import orjson
import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from dsctl.view.cells import Cell, Revision, State
from dsctl.view.server import ViewServer
from tests.unit.daemonset.objects import make_ds, make_node, make_pod
from tests.unit.view.test_model import Cluster, current_hash


class Events:
    """A scripted event reader: records its calls, answers or fails."""

    def __init__(self, answer: list[dict[str, Any]] | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, str]] = []

    async def __call__(self, namespace: str, name: str, uid: str) -> list[dict[str, Any]]:
        self.calls.append((namespace, name, uid))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    for i in range(3):
        c.put_node(make_node(f"node-{i}"))
    c.put_ds(make_ds())
    c.model.mark_synced()
    c.model.flush()
    return c


@pytest.fixture
def events() -> Events:
    return Events([{"time": "t", "type": "Normal", "reason": "Scheduled", "message": "m", "count": 1}])


@pytest.fixture
async def client(cluster: Cluster, events: Events) -> AsyncIterator[tuple[TestClient[Any, Any], ViewServer]]:
    view = ViewServer(cluster.model, read_events=events, queue_limit=3)
    test_client: TestClient[Any, Any] = TestClient(TestServer(view.app(), host="127.0.0.1"))
    await test_client.start_server()
    try:
        yield test_client, view
    finally:
        await view.stop()
        await test_client.close()


async def read_event(response: ClientResponse) -> tuple[str, Any]:
    """The next server-sent event (name, decoded data), skipping comments and retry lines."""
    name, data = "message", b""
    async with asyncio.timeout(5):
        while True:
            line = (await response.content.readline()).rstrip(b"\n")
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: "):
                data = line[6:]
            elif not line and data:
                return name, orjson.loads(data)
            elif not line and response.content.at_eof():
                raise EOFError("stream ended")


async def test_page_is_served_with_a_strict_policy(client: tuple[TestClient[Any, Any], ViewServer]) -> None:
    """The page and its assets come from this server, under a policy that allows no other origin."""
    http, _ = client
    page = await http.get("/")
    assert page.status == 200
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    assert "connect-src 'self'" in page.headers["Content-Security-Policy"]
    html = await page.text()
    assert '<script src="/static/view.js"' in html and '<canvas id="grid"' in html
    for name in ("view.js", "view.css"):
        asset = await http.get(f"/static/{name}")
        assert asset.status == 200
    assert (await http.get("/static/index.html")).status == 404
    assert (await http.get("/static/../cli.py")).status == 404


@pytest.mark.parametrize("name", ["index.html", "view.js", "view.css"])
def test_assets_reference_no_other_origin(name: str) -> None:
    """No asset names an absolute or protocol-relative URL: nothing is fetched from elsewhere."""
    text = resources.files("dsctl.view").joinpath("static", name).read_text()
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.IGNORECASE), name


async def test_snapshot_is_compressed(client: tuple[TestClient[Any, Any], ViewServer], cluster: Cluster) -> None:
    """The snapshot goes gzip-compressed to a client that accepts it, and decodes to the model's."""
    http, _ = client
    response = await http.get("/api/snapshot", headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
    assert response.headers["Content-Encoding"] == "gzip"
    body = orjson.loads(gzip.decompress(await response.read()))
    assert body == orjson.loads(orjson.dumps(cluster.model.snapshot()))
    assert body["synced"] is True and body["nodes"] == ["node-0", "node-1", "node-2"]


async def test_stream_says_hello_then_deltas(client: tuple[TestClient[Any, Any], ViewServer], cluster: Cluster) -> None:
    """A page gets ``hello`` with the current seq, then each flush's changed cells."""
    http, view = client
    async with http.get("/api/events") as stream:
        assert stream.headers["Content-Type"] == "text/event-stream"
        name, hello = await read_event(stream)
        assert name == "hello" and hello == {"seq": cluster.model.seq, "layout": cluster.model.layout}
        cluster.put_pod(make_pod("node-1", hash=current_hash(make_ds()), ready=True))
        assert view.flush_once() > 0
        name, delta = await read_event(stream)
        assert name == "delta"
        assert delta == {"seq": hello["seq"] + 1, "layout": hello["layout"],
                         "cells": [0, 1, Cell(State.READY, Revision.NEW).code], "headers": []}
        cluster.put_node(make_node("node-3"))
        view.flush_once()
        name, layout = await read_event(stream)
        assert name == "layout" and layout == {"seq": hello["seq"] + 2, "layout": hello["layout"] + 1}
    assert view.stats["updates"] == 2


async def test_slow_page_is_dropped(client: tuple[TestClient[Any, Any], ViewServer], cluster: Cluster) -> None:
    """A page that falls more than its queue behind is disconnected, without holding the others up."""
    http, view = client
    async with http.get("/api/events") as stream:
        await read_event(stream)
        pod = make_pod("node-0", hash=current_hash(make_ds()), phase="Pending")
        for i in range(6):  # the stream is not read meanwhile: its queue holds 3
            pod = {**pod, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(i % 2 == 0)}]}}
            cluster.put_pod(pod)
            view.flush_once()
        assert view.stats["dropped_pages"] == 1
        seen = []
        with pytest.raises(EOFError):
            while True:
                seen.append((await read_event(stream))[0])
        assert seen and set(seen) == {"delta"}
    assert view.subscribers == 0


async def test_other_hosts_are_refused(client: tuple[TestClient[Any, Any], ViewServer]) -> None:
    """A request naming a non-loopback host (DNS rebinding) is refused."""
    http, _ = client
    assert (await http.get("/api/snapshot", headers={"Host": "attacker.example:8089"})).status == 421
    assert (await http.get("/api/snapshot", headers={"Host": "localhost:8089"})).status == 200
    assert (await http.get("/api/snapshot", headers={"Host": "[::1]:8089"})).status == 200


async def test_nothing_but_get(client: tuple[TestClient[Any, Any], ViewServer]) -> None:
    """The server has no route that accepts a write."""
    http, _ = client
    for path in ("/", "/api/snapshot", "/api/cell", "/api/events"):
        assert (await http.post(path, data=b"{}")).status == 405


async def test_cell_details_with_events(client: tuple[TestClient[Any, Any], ViewServer], cluster: Cluster,
                                        events: Events) -> None:
    """Clicking a cell reads the pod's events on demand, for that pod only."""
    http, _ = client
    pod = make_pod("node-2", hash=current_hash(make_ds()), ready=True)
    cluster.put_pod(pod)
    response = await http.get("/api/cell", params={"ds": "default/foo", "node": "node-2"})
    assert response.status == 200
    body = await response.json()
    assert body["pods"][0]["name"] == pod["metadata"]["name"]
    assert body["events"] == events.answer and body["eventsError"] == ""
    assert events.calls == [("default", pod["metadata"]["name"], pod["metadata"]["uid"])]
    assert (await http.get("/api/cell", params={"ds": "default/foo", "node": "node-9"})).status == 404


@pytest.mark.parametrize("events", [Events(RuntimeError("boom"))])
async def test_cell_details_survive_an_event_error(client: tuple[TestClient[Any, Any], ViewServer],
                                                   cluster: Cluster, events: Events) -> None:
    """An event read that fails is reported in the details; the rest is still shown."""
    http, _ = client
    cluster.put_pod(make_pod("node-0", hash=current_hash(make_ds()), ready=True))
    body = await (await http.get("/api/cell", params={"ds": "default/foo", "node": "node-0"})).json()
    assert body["eventsError"] == "events could not be read: boom"
    assert body["cell"]["state"] == "READY"
