"""The per-request constants of the transport: cached headers, timeouts and metric children
must behave exactly like building them afresh for every request."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.kube import KubeClient
from dsctl.kube.metrics import ClientMetrics
from dsctl.kube.resources import NODES, PODS
from dsctl.kube.transport import decode_json, gc_paused
from tests.unit.kube.fakeserver import FakeServer, reply


def _sample(registry: CollectorRegistry, name: str, labels: dict[str, str]) -> float:
    return registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [
        pytest.param([("get", "nodes", "200")], {("get", "nodes", "200"): 1}, id="one"),
        pytest.param([("get", "nodes", "200")] * 3, {("get", "nodes", "200"): 3}, id="same-labels-thrice"),
        pytest.param(
            [("get", "nodes", "200"), ("get", "nodes", "500"), ("create", "pods", "201"), ("get", "nodes", "200")],
            {("get", "nodes", "200"): 2, ("get", "nodes", "500"): 1, ("create", "pods", "201"): 1},
            id="mixed",
        ),
    ],
)
def test_cached_metric_children_count_per_label_set(
    attempts: list[tuple[str, str, str]], expected: dict[tuple[str, str, str], int]
) -> None:
    """Each attempt lands on its own (verb, resource, code) counter and latency series."""
    registry = CollectorRegistry()
    metrics = ClientMetrics(registry)
    for verb, resource, code in attempts:
        metrics.observe(verb=verb, resource=resource, code=code, seconds=0.002)
        metrics.rate_limited(verb=verb, seconds=0.0)
    for (verb, resource, code), count in expected.items():
        labels = {"verb": verb, "resource": resource, "code": code}
        assert _sample(registry, "rest_client_requests_total", labels) == count
    by_series: dict[tuple[str, str], int] = {}
    by_verb: dict[str, int] = {}
    for verb, resource, _ in attempts:
        by_series[(verb, resource)] = by_series.get((verb, resource), 0) + 1
        by_verb[verb] = by_verb.get(verb, 0) + 1
    for (verb, resource), count in by_series.items():
        labels = {"verb": verb, "resource": resource}
        assert _sample(registry, "rest_client_request_duration_seconds_count", labels) == count
    for verb, count in by_verb.items():
        assert _sample(registry, "rest_client_rate_limiter_duration_seconds_count", {"verb": verb}) == count


async def test_requests_count_every_attempt_and_wait(
    server: FakeServer, client: KubeClient, registry: CollectorRegistry
) -> None:
    """Over HTTP: every request is counted by code and passes the limiter's histogram once."""
    server.always("GET", "/api/v1/nodes/n1", reply(200, {"metadata": {"name": "n1"}}))
    server.always("POST", "/api/v1/namespaces/d/pods", reply(201, {"metadata": {"name": "p"}}))
    for _ in range(3):
        await client.get(NODES, "n1")
    await client.create(PODS, {"metadata": {"generateName": "p-"}}, namespace="d")
    assert _sample(registry, "rest_client_requests_total", {"verb": "get", "resource": "nodes", "code": "200"}) == 3
    assert _sample(registry, "rest_client_requests_total", {"verb": "create", "resource": "pods", "code": "201"}) == 1
    assert _sample(registry, "rest_client_rate_limiter_duration_seconds_count", {"verb": "get"}) == 3
    assert _sample(registry, "rest_client_rate_limiter_duration_seconds_count", {"verb": "create"}) == 1


async def test_headers_follow_the_content_type_of_each_request(server: FakeServer, client: KubeClient) -> None:
    """A GET after a POST carries no Content-Type, though both reuse cached headers."""
    server.always("GET", "/api/v1/nodes/n1", reply(200, {}))
    server.always("POST", "/api/v1/namespaces/d/pods", reply(201, {}))
    await client.get(NODES, "n1")
    await client.create(PODS, {"metadata": {"generateName": "p-"}}, namespace="d")
    await client.get(NODES, "n1")
    gets = server.requests("GET", "/api/v1/nodes/n1")
    [post] = server.requests("POST", "/api/v1/namespaces/d/pods")
    assert [g.headers.get("Content-Type") for g in gets] == [None, None]
    assert post.headers["Content-Type"] == "application/json"
    assert {g.headers["Authorization"] for g in [*gets, post]} == {"Bearer test-token"}


@pytest.mark.parametrize(
    ("tokens", "sent"),
    [
        pytest.param(["a", "a"], ["Bearer a", "Bearer a"], id="same-token"),
        pytest.param(["a", "b", "a"], ["Bearer a", "Bearer b", "Bearer a"], id="rotated-and-back"),
    ],
)
def test_token_headers_carry_the_current_token(client: KubeClient, tokens: list[str], sent: list[str]) -> None:
    """Cached headers always carry the token asked for, and only the latest token is kept."""
    transport: Any = client._transport
    got = [transport._token_headers("application/json", t)["Authorization"] for t in tokens]
    assert got == sent
    assert {token for _, token, _ in transport._header_cache} == {tokens[-1]}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b'{"a": [1, 2]}', {"a": [1, 2]}, id="object"),
        pytest.param(b"[]", [], id="list"),
    ],
)
def test_decode_json_pauses_the_collector_and_restores_it(body: bytes, expected: Any) -> None:
    """Decoding leaves the collector as it found it, enabled or disabled."""
    import gc

    assert gc.isenabled()
    assert decode_json(body) == expected
    assert gc.isenabled()
    with gc_paused():
        assert decode_json(body) == expected
        assert not gc.isenabled()
    assert gc.isenabled()
