"""Informer over an in-memory source: sync, events, resume, re-list on Gone, fallbacks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.informer import BY_NODE_NAME, Informer, by_node_name, make_pod_projection
from dsctl.kube.errors import ConnectionFailed, Gone, ServerError, TooManyRequests
from dsctl.kube.resources import PODS
from dsctl.tuning import LIST_APPLY_SLICE
from tests.unit.informer.fakesource import FakeSource, PagedFakeSource


async def eventually(check: Callable[[], bool], *, timeout: float = 5.0) -> None:
    """Poll ``check`` until it holds, failing after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while True:
            if check():
                return
            await asyncio.sleep(0.005)


def pod(name: str, node: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "d", "labels": labels},
            "spec": {"nodeName": node}}


class Recorder:
    """Handlers that log what they saw, plus what the store held at that moment."""

    def __init__(self, informer: Informer) -> None:
        self.log: list[tuple[str, str]] = []
        self.store_at_call: list[bool] = []
        self.informer = informer
        informer.add_handler(self.on_add, self.on_update, self.on_delete)

    def _key(self, obj: dict[str, Any]) -> str:
        return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"

    def on_add(self, obj: dict[str, Any]) -> None:
        self.log.append(("add", self._key(obj)))
        self.store_at_call.append(self.informer.store.get(self._key(obj)) is obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.log.append(("update", self._key(new)))
        self.store_at_call.append(self.informer.store.get(self._key(new)) is new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.log.append(("delete", self._key(obj)))
        self.store_at_call.append(self.informer.store.get(self._key(obj)) is None)


def make(source: FakeSource, registry: CollectorRegistry, **kwargs: Any) -> Informer:
    return Informer(source, PODS, indexers={BY_NODE_NAME: by_node_name}, page_size=2,
                    registry=registry, **kwargs)


async def test_paginated_sync_then_events(registry: CollectorRegistry) -> None:
    """A paginated list fills the store; later events update it before handlers run."""
    source = FakeSource()
    for i in range(5):
        await source.put(pod(f"p{i}"))
    informer = make(source, registry)
    rec = Recorder(informer)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        assert len(informer.store) == 5
        assert [c.continue_ for c in source.calls if c.verb == "list"] == [None, "2", "4"]
        await source.put(pod("p0", node="n2"))
        await source.remove("d/p1")
        await source.put(pod("p9"))
        await eventually(lambda: len(rec.log) == 8)
    assert rec.log[5:] == [("update", "d/p0"), ("delete", "d/p1"), ("add", "d/p9")]
    assert all(rec.store_at_call)
    assert [o["metadata"]["name"] for o in informer.store.by_index(BY_NODE_NAME, "n2")] == ["p0"]
    assert registry.get_sample_value("informer_relists_total", {"resource": "pods"}) == 1
    assert registry.get_sample_value(
        "informer_events_total", {"resource": "pods", "type": "DELETED"}) == 1


async def test_dropped_watch_resumes_from_last_rv(registry: CollectorRegistry) -> None:
    """After a dropped watch the reflector re-watches from the last RV without re-listing."""
    source = FakeSource()
    await source.put(pod("a"))
    informer = make(source, registry)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await source.put(pod("b"))
        await eventually(lambda: "d/b" in informer.store)
        await source.drop_watches()
        await source.put(pod("c"))
        await eventually(lambda: "d/c" in informer.store)
    watches = [c for c in source.calls if c.verb == "watch"]
    assert len(watches) >= 2
    b = informer.store.get("d/b")
    assert b is not None
    assert watches[1].resource_version == b["metadata"]["resourceVersion"]
    assert informer.reflector.relists == 1


async def test_gone_relists_and_delivers_missed_deletes(registry: CollectorRegistry) -> None:
    """Changes missed during a compacted gap arrive after the re-list as deletes/updates/adds."""
    source = FakeSource()
    for name in ("keep", "change", "vanish"):
        await source.put(pod(name))
    informer = make(source, registry)
    rec = Recorder(informer)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await source.remove("d/vanish")
        await source.put(pod("change", node="n9"))
        await source.put(pod("new"))
        source.compact()
        await source.drop_watches()
        await eventually(lambda: informer.reflector.relists == 2)
        await eventually(lambda: len(rec.log) == 6)
    assert sorted(rec.log[3:]) == [("add", "d/new"), ("delete", "d/vanish"),
                                   ("update", "d/change")]
    assert all(rec.store_at_call)
    assert sorted(informer.store.keys()) == ["d/change", "d/keep", "d/new"]


async def test_list_listeners_run_after_each_relist_and_fail_alone(registry: CollectorRegistry) -> None:
    """A listener registered after the sync runs once per relist, after the relist's deletes
    were delivered; one that raises neither stops the others nor the watch."""
    source = FakeSource()
    for name in ("keep", "vanish"):
        await source.put(pod(name))
    informer = make(source, registry)
    rec = Recorder(informer)
    seen: list[tuple[int, list[tuple[str, str]]]] = []

    def failing() -> None:
        raise RuntimeError("listener bug")

    async with informer:
        await informer.wait_for_sync(timeout=5)
        informer.on_listed(failing)
        informer.on_listed(lambda: seen.append((informer.reflector.relists, list(rec.log))))
        await source.remove("d/vanish")
        source.compact()
        await source.drop_watches()
        await eventually(lambda: len(seen) == 1)
        await source.put(pod("after"))
        await eventually(lambda: "d/after" in informer.store)
    relists, log_then = seen[0]
    assert relists == 2
    assert ("delete", "d/vanish") in log_then
    assert len(seen) == 1


async def test_errors_are_retried(registry: CollectorRegistry) -> None:
    """429, 5xx and connection failures on list/watch are retried until the informer syncs."""
    source = FakeSource()
    await source.put(pod("a"))
    source.list_errors.extend([TooManyRequests(429, "TooManyRequests", "x", retry_after=0.01),
                               ServerError(500, "InternalError", "x")])
    source.watch_errors.append(ConnectionFailed("reset"))
    informer = make(source, registry)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.put(pod("b"))
        await eventually(lambda: "d/b" in informer.store)
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "TooManyRequests"}) == 1


