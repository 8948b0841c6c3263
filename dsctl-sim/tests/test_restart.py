"""The simulated apiserver restart: connections refused for a while, then the same state on the same port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
import pytest

from simapi import Api
from tests.support.poll import eventually

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def refuses(url: str) -> bool:
    """True when a TCP connect to the server's port is refused (the listener is closed)."""
    parts = urlsplit(url)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect((parts.hostname or "127.0.0.1", parts.port or 80))
        except ConnectionRefusedError:
            return True
    return False


async def answers(api: Api) -> bool:
    """True once a fresh connection gets an answer from /healthz."""
    try:
        async with aiohttp.ClientSession() as fresh, fresh.get(api.url + "/healthz") as resp:
            return resp.status == 200
    except aiohttp.ClientConnectionError:
        return False


async def test_restart_refuses_connections_then_serves_the_same_objects(api: Api) -> None:
    """During the outage connects are refused; afterwards the port, objects and resourceVersions are unchanged."""
    created = await api.ok("POST", PODS, pod("a"))
    before = await api.ok("GET", f"{PODS}/a")
    status, body = await api.call("POST", "/sim/restart?seconds=1.5")
    assert (status, body["downSeconds"]) == (202, 1.5)
    await eventually(lambda: asyncio.to_thread(refuses, api.url), timeout=5, message="connection refused")
    await eventually(lambda: answers(api), timeout=10, message="the server back")
    after = await api.ok("GET", f"{PODS}/a")
    assert after == before
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    outages = (await api.ok("GET", "/sim/restarts"))["items"]
    assert len(outages) == 1 and outages[0]["up"] - outages[0]["down"] >= 1.5
    assert (await api.ok("GET", "/sim/stats"))["restarts"] == 1


async def test_restart_cuts_watches_which_resume_from_their_resource_version(api: Api) -> None:
    """An open watch ends at the restart; a watch from its last resourceVersion then sees later writes only."""
    first = await api.ok("POST", PODS, pod("a"))
    rv = first["metadata"]["resourceVersion"]
    seen: list[dict[str, Any]] = []

    async def follow() -> None:
        async with aiohttp.ClientSession() as own, own.get(
                f"{api.url}{PODS}?watch=true&resourceVersion={rv}",
                timeout=aiohttp.ClientTimeout(total=30)) as resp:
            async for line in resp.content:
                seen.append(orjson.loads(line))

    watch = asyncio.create_task(follow(), name="test-watch")
    await api.ok("POST", PODS, pod("b"))
    await eventually(lambda: asyncio.sleep(0, result=len(seen) == 1), timeout=5, message="event for b")
    await api.ok("POST", "/sim/restart?seconds=0.5")
    with contextlib.suppress(aiohttp.ClientError):  # a cut stream may end cleanly or with an error
        await asyncio.wait_for(watch, timeout=10)
    await eventually(lambda: answers(api), timeout=10, message="the server back")
    last = seen[-1]["object"]["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("c"))
    async with api.http.get(f"{api.url}{PODS}?watch=true&resourceVersion={last}&timeoutSeconds=1") as resp:
        names = [orjson.loads(line)["object"]["metadata"]["name"] async for line in resp.content]
    assert names == ["c"]


@pytest.mark.parametrize(
    ("query", "code"),
    [
        pytest.param("seconds=abc", 400, id="not-a-number"),
        pytest.param("seconds=-1", 400, id="negative"),
        pytest.param("seconds=100000", 400, id="too-long"),
        pytest.param("", 400, id="missing"),
    ],
)
async def test_restart_rejects_bad_durations(api: Api, query: str, code: int) -> None:
    """A restart request without a sane duration is refused and the server stays up."""
    status, body = await api.call("POST", f"/sim/restart?{query}")
    assert status == code and "seconds" in body["message"]
    assert (await api.ok("GET", "/sim/stats"))["restarts"] == 0


async def test_second_restart_while_one_is_under_way_is_refused(api: Api) -> None:
    """Only one restart runs at a time: scheduling another before the first is over is refused."""
    server = api.sim.server
    assert server.schedule_restart(seconds=0.3)
    assert not server.schedule_restart(seconds=0.3)
    outages = api.sim.state.outages

    def over(count: int) -> bool:
        return len(outages) == count and bool(outages[-1]["up"])

    await eventually(lambda: asyncio.sleep(0.05, result=over(1)), timeout=10, message="the restart over")
    assert server.schedule_restart(seconds=0)
    await eventually(lambda: asyncio.sleep(0.05, result=over(2)), timeout=10, message="the second restart over")
    assert await answers(api)
