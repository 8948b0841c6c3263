"""KubeClient over real HTTP against a scripted server: verbs, retries, errors and metrics."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from dsctl.kube import (
    DAEMONSETS,
    NODES,
    PODS,
    AlreadyExists,
    ConnectionFailed,
    KubeClient,
    NotFound,
    RetryPolicy,
    ServerError,
    TooManyRequests,
)
from dsctl.kube.encoded import Encoded
from tests.unit.kube.fakeserver import FakeServer, reply, status_body, write_kubeconfig


def _count(registry: CollectorRegistry, verb: str, resource: str, code: str) -> float:
    value = registry.get_sample_value(
        "rest_client_requests_total", {"verb": verb, "resource": resource, "code": code}
    )
    return value or 0.0


async def test_get_sends_auth_and_user_agent(server: FakeServer, client: KubeClient) -> None:
    """A get carries the bearer token, JSON Accept and the dsctl user agent; returns a dict."""
    server.queue("GET", "/api/v1/nodes/n1", reply(200, {"metadata": {"name": "n1"}}))
    node = await client.get(NODES, "n1")
    assert node == {"metadata": {"name": "n1"}}
    seen = server.requests("GET", "/api/v1/nodes/n1")[0]
    assert seen.headers["Authorization"] == "Bearer test-token"
    assert seen.headers["Accept"] == "application/json"
    assert seen.headers["User-Agent"].startswith("dsctl/")


async def test_list_query_parameters(server: FakeServer, client: KubeClient) -> None:
    """Selectors, limit, continue and resourceVersion are sent as query parameters."""
    server.queue("GET", "/api/v1/namespaces/d/pods", reply(200, {"items": [], "metadata": {}}))
    await client.list(PODS, namespace="d", label_selector="a=b", field_selector="spec.nodeName=n",
                      limit=500, continue_="tok", resource_version="0")
    query = server.requests("GET", "/api/v1/namespaces/d/pods")[0].query
    assert query == {"labelSelector": "a=b", "fieldSelector": "spec.nodeName=n", "limit": "500",
                     "continue": "tok", "resourceVersion": "0"}


async def test_list_page_hands_the_body_to_the_decoder(
    server: FakeServer, client: KubeClient, registry: CollectorRegistry
) -> None:
    """list_page sends a list's query, retries as a list does, and returns what the decoder
    makes of the raw body, decoded with the collector paused."""
    body = {"items": [{"metadata": {"name": "p"}}], "metadata": {"continue": "next"}}
    server.queue("GET", "/api/v1/namespaces/d/pods",
                 reply(503, status_body(503, "ServiceUnavailable", "later")), reply(200, body))
    seen: list[tuple[bytes, bool]] = []

    def decode(raw: bytes) -> str:
        seen.append((raw, gc.isenabled()))
        return "decoded"

    assert await client.list_page(PODS, decode=decode, namespace="d", label_selector="a=b", limit=2,
                                  continue_="tok") == "decoded"
    assert [(orjson.loads(raw), enabled) for raw, enabled in seen] == [(body, False)]
    query = server.requests("GET", "/api/v1/namespaces/d/pods")[-1].query
    assert query == {"labelSelector": "a=b", "limit": "2", "continue": "tok"}
    assert _count(registry, "list", "pods", "503") == 1


async def test_get_retries_5xx_then_succeeds(
    server: FakeServer, client: KubeClient, registry: CollectorRegistry
) -> None:
    """Idempotent verbs are retried on 500 and each attempt is counted by code."""
    server.queue(
        "GET", "/api/v1/nodes/n1",
        reply(500, status_body(500, "InternalError", "boom")),
        reply(503, status_body(503, "ServiceUnavailable", "later")),
        reply(200, {"metadata": {"name": "n1"}}),
    )
    assert (await client.get(NODES, "n1"))["metadata"]["name"] == "n1"
    assert len(server.requests("GET", "/api/v1/nodes/n1")) == 3
    assert _count(registry, "get", "nodes", "500") == 1
    assert _count(registry, "get", "nodes", "503") == 1
    assert _count(registry, "get", "nodes", "200") == 1


async def test_get_gives_up_after_max_attempts(
    server: FakeServer, client: KubeClient, retry_policy: RetryPolicy
) -> None:
    """After max_attempts 5xx answers the last error is raised."""
    server.always("GET", "/api/v1/nodes/n1", reply(500, status_body(500, "InternalError", "x")))
    with pytest.raises(ServerError):
        await client.get(NODES, "n1")
    assert len(server.requests("GET", "/api/v1/nodes/n1")) == retry_policy.max_attempts


async def test_create_is_not_retried_on_5xx(server: FakeServer, client: KubeClient) -> None:
    """A create that failed with 500 may have happened: it is not repeated."""
    path = "/api/v1/namespaces/d/pods"
    server.always("POST", path, reply(500, status_body(500, "InternalError", "x")))
    with pytest.raises(ServerError):
        await client.create(PODS, {"metadata": {"generateName": "x-", "namespace": "d"}})
    assert len(server.requests("POST", path)) == 1


async def test_429_is_retried_after_retry_after_even_for_create(
    server: FakeServer, client: KubeClient
) -> None:
    """429 is retried for every verb, after waiting the server's Retry-After."""
    path = "/api/v1/namespaces/d/pods"
    server.queue(
        "POST", path,
        reply(429, status_body(429, "TooManyRequests", "slow down"),
              headers={"Retry-After": "0.3"}),
        reply(201, {"metadata": {"name": "x-1"}}),
    )
    started = time.monotonic()
    created = await client.create(PODS, {"metadata": {"generateName": "x-"}}, namespace="d")
    assert time.monotonic() - started >= 0.3
    assert created["metadata"]["name"] == "x-1"
    assert orjson.loads(server.requests("POST", path)[1].body) == {
        "metadata": {"generateName": "x-"}
    }


