"""The write fence at the client's transport: a closed fence stops writes before they leave, reads pass."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from dsctl.kube import KubeClient
from dsctl.kube.errors import Fenced
from dsctl.kube.fence import WriteFence
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.unit.kube.fakeserver import FakeServer, reply, status_body

POD_PATH = "/api/v1/namespaces/d/pods"
POD = {"metadata": {"name": "p", "namespace": "d"}}

WRITES: list[Any] = [
    pytest.param(lambda c: c.create(PODS, POD), "POST", POD_PATH, id="create"),
    pytest.param(lambda c: c.update(PODS, POD), "PUT", f"{POD_PATH}/p", id="update"),
    pytest.param(lambda c: c.update_status(DAEMONSETS, POD), "PUT",
                 "/apis/apps/v1/namespaces/d/daemonsets/p/status", id="update-status"),
    pytest.param(lambda c: c.patch(PODS, "p", {}, namespace="d"), "PATCH", f"{POD_PATH}/p", id="patch"),
    pytest.param(lambda c: c.delete(PODS, "p", namespace="d"), "DELETE", f"{POD_PATH}/p", id="delete"),
]


@pytest.mark.parametrize(("write", "method", "path"), WRITES)
async def test_a_closed_fence_refuses_every_write_before_sending(
    server: FakeServer, client: KubeClient, write: Callable[[KubeClient], Awaitable[Any]],
    method: str, path: str,
) -> None:
    """With the fence closed, a write raises Fenced, nothing reaches the server, and it is counted."""
    registry = CollectorRegistry()
    fence = WriteFence(registry=registry)
    client.write_fence = fence.check
    with pytest.raises(Fenced):
        await write(client)
    assert server.requests(method, path) == []
    assert sum(s.value for m in registry.collect() for s in m.samples if s.name.endswith("_total")) == 1.0
    fence.open_until(math.inf)
    server.always(method, path, reply(200, {"metadata": {"name": "p"}}))
    await write(client)
    assert len(server.requests(method, path)) == 1


async def test_reads_are_never_fenced(server: FakeServer, client: KubeClient) -> None:
    """A standby reads (caches stay warm) while its fence refuses writes."""
    client.write_fence = WriteFence().check
    server.always("GET", f"{POD_PATH}/p", reply(200, POD))
    assert (await client.get(PODS, "p", namespace="d"))["metadata"]["name"] == "p"


async def test_a_write_waiting_out_retry_after_is_judged_again_before_its_retry(
    server: FakeServer, client: KubeClient
) -> None:
    """A write answered 429 is refused on its retry when the fence closed while it waited."""
    fence = WriteFence()
    fence.open_until(math.inf)
    client.write_fence = fence.check

    async def throttle_then_close(_request: web.Request) -> web.StreamResponse:
        fence.close("leadership lost")
        return await reply(429, status_body(429, "TooManyRequests", "slow down"),
                           headers={"Retry-After": "0.05"})(_request)

    server.queue("POST", POD_PATH, throttle_then_close)
    server.always("POST", POD_PATH, reply(201, POD))
    with pytest.raises(Fenced):
        await client.create(PODS, POD)
    assert len(server.requests("POST", POD_PATH)) == 1
