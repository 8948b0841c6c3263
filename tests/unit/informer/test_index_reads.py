"""Declared index reads: an update skips an index only when its result could not have changed."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from dsctl.controller.cacheview import (
    BY_TARGET_NODE,
    ORPHANS_BY_NAMESPACE,
    by_target_node,
    orphans_by_namespace,
)
from dsctl.informer.store import (
    BY_NODE_NAME,
    BY_OWNER_UID,
    IndexFunc,
    Store,
    by_node_name,
    by_owner_uid,
    index_reads,
)

INDEXERS: dict[str, IndexFunc] = {
    BY_TARGET_NODE: by_target_node,
    BY_OWNER_UID: by_owner_uid,
    ORPHANS_BY_NAMESPACE: orphans_by_namespace,
    BY_NODE_NAME: by_node_name,
}


def _affinity(node: str) -> dict[str, Any]:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _owners(uid: str, *, controller: Any = True) -> list[dict[str, Any]]:
    return [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": uid, "controller": controller}]


# Shared values (as a projection shares them) and odd shapes an index function must survive.
NODE_NAMES: list[Any] = ["n1", "n2", "", None, 7]
AFFINITIES: list[Any] = [_affinity("n1"), _affinity("n3"), {}, None, "junk"]
OWNERS: list[Any] = [_owners("u1"), _owners("u2"), _owners("u1", controller=1), [], None, "junk"]
NAMESPACES = ["a", "b", ""]


def _maybe_copy(rng: random.Random, value: Any) -> Any:
    """The shared value itself, or an equal copy (a decoder that did not share it)."""
    if rng.random() < 0.3:
        return copy.deepcopy(value)
    if value.__class__ is str and rng.random() < 0.5:
        return "".join(list(value))  # an equal string that is not the same object
    return value


def _random_pod(rng: random.Random, name: str, namespace: str) -> dict[str, Any]:
    # The key (name, namespace) stays; the namespace may be an equal string, not the same.
    meta: dict[str, Any] = {"name": name, "namespace": _maybe_copy(rng, namespace),
                            "resourceVersion": str(rng.random())}
    if rng.random() < 0.85:
        meta["ownerReferences"] = _maybe_copy(rng, rng.choice(OWNERS))
    obj: dict[str, Any] = {"metadata": meta}
    shape = rng.random()
    if shape < 0.85:
        spec: dict[str, Any] = {}
        if rng.random() < 0.8:
            spec["nodeName"] = _maybe_copy(rng, rng.choice(NODE_NAMES))
        if rng.random() < 0.6:
            spec["affinity"] = _maybe_copy(rng, rng.choice(AFFINITIES))
        obj["spec"] = spec
    elif shape < 0.95:
        obj["spec"] = rng.choice([None, "n1", 3])
    obj["status"] = {"phase": rng.choice(["Running", "Pending"])}
    return obj


def _recomputed(store: Store) -> dict[str, dict[str, set[str]]]:
    """Every index as a full recomputation from the cached objects would build it."""
    out: dict[str, dict[str, set[str]]] = {name: {} for name in INDEXERS}
    keys = store.keys()  # the store iterates its objects, not its keys
    for key in keys:
        obj = store.get(key)
        assert obj is not None
        for name, func in INDEXERS.items():
            for value in func(obj):
                out[name].setdefault(value, set()).add(key)
    return out


def _indexes(store: Store) -> dict[str, dict[str, set[str]]]:
    return {name: {value: set(store.index_keys(name, value)) for value in store.index_values(name)}
            for name in INDEXERS}


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed-{seed}") for seed in range(8)])
def test_skipping_indexes_equals_full_recompute(seed: int) -> None:
    """Over random updates mixing shared values, equal copies and odd shapes, the indexes
    always equal a full recomputation."""
    rng = random.Random(seed)
    store = Store(indexers=INDEXERS)
    names = [(f"p{i}", NAMESPACES[i % len(NAMESPACES)]) for i in range(12)]
    for step in range(600):
        name, namespace = rng.choice(names)
        if rng.random() < 0.1:
            store.delete(f"{namespace}/{name}" if namespace else name)
            continue
        old = _random_pod(rng, name, namespace)
        store.upsert(old, prepared=True)
        # Most updates change only status, keeping the same sub-objects (the common case).
        if rng.random() < 0.5:
            new = {**old, "status": {"phase": "Failed"}}
            new["metadata"] = {**old["metadata"], "resourceVersion": str(step)}
            if old.get("spec").__class__ is dict:
                new["spec"] = dict(old["spec"])
            store.upsert(new, prepared=True)
        assert _indexes(store) == _recomputed(store), f"step {step}"


class _Counting:
    """An index function by node name that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, obj: Mapping[str, Any]) -> list[str]:
        self.calls += 1
        return by_node_name(obj)


def _pod(*, node: Any, owners: Any = None, phase: str = "Running") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "d"}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}


SHARED_OWNERS = _owners("u1")