async def test_429_exhausted_raises_too_many_requests(
    server: FakeServer, client: KubeClient
) -> None:
    """Persistent 429s end in TooManyRequests carrying retry_after."""
    server.always("GET", "/api/v1/nodes", reply(
        429, status_body(429, "TooManyRequests", "x"), headers={"Retry-After": "0"}))
    with pytest.raises(TooManyRequests) as info:
        await client.list(NODES)
    assert info.value.retry_after == 0.0


async def test_errors_map_to_hierarchy(server: FakeServer, client: KubeClient) -> None:
    """404 and 409 AlreadyExists come out as NotFound and AlreadyExists, not retried."""
    server.queue("GET", "/apis/apps/v1/namespaces/d/daemonsets/x",
                 reply(404, status_body(404, "NotFound", 'daemonsets "x" not found')))
    with pytest.raises(NotFound, match='daemonsets "x" not found'):
        await client.get(DAEMONSETS, "x", namespace="d")
    server.queue("POST", "/apis/apps/v1/namespaces/d/daemonsets",
                 reply(409, status_body(409, "AlreadyExists", "exists")))
    with pytest.raises(AlreadyExists):
        await client.create(DAEMONSETS, {"metadata": {"name": "x", "namespace": "d"}})


async def test_patch_content_types(server: FakeServer, client: KubeClient) -> None:
    """Each patch type is sent with its content type; JSON patch bodies are lists."""
    path = "/apis/apps/v1/namespaces/d/daemonsets/x"
    for _ in range(3):
        server.queue("PATCH", path, reply(200, {"metadata": {"name": "x"}}))
    await client.patch(DAEMONSETS, "x", {"spec": {}}, namespace="d")
    await client.patch(DAEMONSETS, "x", {"spec": {}}, namespace="d", patch_type="strategic")
    await client.patch(DAEMONSETS, "x", [{"op": "remove", "path": "/a"}], namespace="d",
                       patch_type="json")
    types = [s.headers["Content-Type"] for s in server.requests("PATCH", path)]
    assert types == ["application/merge-patch+json", "application/strategic-merge-patch+json",
                     "application/json-patch+json"]


async def test_delete_sends_options(server: FakeServer, client: KubeClient) -> None:
    """Preconditions, propagation policy and grace period travel as DeleteOptions."""
    path = "/api/v1/namespaces/d/pods/p"
    server.queue("DELETE", path, reply(200, {"kind": "Status", "status": "Success"}))
    await client.delete(PODS, "p", namespace="d", preconditions_uid="u1",
                        propagation_policy="Background", grace_period_seconds=0)
    body = orjson.loads(server.requests("DELETE", path)[0].body)
    assert body == {"kind": "DeleteOptions", "apiVersion": "v1",
                    "preconditions": {"uid": "u1"}, "propagationPolicy": "Background",
                    "gracePeriodSeconds": 0}


async def test_update_status_uses_subresource(server: FakeServer, client: KubeClient) -> None:
    """update_status PUTs to /status and labels the metric resource with it."""
    path = "/apis/apps/v1/namespaces/d/daemonsets/x/status"
    server.queue("PUT", path, reply(200, {"metadata": {"name": "x"}}))
    await client.update_status(DAEMONSETS, {"metadata": {"name": "x", "namespace": "d"}})
    assert len(server.requests("PUT", path)) == 1


async def test_unreachable_server_one_line_error(
    tmp_path: Path, registry: CollectorRegistry, retry_policy: RetryPolicy
) -> None:
    """A refused connection ends in ConnectionFailed naming the server, in one line."""
    path = write_kubeconfig(tmp_path / "k", "http://127.0.0.1:9")
    async with await KubeClient.from_config(
        kubeconfig=str(path), retry=retry_policy, registry=registry, environ={}
    ) as kube:
        with pytest.raises(ConnectionFailed) as info:
            await kube.get(NODES, "n1")
    message = str(info.value)
    assert "cannot connect to http://127.0.0.1:9" in message
    assert "\n" not in message
    assert _count(registry, "get", "nodes", "<error>") == retry_policy.max_attempts


async def test_an_encoded_body_is_sent_byte_for_byte(server: FakeServer, client: KubeClient) -> None:
    """An ``Encoded`` body goes out as its bytes, not re-encoded; the namespace is read from it."""
    path = "/api/v1/namespaces/d/pods"
    raw = b'{"metadata":{"generateName":"x-","namespace":"d"},  "spec":{}}'
    server.queue("POST", path, reply(201, {"metadata": {"name": "x-1", "namespace": "d"}}))
    created = await client.create(PODS, Encoded(raw))
    assert created["metadata"]["name"] == "x-1"
    seen = server.requests("POST", path)[0]
    assert seen.body == raw
    assert seen.headers["Content-Type"] == "application/json"
