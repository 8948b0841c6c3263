"""Informers against the simulator with faults on: the cache converges to a fresh list.

Faults: every watch dropped after 1 s, history compacted (410) every ~1.5 s, 5% of requests
answered 500, 20% of lists and watches answered 429 with Retry-After, while a driver creates,
updates and deletes objects through the API. Afterwards the informer's store must equal a fresh
list (no missing, extra or stale objects), and the handlers' view must equal the store, which
means every object that vanished was delivered as a delete.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.informer import BY_NODE_NAME, Informer, by_node_name, object_key, project_pod
from dsctl.kube import LEASES, PODS, ApiError, KubeClient, RetryPolicy
from dsctl.kube.resources import Resource
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

pytestmark = pytest.mark.slow

FAULTS: dict[str, Any] = {
    "watch_drop_seconds": 1.0,
    "retry_after_seconds": 1,
    "errors": [
        {"verb": "*", "resource": "*", "code": 500, "rate": 0.05},
        # The informers send few requests (a list, then a watch per drop), so 5 % alone often
        # missed them entirely; this makes sure their own watches meet 500s as well as 429s.
        {"verb": "watch", "resource": "*", "code": 500, "rate": 0.3},
        {"verb": "list", "resource": "*", "code": 429, "rate": 0.2},
        {"verb": "watch", "resource": "*", "code": 429, "rate": 0.2},
    ],
}


@pytest.fixture
async def cluster() -> AsyncIterator[SimProcess]:
    """A simulator without control loops (objects change only through the API)."""
    async with SimProcess(nodes=4, args=["--no-control-plane", "--bookmark-seconds", "1",
                                         "--seed", "7"]) as sim:
        yield sim


class HandlerView:
    """Rebuilds the collection from handler calls alone, and counts deletes."""

    def __init__(self, informer: Informer) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.deleted: set[str] = set()
        self.ever: set[str] = set()
        informer.add_handler(self.on_add, self.on_update, self.on_delete)

    def on_add(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        self.objects[key] = obj
        self.ever.add(key)

    def on_update(self, _old: dict[str, Any], new: dict[str, Any]) -> None:
        self.objects[object_key(new)] = new

    def on_delete(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        self.objects.pop(key, None)
        self.deleted.add(key)


def _lease(name: str, holder: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"holderIdentity": holder}}


def _pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "churn"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}


async def _churn(client: KubeClient, *, rounds: int, rng: random.Random) -> None:
    """Create, update and delete leases and pods; failed calls are simply skipped."""
    leases: list[str] = []
    pods: list[str] = []
    for i in range(rounds):
        action = rng.random()
        with contextlib.suppress(ApiError):
            if action < 0.4 or not leases:
                name = f"l{i}"
                await client.create(LEASES, _lease(name, "a"))
                leases.append(name)
                await client.create(PODS, _pod(f"p{i}", f"node-{i % 4}"))
                pods.append(f"p{i}")
            elif action < 0.7:
                name = rng.choice(leases)
                await client.patch(LEASES, name, {"spec": {"holderIdentity": f"h{i}"}},
                                   namespace="default")
                if pods:
                    await client.patch(PODS, rng.choice(pods),
                                       {"metadata": {"labels": {"round": str(i)}}},
                                       namespace="default")
            else:
                name = leases.pop(rng.randrange(len(leases)))
                await client.delete(LEASES, name, namespace="default")
                if pods:
                    await client.delete(PODS, pods.pop(rng.randrange(len(pods))),
                                        namespace="default", grace_period_seconds=0)
        if i % 10 == 0:
            await asyncio.sleep(0.05)


async def _compactor(sim: SimProcess, *, every: float) -> None:
    flip = False
    while True:
        await asyncio.sleep(every)
        flip = not flip
        with contextlib.suppress(RuntimeError):
            await sim.compact(expire_watches=flip)


async def _fresh(client: KubeClient, res: Resource) -> dict[str, str]:
    listed = await client.list(res, namespace="default")
    return {object_key(o): o["metadata"]["resourceVersion"] for o in listed["items"]}


def _cached(informer: Informer) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in informer.store.list()}


async def test_store_converges_under_faults(cluster: SimProcess) -> None:
    """With drops, 410s, 500s and 429s during churn, caches equal a fresh list and handlers
    saw a delete for every vanished object."""
    registry = CollectorRegistry()
    retry = RetryPolicy(max_attempts=6, backoff_base=0.05, backoff_cap=0.5)
    client = await KubeClient.from_config(kubeconfig=cluster.kubeconfig, qps=200, burst=200,
                                          retry=retry, registry=registry)
    driver = await KubeClient.from_config(kubeconfig=cluster.kubeconfig, qps=200, burst=200,
                                          retry=retry, registry=CollectorRegistry())
    leases = Informer(client, LEASES, namespace="default", registry=registry,
                      inactivity_timeout=10, page_size=7)
    pods = Informer(client, PODS, namespace="default", registry=registry,
                    indexers={BY_NODE_NAME: by_node_name}, transform=project_pod,
                    inactivity_timeout=10, page_size=7, streaming_list=True)
    lease_view, pod_view = HandlerView(leases), HandlerView(pods)
    compactor: asyncio.Task[None] | None = None
    try:
        await _churn(driver, rounds=30, rng=random.Random(1))
        await cluster.set_faults(**FAULTS)
        leases.run()
        pods.run()
        assert await leases.wait_for_sync(timeout=60)
        assert await pods.wait_for_sync(timeout=60)
        compactor = asyncio.create_task(_compactor(cluster, every=1.5), name="compactor")
        await _churn(driver, rounds=600, rng=random.Random(2))
        compactor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await compactor

        for informer, view, res in ((leases, lease_view, LEASES), (pods, pod_view, PODS)):
            async def converged(informer: Informer = informer, res: Resource = res) -> bool:
                return _cached(informer) == await _fresh(driver, res)

            await eventually(converged, timeout=60, interval=0.2,
                             message=f"{res.label} cache equal to a fresh list")
            assert view.objects.keys() == set(informer.store.keys())
            vanished = view.ever - set(informer.store.keys())
            assert vanished <= view.deleted
            assert vanished, "the churn should have deleted objects"
            assert informer.healthy()
        node_index = {n: {object_key(p) for p in pods.store.by_index(BY_NODE_NAME, n)}
                      for n in pods.store.index_values(BY_NODE_NAME)}
        assert node_index == {
            n: {object_key(p) for p in pods.store.list() if p["spec"].get("nodeName") == n}
            for n in {p["spec"]["nodeName"] for p in pods.store.list()}
        }
        relists = sum(
            registry.get_sample_value("informer_relists_total", {"resource": r}) or 0
            for r in ("coordination.k8s.io/leases", "pods")
        )
        assert relists > 2, "compaction should have forced re-lists"
        codes = {
            sample.labels["code"]
            for family in registry.collect() if family.name == "rest_client_requests"
            for sample in family.samples if sample.name == "rest_client_requests_total"
        }
        assert {"500", "429"} <= codes, f"faults should have hit the informers: {codes}"
    finally:
        if compactor is not None and not compactor.done():
            compactor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await compactor
        await leases.stop()
        await pods.stop()
        await client.close()
        await driver.close()
