"""The indexed store: keys, indexes kept in step with writes, and replace() diffs."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.informer.store import (
    BY_NODE_NAME,
    BY_OWNER_UID,
    ReadOnlyStore,
    Store,
    by_node_name,
    by_owner_uid,
    object_key,
)


def pod(name: str, *, node: str | None = None, owner: str | None = None, rv: str = "1",
        ns: str = "d") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "resourceVersion": rv}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": owner,
             "controller": True},
        ]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


def indexed_store() -> Store:
    return Store(indexers={BY_NODE_NAME: by_node_name, BY_OWNER_UID: by_owner_uid})


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param({"metadata": {"name": "n1"}}, "n1", id="cluster-scoped"),
        pytest.param({"metadata": {"name": "p", "namespace": "d"}}, "d/p", id="namespaced"),
    ],
)
def test_object_key(obj: dict[str, Any], key: str) -> None:
    """Keys are ns/name, or name for cluster-scoped objects."""
    assert object_key(obj) == key


def test_indexes_follow_upserts_and_deletes() -> None:
    """Moving a pod between nodes and deleting it keeps both indexes exact."""
    store = indexed_store()
    store.upsert(pod("a", node="n1", owner="u1"))
    store.upsert(pod("b", node="n1", owner="u2"))
    store.upsert(pod("c", owner="u1"))
    assert sorted(store.index_keys(BY_NODE_NAME, "n1")) == ["d/a", "d/b"]
    assert sorted(store.index_keys(BY_OWNER_UID, "u1")) == ["d/a", "d/c"]
    old, new = store.upsert(pod("a", node="n2", owner="u1", rv="2"))
    assert old is not None and old["spec"]["nodeName"] == "n1"
    assert [o["metadata"]["name"] for o in store.by_index(BY_NODE_NAME, "n1")] == ["b"]
    assert store.by_index(BY_NODE_NAME, "n2") == [new]
    assert store.delete("d/b") is not None
    assert store.by_index(BY_NODE_NAME, "n1") == []
    assert "n1" not in store.index_values(BY_NODE_NAME)
    assert store.delete("d/b") is None


def test_unscheduled_and_ownerless_objects_are_not_indexed() -> None:
    """A pod without nodeName or controller ref is in no bucket of those indexes."""
    store = indexed_store()
    store.upsert(pod("x"))
    assert store.index_values(BY_NODE_NAME) == []
    assert store.index_values(BY_OWNER_UID) == []


def test_non_controller_owner_is_ignored() -> None:
    """Only the ownerReference with controller: true indexes by owner UID."""
    obj = pod("x", owner="u1")
    obj["metadata"]["ownerReferences"][0]["controller"] = False
    assert by_owner_uid(obj) == []


def test_replace_reports_added_updated_deleted() -> None:
    """replace() yields adds, updates (changed RV only) and deletions, and reindexes."""
    store = indexed_store()
    store.replace([pod("a", node="n1", rv="1"), pod("b", node="n1", rv="1"),
                   pod("c", node="n2", rv="1")], "10")
    result = store.replace([pod("a", node="n1", rv="1"), pod("b", node="n3", rv="5"),
                            pod("d", node="n2", rv="6")], "20")
    assert [o["metadata"]["name"] for o in result.added] == ["d"]
    assert [(o["metadata"]["name"], n["spec"]["nodeName"]) for o, n in result.updated] == [
        ("b", "n3")]
    assert [o["metadata"]["name"] for o in result.deleted] == ["c"]
    assert sorted(store.keys()) == ["d/a", "d/b", "d/d"]
    assert sorted(store.index_keys(BY_NODE_NAME, "n2")) == ["d/d"]
    assert store.resource_version == "20"


def test_transform_applied_before_storing() -> None:
    """The store keeps what the transform returns."""
    store = Store(transform=lambda o: {"metadata": o["metadata"], "slim": True})
    _, stored = store.upsert(pod("a", node="n1"))
    assert stored == {"metadata": pod("a")["metadata"], "slim": True}
    assert store.get("d/a") is stored


def test_read_only_view_has_no_writers() -> None:
    """The view exposes reads only, over the live store."""
    store = indexed_store()
    view = ReadOnlyStore(store)
    store.upsert(pod("a", node="n1"))
    assert view.get("d/a") is store.get("d/a")
    assert view.get_by_name("a", namespace="d") is store.get("d/a")
    assert len(view) == 1 and "d/a" in view
    assert view.by_index(BY_NODE_NAME, "n1") == store.list()
    for writer in ("upsert", "delete", "replace"):
        assert not hasattr(view, writer)


def test_unknown_index_is_a_key_error() -> None:
    """Asking for an index that was not configured fails loudly."""
    with pytest.raises(KeyError, match="no index named"):
        Store().by_index("nope", "x")


def test_replacement_applies_page_by_page_and_restarts() -> None:
    """A paged replacement writes each page at once, skips (and keeps) objects whose RV is
    unchanged, and after a restart deletes what only the abandoned attempt had seen."""
    projected: list[str] = []

    def project(obj: dict[str, Any]) -> dict[str, Any]:
        projected.append(obj["metadata"]["name"])
        return obj

    store = Store(indexers={BY_NODE_NAME: by_node_name}, transform=project)
    store.replace([pod("a", node="n1"), pod("b", node="n1"), pod("c", node="n2")], "10")
    kept = store.get("d/a")
    projected.clear()
    replacement = store.begin_replace()
    first = replacement.apply([pod("a", node="n1"), pod("x", node="n4")], prepare=store.prepare)
    assert [o["metadata"]["name"] for o in first.added] == ["x"]
    assert "d/x" in store and store.resource_version == "10"
    replacement.restart()  # the continue token expired: the list starts again
    second = replacement.apply([pod("a", node="n1"), pod("b", node="n3", rv="2")],
                               prepare=store.prepare)
    assert [n["spec"]["nodeName"] for _, n in second.updated] == ["n3"]
    deleted = replacement.finish("20")
    assert sorted(o["metadata"]["name"] for o in deleted) == ["c", "x"]
    assert sorted(store.keys()) == ["d/a", "d/b"]
    assert store.get("d/a") is kept
    assert projected == ["x", "b"]
    assert store.index_values(BY_NODE_NAME) == ["n1", "n3"]
    assert store.resource_version == "20"


@pytest.mark.parametrize(
    ("before", "after", "n1", "n2"),
    [
        pytest.param({"node": "n1"}, {"node": "n1", "rv": "2"}, ["d/a"], [], id="same-node"),
        pytest.param({"node": "n1"}, {"node": "n2", "rv": "2"}, [], ["d/a"], id="moved"),
        pytest.param({}, {"node": "n2", "rv": "2"}, [], ["d/a"], id="bound"),
    ],
)
def test_upsert_reindexes_only_changes(
    before: dict[str, str], after: dict[str, str], n1: list[str], n2: list[str]
) -> None:
    """An update files the object under its new index values and nowhere else."""
    store = indexed_store()
    store.upsert(pod("a", **before))
    store.upsert(pod("a", **after))
    assert store.index_keys(BY_NODE_NAME, "n1") == n1
    assert store.index_keys(BY_NODE_NAME, "n2") == n2
    assert len(store) == 1