@pytest.mark.parametrize("supported", [pytest.param(True, id="streaming"),
                                       pytest.param(False, id="fallback-to-list")])
async def test_streaming_list(registry: CollectorRegistry, supported: bool) -> None:
    """sendInitialEvents syncs from one stream, or falls back to list on a 4xx."""
    source = FakeSource(supports_streaming=supported)
    for i in range(3):
        await source.put(pod(f"p{i}"))
    informer = make(source, registry, streaming_list=True)
    rec = Recorder(informer)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        await source.put(pod("later"))
        await eventually(lambda: "d/later" in informer.store)
    assert [k for _, k in rec.log] == ["d/p0", "d/p1", "d/p2", "d/later"]
    lists = [c for c in source.calls if c.verb == "list"]
    assert (len(lists) == 0) is supported


async def test_handler_failure_is_isolated(registry: CollectorRegistry) -> None:
    """A raising handler does not stop other handlers or the informer."""
    source = FakeSource()
    informer = make(source, registry)

    def broken(_obj: dict[str, Any]) -> None:
        raise RuntimeError("bug")

    informer.add_handler(on_add=broken)
    rec = Recorder(informer)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await source.put(pod("a"))
        await eventually(lambda: rec.log == [("add", "d/a")])
        assert informer.healthy()


async def test_late_handler_gets_existing_objects(registry: CollectorRegistry) -> None:
    """A handler added after sync first receives every cached object as an add."""
    source = FakeSource()
    await source.put(pod("a"))
    informer = make(source, registry)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        rec = Recorder(informer)
        assert rec.log == [("add", "d/a")]


async def test_health_and_lifecycle(registry: CollectorRegistry) -> None:
    """healthy() is false before run and after stop, and false when progress is stale."""
    source = FakeSource()
    informer = make(source, registry, stale_after=10)
    assert not informer.healthy()
    informer.run()
    assert await informer.wait_for_sync(timeout=5)
    assert informer.healthy()
    assert not informer.healthy(now=informer.reflector.last_progress + 11)
    await informer.stop()
    assert not informer.healthy()
    assert informer.has_synced()


