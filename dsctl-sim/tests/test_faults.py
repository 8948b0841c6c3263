"""Each fault knob and admin endpoint of the simulator takes effect, observed over HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from simapi import Api
from tests.support.poll import eventually
from watchclient import read_watch

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        pytest.param(500, "InternalError", id="500"),
        pytest.param(429, "TooManyRequests", id="429"),
        pytest.param(409, "Conflict", id="409"),
        pytest.param(503, "ServiceUnavailable", id="503"),
    ],
)
async def test_error_rate_injects_code(api: Api, code: int, reason: str) -> None:
    """A rate-1 rule fails every matching request with its code; other verbs are untouched."""
    await api.ok("PUT", "/sim/faults", {"errors": [{"verb": "create", "resource": "pods", "code": code, "rate": 1}]})
    status, body = await api.call("POST", PODS, pod("a"))
    assert (status, body["reason"], body["code"]) == (code, reason, code)
    await api.ok("GET", PODS)
    await api.ok("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", {"metadata": {"name": "l"}})


async def test_429_carries_retry_after(api: Api) -> None:
    """An injected 429 sets the Retry-After header to retry_after_seconds."""
    await api.ok("PUT", "/sim/faults", {"errors": [{"verb": "*", "resource": "pods", "code": 429, "rate": 1}],
                                        "retry_after_seconds": 3})
    async with api.http.get(api.url + PODS) as resp:
        assert resp.status == 429 and resp.headers["Retry-After"] == "3"


async def test_error_rate_is_a_fraction(api: Api) -> None:
    """A rate between 0 and 1 fails some requests and passes others."""
    await api.ok("PUT", "/sim/faults", {"errors": [{"verb": "list", "resource": "*", "code": 500, "rate": 0.5}]})
    codes = [(await api.call("GET", PODS))[0] for _ in range(60)]
    assert 5 < codes.count(500) < 55 and codes.count(200) == 60 - codes.count(500)


async def test_subresource_rule_targets_only_status(api: Api) -> None:
    """A rule on pods/status fails status updates but not updates of the pod itself."""
    created = await api.ok("POST", PODS, pod("a"))
    await api.ok("PUT", "/sim/faults", {"errors": [{"verb": "update", "resource": "pods/status", "code": 500,
                                                    "rate": 1}]})
    status, _ = await api.call("PUT", f"{PODS}/a/status", created)
    assert status == 500
    relabeled = {**created, "metadata": {**created["metadata"], "labels": {"x": "y"}}}
    await api.ok("PUT", f"{PODS}/a", relabeled)


async def test_latency_is_added(api: Api) -> None:
    """latency_ms delays every resource request; verb_latency_ms only its verb."""
    await api.ok("PUT", "/sim/faults", {"latency_ms": 150})
    start = time.monotonic()
    await api.ok("GET", PODS)
    assert time.monotonic() - start >= 0.15
    await api.ok("PUT", "/sim/faults", {"verb_latency_ms": {"create": 400}})
    start = time.monotonic()
    await api.ok("GET", PODS)
    fast = time.monotonic() - start
    start = time.monotonic()
    await api.ok("POST", PODS, pod("a"))
    assert time.monotonic() - start >= 0.4 > fast


async def test_watch_event_latency(api: Api) -> None:
    """watch_event_latency_ms delays delivery of watch events."""
    await api.ok("PUT", "/sim/faults", {"watch_event_latency_ms": 300})
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    reader = asyncio.create_task(read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}",
                                            stop=lambda evs: len(evs) >= 1))
    start = time.monotonic()
    await api.ok("POST", PODS, pod("a"))
    await reader
    assert time.monotonic() - start >= 0.3


async def test_watch_drop(api: Api) -> None:
    """watch_drop_seconds closes streams that asked for a much longer timeout."""
    await api.ok("PUT", "/sim/faults", {"watch_drop_seconds": 0.5})
    start = time.monotonic()
    status, events = await read_watch(api.http, f"{api.url}{PODS}?watch=1&timeoutSeconds=60", timeout=10)
    assert status == 200 and events == [] and time.monotonic() - start < 5


async def test_drop_watches_endpoint(api: Api) -> None:
    """POST /sim/drop-watches ends every open stream."""
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    reader = asyncio.create_task(read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}"))

    async def dropped() -> bool:
        return bool((await api.ok("POST", "/sim/drop-watches"))["closed"])

    await eventually(dropped, timeout=5, interval=0.05, message="a watch to drop")
    status, events = await reader
    assert status == 200 and events == []


async def test_compact_expires_open_watches(api: Api) -> None:
    """POST /sim/compact?expire_watches=true ends open watches with an in-stream 410."""
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    reader = asyncio.create_task(read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}"))

    async def expired() -> bool:
        return bool((await api.ok("POST", "/sim/compact?expire_watches=true"))["expiredWatches"])

    await eventually(expired, timeout=5, interval=0.05, message="a watch to expire")
    _, events = await reader
    assert events[-1]["type"] == "ERROR" and events[-1]["object"]["code"] == 410


async def test_too_large_rv_watches_answers_504_once(api: Api) -> None:
    """too_large_rv_watches answers the next watch from a resourceVersion as kube-apiserver's
    NewTooLargeResourceVersionError does (in-stream 504 Timeout, typed cause), then counts down."""
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("PATCH", "/sim/faults", {"too_large_rv_watches": 1})
    status, events = await read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}")
    assert status == 200 and [e["type"] for e in events] == ["ERROR"]
    error = events[0]["object"]
    assert (error["code"], error["reason"]) == (504, "Timeout")
    assert error["message"].startswith("Timeout: Too large resource version: ")
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    assert error["details"]["causes"] == [cause]
    assert (await api.ok("GET", "/sim/faults"))["too_large_rv_watches"] == 0
    status, events = await read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=1")
    assert status == 200 and events == []


async def test_compact_before_continue_expires_the_token(api: Api) -> None:
    """compact_before_continue refuses the next continue with 410 Expired (its list outlived a
    compaction); a new list from page one then works."""
    for name in ("a", "b", "c"):
        await api.ok("POST", PODS, pod(name))
    first = await api.ok("GET", f"{PODS}?limit=1")
    token = first["metadata"]["continue"]
    await api.ok("PATCH", "/sim/faults", {"compact_before_continue": 1})
    status, body = await api.call("GET", f"{PODS}?limit=1&continue={token}")
    assert (status, body["reason"]) == (410, "Expired")
    assert "continue parameter is too old" in body["message"]
    assert (await api.ok("GET", "/sim/faults"))["compact_before_continue"] == 0
    again = await api.ok("GET", f"{PODS}?limit=1")
    assert (await api.ok("GET", f"{PODS}?limit=5&continue={again['metadata']['continue']}"))["items"]


async def test_compaction_expires_every_open_list(api: Api) -> None:
    """A list still paging when another list's continue compacts is refused too, never continued
    from the current state: its first page predates a delete whose event its watch (from the
    later resourceVersion such a page would carry) would never see. The 410 offers the
    inconsistent continuation, which does serve the current state."""
    for name in ("a", "b", "c", "d"):
        await api.ok("POST", PODS, pod(name))
    open_list = await api.ok("GET", f"{PODS}?limit=2")
    other = await api.ok("GET", f"{PODS}?limit=1")
    await api.ok("DELETE", f"{PODS}/a")
    await api.ok("PATCH", "/sim/faults", {"compact_before_continue": 1})
    status, _ = await api.call("GET", f"{PODS}?limit=1&continue={other['metadata']['continue']}")
    assert status == 410
    status, body = await api.call("GET", f"{PODS}?limit=2&continue={open_list['metadata']['continue']}")
    assert (status, body["reason"]) == (410, "Expired")
    rest = await api.ok("GET", f"{PODS}?limit=5&continue={body['metadata']['continue']}")
    assert [p["metadata"]["name"] for p in rest["items"]] == ["c", "d"]
    assert int(rest["metadata"]["resourceVersion"]) > int(open_list["metadata"]["resourceVersion"])


async def test_faults_round_trip_and_validation(api: Api) -> None:
    """GET returns what PUT set; PATCH changes one knob; bad configs are 400."""
    await api.ok("PUT", "/sim/faults", {"latency_ms": 1, "watch_drop_seconds": 30})
    await api.ok("PATCH", "/sim/faults", {"latency_ms": 2})
    got = await api.ok("GET", "/sim/faults")
    assert got["latency_ms"] == 2 and got["watch_drop_seconds"] == 30
    for bad in ({"latency_ms": -1}, {"bogus": 1}, {"errors": [{"verb": "get", "code": 200, "rate": 1}]},
                {"errors": [{"verb": "get", "resource": "pods", "code": 500, "rate": 2}]}):
        status, body = await api.call("PUT", "/sim/faults", bad)
        assert status == 400, bad
        assert body["kind"] == "Status"


async def test_request_log_cursor(api: Api) -> None:
    """/sim/requests returns records after a cursor, with verb, resource, code and user agent."""
    cursor = (await api.ok("GET", "/sim/requests"))["next"]
    await api.ok("POST", PODS, pod("a"), headers={"User-Agent": "writer/1"})
    await api.call("GET", f"{PODS}/missing", headers={"User-Agent": "reader/1"})
    page = await api.ok("GET", f"/sim/requests?since={cursor}")
    got = [(r["verb"], r["resource"], r["namespace"], r["code"], r["user_agent"]) for r in page["items"]]
    assert got == [("create", "pods", "default", 201, "writer/1"), ("get", "pods", "default", 404, "reader/1")]
    again = await api.ok("GET", f"/sim/requests?since={page['next']}")
    assert again["items"] == [] and again["next"] == page["next"]


async def test_stats(api: Api) -> None:
    """/sim/stats counts objects per type."""
    await api.ok("POST", PODS, pod("a"))
    stats = await api.ok("GET", "/sim/stats")
    assert stats["objects"]["pods"] == 1 and stats["objects"]["nodes"] == 3


async def test_metrics_count_requests_and_objects(api: Api) -> None:
    """/metrics exposes request counts by verb/resource/code and live object counts."""
    await api.ok("POST", PODS, pod("a"))
    await api.call("GET", f"{PODS}/missing")
    async with api.http.get(api.url + "/metrics") as resp:
        text = await resp.text()
    assert 'sim_apiserver_request_total{code="201",resource="pods",verb="create"} 1.0' in text
    assert 'sim_apiserver_request_total{code="404",resource="pods",verb="get"} 1.0' in text
    assert 'sim_apiserver_storage_objects{resource="pods"} 1.0' in text
    assert 'sim_apiserver_storage_objects{resource="nodes"} 3.0' in text


async def test_metrics_time_the_delivery_of_watch_events(api: Api) -> None:
    """Every batch of changes a watch stream sends is timed from its oldest change being queued."""
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    watch = asyncio.create_task(read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}",
                                           stop=lambda evs: len(evs) >= 1))

    async def watching() -> bool:
        return bool((await api.ok("GET", "/sim/stats"))["watches"])

    await eventually(watching, message="the watch is open")  # so the pod is a change, not a replay
    await api.ok("POST", PODS, pod("a"))
    await watch
    async with api.http.get(api.url + "/metrics") as resp:
        text = await resp.text()
    assert 'sim_apiserver_watch_delivery_seconds_count{resource="pods"} 1.0' in text


async def test_resource_latency_delays_only_that_resource(api: Api) -> None:
    """resource_latency_ms delays requests on the named resource (by plural or group/plural) only."""
    await api.ok("PUT", "/sim/faults", {"resource_latency_ms": {"coordination.k8s.io/leases": 400}})
    start = time.monotonic()
    await api.ok("GET", PODS)
    fast = time.monotonic() - start
    start = time.monotonic()
    await api.call("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/x")
    assert time.monotonic() - start >= 0.4 > fast


async def test_a_rule_retry_after_overrides_the_global_one(api: Api) -> None:
    """A 429 rule with its own retry_after answers with that Retry-After; other 429s keep the global one."""
    await api.ok("PUT", "/sim/faults", {"retry_after_seconds": 1, "errors": [
        {"verb": "*", "resource": "leases", "code": 429, "rate": 1, "retry_after": 60},
        {"verb": "list", "resource": "pods", "code": 429, "rate": 1}]})
    async with api.http.get(api.url + "/apis/coordination.k8s.io/v1/namespaces/default/leases/x") as resp:
        assert (resp.status, resp.headers.get("Retry-After")) == (429, "60")
    async with api.http.get(api.url + PODS) as resp:
        assert (resp.status, resp.headers.get("Retry-After")) == (429, "1")
