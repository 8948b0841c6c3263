"""ownerReference garbage collection: background, foreground, orphan, dangling, CRD kinds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.testing import make_node, make_pod, wait_for
from dsctl_sim.registry import ResourceType
from dsctl_sim.storage import Storage

Sim = tuple[Storage, ControlPlane, FakeClock]

WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", True, builtin=False)


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock)
    storage.create("nodes", make_node("n1"))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _daemonset(storage: Storage, name: str = "ds") -> dict[str, Any]:
    return storage.create("apps/daemonsets", {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {}},
    })


def _owned_by(owner: dict[str, Any], *, block: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


def _pods(storage: Storage, n: int, owner: dict[str, Any], **kwargs: Any) -> list[str]:
    names = []
    for i in range(n):
        pod = make_pod(f"{owner['metadata']['name']}-{i}", node_name="n1",
                       owners=[_owned_by(owner)], **kwargs)
        names.append(storage.create("pods", pod)["metadata"]["name"])
    return names


def _get(storage: Storage, name: str, key: str = "pods") -> dict[str, Any] | None:
    return storage.get(key, "default", name)


def _gone(storage: Storage, names: list[str], key: str = "pods") -> bool:
    return all(_get(storage, n, key) is None for n in names)


def _deleting(storage: Storage, names: list[str]) -> bool:
    return all(
        (p := _get(storage, n)) is None or bool(p["metadata"].get("deletionTimestamp"))
        for n in names
    )


async def test_background_deletion_removes_dependents(sim: Sim) -> None:
    """Deleting an owner (default policy) deletes its pods after it is gone."""
    storage, plane, clock = sim
    ds = _daemonset(storage)
    pods = _pods(storage, 3, ds)
    other = _pods(storage, 1, _daemonset(storage, "keep"))
    await plane.settle()
    storage.delete("apps/daemonsets", "default", "ds")
    assert _get(storage, "ds", "apps/daemonsets") is None
    await wait_for(lambda: _deleting(storage, pods), what="pods deleting")
    await plane.settle()
    clock.advance(1)
    await wait_for(lambda: _gone(storage, pods), what="pods gone")
    await plane.settle()
    assert not _gone(storage, other)


async def test_foreground_deletion_waits_for_blocking_dependents(sim: Sim) -> None:
    """Foreground: pods go first; the owner disappears only once they are gone."""
    storage, plane, clock = sim
    ds = _daemonset(storage)
    pods = _pods(storage, 3, ds)
    await plane.settle()
    deleted = storage.delete("apps/daemonsets", "default", "ds", propagation_policy="Foreground")
    assert "foregroundDeletion" in deleted["metadata"]["finalizers"]
    await wait_for(lambda: _deleting(storage, pods), what="pods deleting")
    await plane.settle()
    assert _get(storage, "ds", "apps/daemonsets") is not None
    clock.advance(1)
    await wait_for(lambda: _gone(storage, pods), what="pods gone")
    await wait_for(lambda: _get(storage, "ds", "apps/daemonsets") is None, what="owner gone")


async def test_foreground_does_not_wait_for_non_blocking_dependents(sim: Sim) -> None:
    """Dependents without blockOwnerDeletion are deleted but do not hold the owner."""
    storage, plane, clock = sim
    ds = _daemonset(storage)
    pod = make_pod("loose", node_name="n1", owners=[_owned_by(ds, block=False)])
    storage.create("pods", pod)
    await plane.settle()
    storage.delete("apps/daemonsets", "default", "ds", propagation_policy="Foreground")
    await wait_for(lambda: _get(storage, "ds", "apps/daemonsets") is None, what="owner gone")
    await wait_for(lambda: _deleting(storage, ["loose"]), what="pod deleting")
    clock.advance(1)
    await wait_for(lambda: _gone(storage, ["loose"]), what="pod gone")


async def test_orphan_deletion_strips_owner_references(sim: Sim) -> None:
    """Orphan: the owner goes, its pods stay without a reference to it."""
    storage, plane, clock = sim
    ds = _daemonset(storage)
    pods = _pods(storage, 3, ds)
    await plane.settle()
    storage.delete("apps/daemonsets", "default", "ds", propagation_policy="Orphan")
    await wait_for(lambda: _get(storage, "ds", "apps/daemonsets") is None, what="owner gone")
    await plane.settle()
    clock.advance(5)
    await plane.settle()
    for name in pods:
        pod = _get(storage, name)
        assert pod is not None and not pod["metadata"].get("deletionTimestamp")
        assert not pod["metadata"].get("ownerReferences")


async def test_dangling_reference_at_creation_is_collected(sim: Sim) -> None:
    """A pod whose only owner never existed is deleted."""
    storage, _, _ = sim
    ghost = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ghost",
             "uid": "00000000-0000-4000-8000-000000000000", "controller": True}
    storage.create("pods", make_pod("orphan", owners=[ghost]))
    await wait_for(lambda: _deleting(storage, ["orphan"]), what="dangling pod collected")


async def test_surviving_owner_keeps_the_dependent(sim: Sim) -> None:
    """With two owners, losing one only removes that reference."""
    storage, _, _ = sim
    first, second = _daemonset(storage, "first"), _daemonset(storage, "second")
    refs = [_owned_by(first), {**_owned_by(second), "controller": False}]
    storage.create("pods", make_pod("shared", node_name="n1", owners=refs))
    storage.delete("apps/daemonsets", "default", "first")

    def only_second() -> bool:
        pod = _get(storage, "shared")
        assert pod is not None and not pod["metadata"].get("deletionTimestamp")
        return [r["name"] for r in pod["metadata"]["ownerReferences"]] == ["second"]

    await wait_for(only_second, what="reference to the deleted owner removed")


async def test_custom_resource_kinds_cascade(sim: Sim) -> None:
    """A CRD-defined kind registered at run time is collected as owner and as dependent."""
    storage, plane, _ = sim
    storage.register_type(WIDGETS)
    await wait_for(lambda: WIDGETS.key in plane.feeds.keys, what="feed for the new type")
    ds = _daemonset(storage)
    widget = storage.create(WIDGETS.key, {
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "ownerReferences": [_owned_by(ds)]},
    })
    pod = make_pod("of-widget", owners=[_owned_by(widget)])
    storage.create("pods", pod)
    await plane.settle()
    assert _get(storage, "w", WIDGETS.key) is not None
    storage.delete("apps/daemonsets", "default", "ds")
    await wait_for(lambda: _gone(storage, ["w"], WIDGETS.key), what="widget collected")
    await wait_for(lambda: _deleting(storage, ["of-widget"]), what="widget's pod collected")