async def test_wait_for_sync_times_out(registry: CollectorRegistry) -> None:
    """wait_for_sync returns False when the list keeps failing."""
    source = FakeSource()
    source.list_errors.extend(ServerError(500, "InternalError", "x") for _ in range(100))
    informer = make(source, registry)
    async with informer:
        assert not await informer.wait_for_sync(timeout=0.2)


async def test_transform_projects_cached_objects(registry: CollectorRegistry) -> None:
    """With a transform, the store and handlers see only projected objects."""
    source = FakeSource()
    await source.put(pod("a", app="x"))
    informer = make(source, registry, transform=lambda o: {"metadata": o["metadata"]})
    async with informer:
        await informer.wait_for_sync(timeout=5)
    assert informer.store.get("d/a") == {"metadata": {
        "name": "a", "namespace": "d", "labels": {"app": "x"}, "resourceVersion": "101"}}


async def test_silent_watch_is_renewed(registry: CollectorRegistry) -> None:
    """A watch with no events for the inactivity timeout is re-opened from the same RV."""
    source = FakeSource()
    await source.put(pod("a"))
    informer = make(source, registry, inactivity_timeout=0.05)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await eventually(lambda: sum(c.verb == "watch" for c in source.calls) >= 3)
    assert {c.resource_version for c in source.calls if c.verb == "watch"} == {"101"}
    assert informer.reflector.relists == 1
    inactive = registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "WatchInactive"})
    assert (inactive or 0) >= 2


@pytest.mark.parametrize("source_type", [
    pytest.param(FakeSource, id="list"), pytest.param(PagedFakeSource, id="list-page"),
])
async def test_expired_continue_token_restarts_paginated_relist(
    registry: CollectorRegistry, source_type: type[FakeSource],
) -> None:
    """A relist whose continue token expires starts again page by page (never unpaginated),
    keeps the store exact and delivers the deletions missed while the watch was down."""
    source = source_type()
    for i in range(7):
        await source.put(pod(f"p{i}"))
    informer = make(source, registry)
    rec = Recorder(informer)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        kept = informer.store.get("d/p0")
        await source.remove("d/p5")
        await source.remove("d/p2")
        await source.put(pod("p3", node="n7"))
        await source.put(pod("p9"))
        # Compaction: the watch gets Gone; the relist's second page then finds its token expired.
        source.compact()
        source.list_errors.extend([None, Gone(410, "Expired", "continue token expired")])
        await source.drop_watches()
        await eventually(lambda: informer.reflector.relists == 2)
        await eventually(lambda: len(rec.log) == 11)
    lists = [c for c in source.calls if c.verb == "list"]
    assert all(c.limit == 2 for c in lists)
    assert [c.continue_ for c in lists[4:]] == [None, "2", None, "2", "4"]
    assert sorted(rec.log[7:]) == [("add", "d/p9"), ("delete", "d/p2"), ("delete", "d/p5"),
                                   ("update", "d/p3")]
    assert all(rec.store_at_call)
    assert sorted(informer.store.keys()) == ["d/p0", "d/p1", "d/p3", "d/p4", "d/p6", "d/p9"]
    assert informer.store.get("d/p0") is kept
    assert [o["metadata"]["name"] for o in informer.store.by_index(BY_NODE_NAME, "n7")] == ["p3"]
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "ContinueExpired"}) == 1


@pytest.mark.parametrize("source_type", [
    pytest.param(FakeSource, id="list"), pytest.param(PagedFakeSource, id="list-page"),
])
async def test_pages_of_another_resource_version_restart_the_list(
    registry: CollectorRegistry, source_type: type[FakeSource],
) -> None:
    """A continued page served from a newer state than the first page (what a server that
    dropped the snapshot and carried on would send) restarts the list: kept, the first page's
    objects would stay as listed, and the watch, from the newer resourceVersion, would never
    deliver a pod deleted between the two pages (soak seed 53101: a DaemonSet waited for
    deletions it had already made)."""
    source = source_type()
    for i in range(5):
        await source.put(pod(f"p{i}"))
    informer = make(source, registry)
    rec = Recorder(informer)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)

        async def delete_listed() -> None:
            await source.remove("d/p1")  # on page one, deleted before page two

        await source.put(pod("p4", node="n7"))
        source.compact()  # past the informer's resourceVersion: its next watch gets Gone
        source.on_page.append(delete_listed)
        source.current_pages = 1
        await source.drop_watches()
        await eventually(lambda: informer.reflector.relists == 2)
        await eventually(lambda: ("delete", "d/p1") in rec.log)
    assert sorted(informer.store.keys()) == ["d/p0", "d/p2", "d/p3", "d/p4"]
    lists = [c.continue_ for c in source.calls if c.verb == "list"]
    assert lists[3:] == [None, "2", None, "2"]  # the first try, then the restart (four pods left)
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "InconsistentList"}) == 1


