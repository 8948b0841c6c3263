"""The pod informer's watch path over real HTTP: lean-decoded batches, bookmarks, errors, relists."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.informer import BY_NODE_NAME, BY_OWNER_UID, Informer, by_node_name, by_owner_uid, object_key
from dsctl.informer.projections import make_pod_projection
from dsctl.kube import PODS, KubeClient, RetryPolicy
from tests.support.poll import eventually
from tests.unit.kube.fakeserver import FakeServer, event_line, reply, status_body, stream, write_kubeconfig

Obj = dict[str, Any]
KEEP = "dsctl.io/in-place-update"
PROJECT = make_pod_projection(keep_annotations=(KEEP,))
PATH = "/api/v1/namespaces/d/pods"


def _pod(name: str, rv: str, *, node: str = "n1", ready: str = "True") -> Obj:
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "d", "uid": f"uid-{name}", "resourceVersion": rv,
                     "labels": {"app": "x"}, "annotations": {KEEP: "1", "other": "y"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x",
                                          "uid": "ds-uid", "controller": True}],
                     "managedFields": [{"manager": "m"}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchFields": [
                         {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}],
                   "containerStatuses": [{"name": "c", "restartCount": 0, "ready": True}]},
    }


def _listed(*pods: Obj, rv: str) -> Obj:
    items = []
    for pod in pods:
        item = copy.deepcopy(pod)
        del item["kind"], item["apiVersion"]  # list items come without them
        items.append(item)
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": items}


def _expected(*pods: Obj) -> dict[str, Obj]:
    return {f"d/{p['metadata']['name']}": PROJECT(copy.deepcopy(p)) for p in pods}


@pytest.fixture
async def client(server: FakeServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A real client for the fake server."""
    path = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    kube = await KubeClient.from_config(
        kubeconfig=str(path), qps=0, burst=1, registry=CollectorRegistry(), environ={},
        retry=RetryPolicy(max_attempts=2, backoff_base=0.01, backoff_cap=0.02),
    )
    try:
        yield kube
    finally:
        await kube.close()


def _informer(client: KubeClient) -> Informer:
    return Informer(client, PODS, namespace="d", registry=CollectorRegistry(), inactivity_timeout=5,
                    indexers={BY_NODE_NAME: by_node_name, BY_OWNER_UID: by_owner_uid},
                    transform=make_pod_projection(keep_annotations=(KEEP,)))


def _watches(server: FakeServer) -> list[dict[str, str]]:
    return [s.query for s in server.requests("GET", PATH) if s.query.get("watch") == "true"]


async def test_events_bookmark_and_a_malformed_line(server: FakeServer, client: KubeClient) -> None:
    """Events before a malformed line are applied; the watch resumes from the last RV seen, so
    nothing is lost; the cache equals the projection of the full objects, indexes included."""
    a, b, c = _pod("a", "10"), _pod("b", "11"), _pod("c", "12")
    a2, d = _pod("a", "20", ready="False"), _pod("d", "22", node="n2")
    hold = asyncio.Event()
    first = b"".join([
        event_line("MODIFIED", a2), event_line("DELETED", _pod("b", "21")), event_line("ADDED", d),
        event_line("BOOKMARK", {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "23"}}),
        b'{"type": "MODIFIED", "object": {"metadata": \n',
        event_line("MODIFIED", _pod("c", "99")),  # after the bad line: must come again, not from here
    ])
    c2 = _pod("c", "24", node="n3")
    server.queue("GET", PATH, reply(200, _listed(a, b, c, rv="12")), stream(first),
                 stream(event_line("MODIFIED", c2), hold=hold))
    informer = _informer(client)
    updates: list[tuple[str, str]] = []
    informer.add_handler(on_update=lambda old, new: updates.append(
        (old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])))
    async with informer:
        assert await informer.wait_for_sync(timeout=10)

        async def caught_up() -> bool:
            return informer.store.resource_version == "24"

        await eventually(caught_up, timeout=10, message="the second watch's event")
        store = informer.store
        assert {object_key(o): o for o in store.list()} == _expected(a2, d, c2)
        assert sorted(store.index_values(BY_NODE_NAME)) == ["n1", "n2", "n3"]
        assert store.index_keys(BY_NODE_NAME, "n3") == ["d/c"]
        assert updates == [("10", "20"), ("12", "24")]
        assert [w.get("resourceVersion") for w in _watches(server)] == ["12", "23"]
        hold.set()


async def test_in_stream_gone_relists(server: FakeServer, client: KubeClient) -> None:
    """An ERROR 410 after some events: those events are applied, then the informer relists."""
    a, b = _pod("a", "10"), _pod("b", "11")
    hold = asyncio.Event()
    gone = event_line("ERROR", status_body(410, "Expired", "too old resource version"))
    server.queue("GET", PATH, reply(200, _listed(a, b, rv="11")),
                 stream(event_line("MODIFIED", _pod("a", "15")) + gone),
                 reply(200, _listed(_pod("a", "16"), rv="16")),
                 stream(b"", hold=hold))
    informer = _informer(client)
    deleted: list[str] = []
    informer.add_handler(on_delete=lambda obj: deleted.append(obj["metadata"]["name"]))
    async with informer:
        assert await informer.wait_for_sync(timeout=10)

        async def relisted() -> bool:
            return informer.reflector.relists == 2 and len(_watches(server)) == 2

        await eventually(relisted, timeout=10, message="the relist")
        assert {object_key(o): o for o in informer.store.list()} == _expected(_pod("a", "16"))
        assert deleted == ["b"]
        hold.set()
