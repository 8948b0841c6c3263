"""Informers against the simulator: streaming list, pagination, bookmarks and projections."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.informer import BY_NODE_NAME, Informer, by_node_name, project_node, project_pod
from dsctl.kube import NODES, PODS, KubeClient
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


@pytest.fixture
async def cluster() -> AsyncIterator[SimProcess]:
    """A 6-node simulator without control loops, with fast bookmarks."""
    async with SimProcess(nodes=6, args=["--no-control-plane", "--bookmark-seconds", "0.5"]) as sim:
        yield sim


@pytest.fixture
async def client(cluster: SimProcess) -> AsyncIterator[KubeClient]:
    """A client with a private metrics registry and a recognisable user agent."""
    kube = await KubeClient.from_config(kubeconfig=cluster.kubeconfig, qps=100, burst=100,
                                        registry=CollectorRegistry(), user_agent="informer-test")
    try:
        yield kube
    finally:
        await kube.close()


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default", "labels": {"i": str(i)}},
            "spec": {"nodeName": f"node-{i % 6}",
                     "containers": [{"name": "c", "image": "busybox"}]}}


async def _mine(cluster: SimProcess) -> list[dict[str, Any]]:
    log = await cluster.requests(since=0)
    return [r for r in log["items"] if r.get("user_agent") == "informer-test"]


async def test_streaming_list_syncs_with_one_watch(cluster: SimProcess, client: KubeClient) -> None:
    """With streaming_list the sim's sendInitialEvents fills the cache: no list request."""
    for i in range(12):
        await client.create(PODS, _pod(i))
    pods = Informer(client, PODS, streaming_list=True, transform=project_pod,
                    indexers={BY_NODE_NAME: by_node_name}, registry=CollectorRegistry())
    async with pods:
        assert await pods.wait_for_sync(timeout=30)
        assert len(pods.store) == 12
        assert {p["metadata"]["name"] for p in pods.store.by_index(BY_NODE_NAME, "node-0")} == {
            "p0", "p6"}
        await client.create(PODS, _pod(12))
        await eventually(lambda: _true(pods.store.get("default/p12")), timeout=10)
    verbs = [r["verb"] for r in await _mine(cluster) if r["resource"] == "pods"]
    assert "list" not in verbs
    assert "watch" in verbs


async def test_paginated_list_and_bookmarks_advance_rv(
    cluster: SimProcess, client: KubeClient
) -> None:
    """Listing pages through continue tokens; bookmarks move the resume RV with no events."""
    nodes = Informer(client, NODES, page_size=2, transform=project_node,
                     registry=CollectorRegistry())
    async with nodes:
        assert await nodes.wait_for_sync(timeout=30)
        assert sorted(nodes.store.keys()) == [f"node-{i}" for i in range(6)]
        listed_rv = nodes.reflector.last_rv
        await client.create(PODS, _pod(1))  # moves the global RV; nodes see only a bookmark
        await eventually(lambda: _true(nodes.reflector.last_rv != listed_rv), timeout=10)
        node = nodes.store.get("node-0")
        assert node is not None and set(node) == {"apiVersion", "kind", "metadata", "spec", "status"}
    lists = [r for r in await _mine(cluster) if r["resource"] == "nodes" and r["verb"] == "list"]
    assert len(lists) == 3


async def _true(value: object) -> bool:
    return bool(value)