@pytest.mark.parametrize(
    ("before", "after", "computed"),
    [
        pytest.param(_pod(node="n1"), _pod(node="n1", phase="Failed"), False, id="status-only"),
        pytest.param(_pod(node="n1"), _pod(node="".join(["n", "1"])), False, id="equal-string"),
        pytest.param(_pod(node="n1"), _pod(node="n2"), True, id="node-changed"),
        pytest.param(_pod(node=["n1"]), _pod(node=["n1"]), True, id="equal-copy-recomputed"),
        pytest.param(_pod(node=None), _pod(node=None), False, id="both-none"),
        pytest.param({"metadata": {"name": "p", "namespace": "d"}, "spec": "x"},
                     {"metadata": {"name": "p", "namespace": "d"}, "spec": "x"}, False,
                     id="same-non-dict-parent"),
        pytest.param({"metadata": {"name": "p", "namespace": "d"}, "spec": {}},
                     {"metadata": {"name": "p", "namespace": "d"}}, True, id="parent-removed"),
    ],
)
def test_index_is_computed_only_when_a_read_changed(
    before: dict[str, Any], after: dict[str, Any], computed: bool
) -> None:
    """An update computes a declared index only when one of its reads holds another value."""
    counting = _Counting()
    store = Store(indexers={"node": index_reads("spec.nodeName")(counting)})
    store.upsert(before, prepared=True)
    counting.calls = 0
    store.upsert(after, prepared=True)
    assert counting.calls == (2 if computed else 0)
    assert store.index_values("node") == by_node_name(after)


@pytest.mark.parametrize(
    ("reads", "same_spec", "computed"),
    [
        pytest.param(("spec",), True, False, id="whole-spec-same-object"),
        pytest.param(("spec",), False, True, id="whole-spec-equal-copy"),
        pytest.param(("spec.nodeName", "spec"), False, True, id="whole-read-wins-over-key"),
        pytest.param(("spec", "spec.nodeName"), False, True, id="whole-read-wins-either-order"),
        pytest.param(("metadata.namespace", "spec.nodeName"), False, False, id="two-first-keys"),
    ],
)
def test_whole_value_reads(reads: tuple[str, ...], same_spec: bool, computed: bool) -> None:
    """A read of a whole first-level value skips only when it is the very same object."""
    counting = _Counting()
    store = Store(indexers={"node": index_reads(*reads)(counting)})
    before = _pod(node="n1")
    store.upsert(before, prepared=True)
    after = {**before, "metadata": dict(before["metadata"]), "status": {"phase": "Failed"}}
    after["spec"] = before["spec"] if same_spec else dict(before["spec"])
    counting.calls = 0
    store.upsert(after, prepared=True)
    assert counting.calls == (2 if computed else 0)


def test_undeclared_index_is_always_computed() -> None:
    """An index function without declared reads runs on every update, as before."""
    counting = _Counting()
    store = Store(indexers={"node": counting})
    store.upsert(_pod(node="n1", owners=SHARED_OWNERS), prepared=True)
    store.upsert(_pod(node="n1", owners=SHARED_OWNERS, phase="Failed"), prepared=True)
    assert counting.calls == 3


@pytest.mark.parametrize(
    ("change", "node_calls", "owner_calls"),
    [
        pytest.param({}, 0, 0, id="status-only-skips-both"),
        pytest.param({"node": "n2"}, 2, 0, id="node-changed"),
        pytest.param({"owners": _owners("u2")}, 0, 2, id="owners-changed"),
        pytest.param({"node": "n2", "owners": _owners("u2")}, 2, 2, id="both-changed"),
    ],
)
def test_each_index_is_judged_by_its_own_reads(
    change: dict[str, Any], node_calls: int, owner_calls: int
) -> None:
    """With several declared indexes, an update computes exactly those whose reads changed."""
    by_node, by_owner = _Counting(), _Counting()
    store = Store(indexers={"node": index_reads("spec.nodeName")(by_node),
                            "owner": index_reads("metadata.ownerReferences")(by_owner)})
    store.upsert(_pod(node="n1", owners=SHARED_OWNERS), prepared=True)
    by_node.calls = by_owner.calls = 0
    after = {"node": "n1", "owners": SHARED_OWNERS, **change}
    store.upsert(_pod(node=after["node"], owners=after["owners"], phase="Failed"), prepared=True)
    assert (by_node.calls, by_owner.calls) == (node_calls, owner_calls)


def test_an_undeclared_index_does_not_stop_the_others_skipping() -> None:
    """One index without declared reads runs on every update; a declared one still skips."""
    declared, undeclared = _Counting(), _Counting()
    store = Store(indexers={"declared": index_reads("spec.nodeName")(declared), "undeclared": undeclared})
    store.upsert(_pod(node="n1"), prepared=True)
    store.upsert(_pod(node="n1", phase="Failed"), prepared=True)
    assert (declared.calls, undeclared.calls) == (1, 3)


@pytest.mark.parametrize(
    "path",
    [pytest.param("", id="empty"), pytest.param("a.b.c", id="three-keys"),
     pytest.param("spec.", id="empty-key")],
)
def test_index_reads_rejects_bad_paths(path: str) -> None:
    """Only paths of one or two non-empty keys can be declared."""
    with pytest.raises(ValueError, match="one or two keys"):
        index_reads(path)


def test_controller_index_functions_declare_their_reads() -> None:
    """The controller's pod indexes and the built-in ones all declare what they read."""
    funcs: list[Callable[..., Any]] = [by_target_node, orphans_by_namespace, by_owner_uid, by_node_name]
    assert all(getattr(func, "__index_reads__", None) for func in funcs)
