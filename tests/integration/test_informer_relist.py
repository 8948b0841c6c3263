"""Forced relists against the simulator: expired continue tokens and 504 "Too large resource version".

The simulator's ``compact_before_continue`` fault compacts the history just before it serves
the next continue request, as etcd does when it compacts during a paginated list, so the
token is refused with 410 Expired. ``too_large_rv_watches`` answers the next watch from a
resourceVersion the way a lagging apiserver does (504 Timeout, cause ResourceVersionTooLarge).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.informer import BY_NODE_NAME, Informer, by_node_name, object_key, project_pod
from dsctl.kube import PODS, KubeClient
from dsctl.kube.resources import Resource
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

PAGE = 7


class RecordingClient:
    """Forwards to a real client and records each list's ``limit`` and ``continue``."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.lists: list[tuple[int | None, str | None]] = []

    async def list(self, res: Resource, **kwargs: Any) -> dict[str, Any]:
        self.lists.append((kwargs.get("limit"), kwargs.get("continue_")))
        return await self.client.list(res, **kwargs)

    def watch(self, res: Resource, **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        return self.client.watch(res, **kwargs)


class HandlerView:
    """The collection rebuilt from handler calls alone."""

    def __init__(self, informer: Informer) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.deleted: set[str] = set()
        informer.add_handler(self.on_add, self.on_update, self.on_delete)

    def on_add(self, obj: dict[str, Any]) -> None:
        self.objects[object_key(obj)] = obj

    def on_update(self, _old: dict[str, Any], new: dict[str, Any]) -> None:
        self.objects[object_key(new)] = new

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.objects.pop(object_key(obj), None)
        self.deleted.add(object_key(obj))


def _pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}


@pytest.fixture
async def cluster() -> AsyncIterator[SimProcess]:
    """A simulator without control loops, holding 30 pods."""
    async with SimProcess(nodes=3, args=["--no-control-plane", "--bookmark-seconds", "1"]) as sim:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=500)
        try:
            for i in range(30):
                await client.create(PODS, _pod(f"p{i:02d}", f"node-{i % 3}"), namespace="default")
        finally:
            await client.close()
        yield sim


@pytest.fixture
async def client(cluster: SimProcess) -> AsyncIterator[KubeClient]:
    """A client of the simulator."""
    kube = await KubeClient.from_config(kubeconfig=cluster.kubeconfig, qps=500, burst=500)
    try:
        yield kube
    finally:
        await kube.close()


async def _converged(informer: Informer, client: KubeClient) -> bool:
    listed = await client.list(PODS, namespace="default")
    fresh = {object_key(o): o["metadata"]["resourceVersion"] for o in listed["items"]}
    return fresh == {object_key(o): o["metadata"]["resourceVersion"] for o in informer.store.list()}


async def test_relist_with_expired_continue_token(cluster: SimProcess, client: KubeClient) -> None:
    """After a compaction, a relist whose continue token expires starts again page by page;
    the store equals a fresh list and the deletions missed meanwhile reach the handlers."""
    recorder = RecordingClient(client)
    informer = Informer(recorder, PODS, namespace="default", registry=CollectorRegistry(),
                        indexers={BY_NODE_NAME: by_node_name}, transform=project_pod,
                        page_size=PAGE)
    view = HandlerView(informer)
    try:
        informer.run()
        assert await informer.wait_for_sync(timeout=30)
        await informer.stop()  # the watch is down: what follows is missed
        for i in (1, 8, 15, 22, 29):
            await client.delete(PODS, f"p{i:02d}", namespace="default", grace_period_seconds=0)
        await client.patch(PODS, "p03", {"metadata": {"labels": {"changed": "yes"}}}, namespace="default")
        await client.create(PODS, _pod("p99", "node-0"), namespace="default")
        await cluster.compact()
        await cluster.set_faults(compact_before_continue=1)
        recorder.lists.clear()
        informer.run()
        await eventually(lambda: _converged(informer, client), timeout=30,
                         message="cache equal to a fresh list")
        await eventually(lambda: _async(informer.reflector.relists == 2), timeout=10)
        assert (await cluster.faults())["compact_before_continue"] == 0
    finally:
        await informer.stop()
    assert recorder.lists, "the informer should have listed again"
    assert {limit for limit, _ in recorder.lists} == {PAGE}, "never an unpaginated list"
    assert [token for _, token in recorder.lists].count(None) == 2, "one restart from page one"
    assert view.deleted == {f"default/p{i:02d}" for i in (1, 8, 15, 22, 29)}
    assert view.objects.keys() == set(informer.store.keys())
    assert informer.store.get("default/p03")["metadata"]["labels"] == {"changed": "yes"}  # type: ignore[index]
    assert {object_key(p) for p in informer.store.by_index(BY_NODE_NAME, "node-1")} == {
        f"default/p{i:02d}" for i in range(1, 30, 3) if i not in (1, 22)}


async def test_too_large_resource_version_relists(cluster: SimProcess, client: KubeClient) -> None:
    """A watch answered 504 "Too large resource version" makes the informer relist (not
    re-watch at the same resourceVersion), and the cache keeps up afterwards."""
    informer = Informer(client, PODS, namespace="default", registry=CollectorRegistry(), page_size=PAGE)
    try:
        informer.run()
        assert await informer.wait_for_sync(timeout=30)
        await cluster.set_faults(too_large_rv_watches=1)
        await cluster.drop_watches()
        await eventually(lambda: _async(informer.reflector.relists == 2), timeout=30,
                         message="a relist after the 504")
        assert (await cluster.faults())["too_large_rv_watches"] == 0
        await client.delete(PODS, "p05", namespace="default", grace_period_seconds=0)
        await eventually(lambda: _async("default/p05" not in informer.store), timeout=30)
        assert await _converged(informer, client)
    finally:
        await informer.stop()


async def _async(value: bool) -> bool:
    return value