async def test_inconsistent_pages_every_time_back_off(registry: CollectorRegistry) -> None:
    """A server that keeps continuing from its current state costs a bounded number of
    restarts per list, then the Gone backoff; the informer syncs once the pages agree."""
    source = FakeSource()
    for i in range(5):
        await source.put(pod(f"p{i}"))

    async def write() -> None:
        await source.put(pod("p4", node=f"n{source.rv}"))  # every page is followed by a write

    source.current_pages = 5
    source.on_page.extend([write] * 10)
    informer = make(source, registry)
    async with informer:
        assert await informer.wait_for_sync(timeout=10)
    assert len(informer.store) == 5 and source.current_pages == 0
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "InconsistentList"}) == 4
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "Gone"}) == 1


async def test_continue_expiring_every_time_backs_off(registry: CollectorRegistry) -> None:
    """A list whose continue tokens keep expiring restarts a bounded number of times, then
    backs off as after Gone, and syncs once the tokens last."""
    source = FakeSource()
    for i in range(5):
        await source.put(pod(f"p{i}"))
    expired = Gone(410, "Expired", "continue token expired")
    source.list_errors.extend([None, expired] * 9)
    informer = make(source, registry)
    async with informer:
        assert await informer.wait_for_sync(timeout=10)
        assert informer.reflector.backoff.failures >= 1
    lists = [c for c in source.calls if c.verb == "list"]
    assert all(c.limit == 2 for c in lists)
    assert len(informer.store) == 5
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": "Gone"}) == 2


TOO_LARGE_CAUSE = {"causes": [{"reason": "ResourceVersionTooLarge",
                               "message": "Too large resource version"}], "retryAfterSeconds": 1}


@pytest.mark.parametrize(("error", "relists"), [
    pytest.param(ServerError(504, "Timeout", "Timeout: Too large resource version: 200, current: 150",
                             details=TOO_LARGE_CAUSE), True, id="504-with-cause"),
    pytest.param(ServerError(504, "Timeout", "Timeout: Too large resource version: 200, current: 150"),
                 True, id="504-message-only-old-server"),
    pytest.param(ServerError(504, "Timeout", "Timeout: request did not complete within 60s"),
                 False, id="504-other-timeout"),
])
async def test_too_large_resource_version_relists(
    registry: CollectorRegistry, error: ServerError, relists: bool
) -> None:
    """A watch refused with 504 "Too large resource version" relists instead of re-watching
    at the same resourceVersion; any other 504 is retried like a server error."""
    source = FakeSource()
    await source.put(pod("a"))
    informer = make(source, registry)
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
        source.watch_errors.append(error)
        await source.drop_watches()
        await eventually(lambda: len([c for c in source.calls if c.verb == "watch"]) >= 3)
        await source.put(pod("b"))
        await eventually(lambda: "d/b" in informer.store)
    assert (informer.reflector.relists == 2) is relists
    reason = "ResourceVersionTooLarge" if relists else "Timeout"
    assert registry.get_sample_value(
        "informer_watch_errors_total", {"resource": "pods", "reason": reason}) == 1


async def test_repeated_gone_backs_off(registry: CollectorRegistry) -> None:
    """Gone right after every re-list re-lists with growing backoff, not in a hot loop."""
    source = FakeSource()
    await source.put(pod("a"))
    source.watch_errors.extend(Gone(410, "Expired", "too old") for _ in range(3))
    informer = make(source, registry)
    async with informer:
        await eventually(lambda: informer.reflector.backoff.failures >= 2)
        await eventually(lambda: informer.reflector.relists == 4)
        await source.put(pod("b"))
        await eventually(lambda: "d/b" in informer.store)
    assert [c.verb for c in source.calls].count("list") == 4


async def test_cached_objects_carry_type_meta(registry: CollectorRegistry) -> None:
    """Listed items (which come without kind/apiVersion) and watched ones both get them."""
    source = FakeSource()
    await source.put(pod("listed"))
    informer = make(source, registry)
    async with informer:
        await informer.wait_for_sync(timeout=5)
        await source.put(pod("watched"))
        await eventually(lambda: "d/watched" in informer.store)
    for obj in informer.store.list():
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "Pod")


def full_pod(name: str, node: str) -> dict[str, Any]:
    """A pod as the API serves it in a list (no kind), with fields the projection drops."""
    return {"metadata": {"name": name, "namespace": "d", "uid": f"u-{name}", "labels": {"app": "a"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "a",
                                              "uid": "ds", "controller": True}],
                         "managedFields": [{"manager": "x"}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "hostIP": "10.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t"}]}}


@pytest.mark.parametrize("odd", [
    pytest.param(False, id="ordinary-pods"),
    pytest.param(True, id="one-pod-of-another-shape"),
])
async def test_paged_list_caches_what_the_plain_list_caches(registry: CollectorRegistry, odd: bool) -> None:
    """A pod informer listing through the client's page decoder caches exactly the projected
    objects that listing the decoded page gives, an unusual pod included."""
    stores = []
    for source_type in (FakeSource, PagedFakeSource):
        source = source_type()
        for i in range(5):
            await source.put(full_pod(f"p{i}", f"n{i % 2}"))
        if odd:
            await source.put({**full_pod("odd", "n1"), "spec": None})
        informer = Informer(source, PODS, indexers={BY_NODE_NAME: by_node_name}, page_size=2,
                            registry=CollectorRegistry(), transform=make_pod_projection())
        async with informer:
            assert await informer.wait_for_sync(timeout=5)
            stores.append(({o["metadata"]["name"]: o for o in informer.store.list()},
                           sorted(o["metadata"]["name"] for o in informer.store.by_index(BY_NODE_NAME, "n1"))))
    assert stores[0] == stores[1]
    assert "managedFields" not in stores[1][0]["p0"]["metadata"]


async def test_the_next_page_is_asked_for_while_a_page_is_delivered(registry: CollectorRegistry) -> None:
    """The next page's request goes out while the handlers receive the current page, so the
    server answers it meanwhile; the pages still reach the store and handlers in order."""
    source = PagedFakeSource()
    pods = [f"p{i:03d}" for i in range(LIST_APPLY_SLICE + 10)]
    for name in pods:
        await source.put(pod(name))
    informer = Informer(source, PODS, page_size=LIST_APPLY_SLICE + 5, registry=registry)
    log = source.page_log
    informer.add_handler(lambda obj: log.append(("add", obj["metadata"]["name"])))
    async with informer:
        assert await informer.wait_for_sync(timeout=5)
    second = log.index(("page", str(LIST_APPLY_SLICE + 5)))
    assert [entry for entry in log if entry[0] == "add"] == [("add", name) for name in pods]
    assert log.index(("add", pods[LIST_APPLY_SLICE - 1])) < second < log.index(("add", pods[LIST_APPLY_SLICE + 4]))


async def test_a_list_stopped_midway_leaves_no_request_behind(registry: CollectorRegistry) -> None:
    """Stopping an informer while its next page is in flight cancels that request too."""
    source = PagedFakeSource()
    for i in range(5):
        await source.put(pod(f"p{i}"))
    asked = asyncio.Event()

    async def hang() -> None:
        asked.set()
        await asyncio.Event().wait()

    source.on_page.extend([_nothing, hang])
    informer = make(source, registry)
    async with informer:
        await asyncio.wait_for(asked.wait(), timeout=5)
    assert not informer.reflector.synced.is_set()


async def _nothing() -> None:
    return None
