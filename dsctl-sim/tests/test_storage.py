"""Storage semantics, in process: the rules kube-apiserver applies to every write."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from dsctl_api.fields import parse_field_selector
from dsctl_api.labels import parse_selector
from dsctl_sim.errors import (
    NAMESPACE_TERMINATING,
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
)
from dsctl_sim.storage import Storage


class _Clock:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def _storage(**kw: Any) -> Storage:
    return Storage(now=_Clock(), rng=random.Random(1), **kw)


def _pod(
    name: str = "", *, node: str = "", labels: dict[str, str] | None = None, **meta: Any
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "labels": labels or {}, **meta}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "img"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def _ds(name: str, image: str = "img:1") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}},
    }


def test_create_fills_metadata() -> None:
    """Create sets uid, resourceVersion, creationTimestamp, generation and namespace."""
    s = _storage()
    ds = s.create("apps/daemonsets", _ds("x"), namespace="default")
    meta = ds["metadata"]
    assert meta["namespace"] == "default"
    assert meta["generation"] == 1
    assert meta["uid"] and meta["creationTimestamp"] == "2027-01-15T08:00:00Z"
    assert int(meta["resourceVersion"]) == s.resource_version
    assert ds["apiVersion"] == "apps/v1" and ds["kind"] == "DaemonSet"
    assert ds["status"]["numberReady"] == 0


def test_generate_name_and_conflicts() -> None:
    """generateName appends a 5-character suffix; a taken name is AlreadyExists; no name is Invalid."""
    s = _storage()
    pod = s.create("pods", _pod(generateName="ds-"), namespace="default")
    assert pod["metadata"]["name"].startswith("ds-") and len(pod["metadata"]["name"]) == 8
    s.create("pods", _pod("p"), namespace="default")
    with pytest.raises(AlreadyExists):
        s.create("pods", _pod("p"), namespace="default")
    with pytest.raises(Invalid):
        s.create("pods", _pod(""), namespace="default")
    with pytest.raises(NotFound):
        s.create("pods", _pod("q"), namespace="nope")


def test_update_conflict_and_generation() -> None:
    """A stale resourceVersion is a Conflict; a spec change bumps generation, a label change does not."""
    s = _storage()
    ds = s.create("apps/daemonsets", _ds("x"), namespace="default")
    stale = ds["metadata"]["resourceVersion"]
    changed = _ds("x", "img:2")
    changed["metadata"] = {**ds["metadata"]}
    out = s.update("apps/daemonsets", changed)
    assert out["metadata"]["generation"] == 2
    again = _ds("x", "img:3")
    again["metadata"] = {**ds["metadata"], "resourceVersion": stale}
    with pytest.raises(Conflict):
        s.update("apps/daemonsets", again)
    relabel = {**out, "metadata": {**out["metadata"], "labels": {"x": "y"}}}
    assert s.update("apps/daemonsets", relabel)["metadata"]["generation"] == 2


def test_spec_and_status_are_split() -> None:
    """A status update never changes spec; a main update never changes status."""
    s = _storage()
    ds = s.create("apps/daemonsets", _ds("x"), namespace="default")
    via_status = {**ds, "spec": {"bogus": True}, "status": {**ds["status"], "numberReady": 3}}
    out = s.update("apps/daemonsets", via_status, subresource="status")
    assert out["spec"] == ds["spec"] and out["status"]["numberReady"] == 3
    assert out["metadata"]["generation"] == 1
    via_main = {**out, "status": {"numberReady": 99}, "spec": _ds("x", "img:2")["spec"]}
    out2 = s.update("apps/daemonsets", via_main)
    assert out2["status"]["numberReady"] == 3 and out2["metadata"]["generation"] == 2


def test_noop_update_keeps_version() -> None:
    """An update that changes nothing returns the stored object without a new resourceVersion."""
    s = _storage()
    ds = s.create("apps/daemonsets", _ds("x"), namespace="default")
    rv = s.resource_version
    assert s.update("apps/daemonsets", dict(ds)) is ds
    assert s.resource_version == rv


def test_graceful_pod_delete() -> None:
    """A scheduled pod is marked for deletion; a zero-grace delete then removes it."""
    s = _storage()
    s.create("pods", _pod("p", node="n1"), namespace="default")
    marked = s.delete("pods", "default", "p")
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert s.get("pods", "default", "p") is not None
    s.delete("pods", "default", "p", grace_period_seconds=0)
    assert s.get("pods", "default", "p") is None


def test_unscheduled_pod_deletes_at_once() -> None:
    """A pod no kubelet runs has nothing to wait for and is removed immediately."""
    s = _storage()
    s.create("pods", _pod("p"), namespace="default")
    s.delete("pods", "default", "p")
    assert s.get("pods", "default", "p") is None


def test_finalizers_hold_deletion() -> None:
    """An object with finalizers stays with deletionTimestamp until an update empties them."""
    s = _storage()
    s.create("apps/controllerrevisions",
             {"metadata": {"name": "r", "finalizers": ["x/y"]}, "revision": 1}, namespace="default")
    held = s.delete("apps/controllerrevisions", "default", "r")
    assert held["metadata"]["deletionTimestamp"]
    cleared = {**held, "metadata": {**held["metadata"], "finalizers": []}}
    s.update("apps/controllerrevisions", cleared)
    assert s.get("apps/controllerrevisions", "default", "r") is None


def test_orphan_policy_adds_finalizer_only_with_dependents() -> None:
    """Orphan deletion of an owner with dependents adds the orphan finalizer for the GC loop."""
    s = _storage()
    ds = s.create("apps/daemonsets", _ds("x"), namespace="default")
    ref = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": ds["metadata"]["uid"],
           "controller": True}
    s.create("pods", _pod("p", ownerReferences=[ref]), namespace="default")
    assert s.dependents(ds["metadata"]["uid"]) == [("pods", "default", "p")]
    held = s.delete("apps/daemonsets", "default", "x", propagation_policy="Orphan")
    assert held["metadata"]["finalizers"] == ["orphan"]


def test_selectors_and_node_index() -> None:
    """Label and field selectors filter lists; spec.nodeName uses the index; unknown fields are 400."""
    s = _storage()
    for i in range(6):
        s.create("pods", _pod(f"p{i}", node=f"n{i % 2}", labels={"i": str(i)}), namespace="default")
    objs, _ = s.list("pods", field_selector=parse_field_selector("spec.nodeName=n1"))
    assert [o["metadata"]["name"] for o in objs] == ["p1", "p3", "p5"]
    objs, _ = s.list("pods", label_selector=parse_selector("i in (1,2)"),
                     field_selector=parse_field_selector("spec.nodeName!=n1"))
    assert [o["metadata"]["name"] for o in objs] == ["p2"]
    with pytest.raises(BadRequest):
        s.list("pods", field_selector=parse_field_selector("spec.bogus=1"))


async def test_watch_resume_and_gone() -> None:
    """A watch from an RV replays later events; after compaction the same RV is Gone."""
    s = _storage()
    s.create("pods", _pod("a"), namespace="default")
    rv = s.resource_version
    s.create("pods", _pod("b"), namespace="default")
    s.create("pods", _pod("c"), namespace="default")
    w = s.watch("pods", since_rv=rv)
    batch = await w.next_batch(0)
    assert [(e.type, e.object["metadata"]["name"]) for e in batch] == [("ADDED", "b"), ("ADDED", "c")]
    w.close()
    s.compact()
    with pytest.raises(Gone):
        s.watch("pods", since_rv=rv)


async def test_watch_selector_transitions() -> None:
    """An object leaving a watched selector arrives as DELETED, entering as ADDED."""
    s = _storage()
    pod = s.create("pods", _pod("a", labels={"x": "1"}), namespace="default")
    w = s.watch("pods", since_rv=None, label_selector=parse_selector("x=1"))
    out = s.update("pods", {**pod, "metadata": {**pod["metadata"], "labels": {"x": "2"}}})
    s.update("pods", {**out, "metadata": {**out["metadata"], "labels": {"x": "1"}}})
    batch = await w.next_batch(0)
    assert [e.type for e in batch] == ["DELETED", "ADDED"]
    w.close()


async def test_a_batch_says_when_its_oldest_change_was_queued() -> None:
    """The stream reports each batch's delivery delay from ``batch_queued_at``: set by the first
    change offered to an empty buffer, absent for a replay, which was never queued as a change."""
    s = _storage()
    s.create("pods", _pod("old"), namespace="default")
    w = s.watch("pods", since_rv=0)
    replay = await w.next_batch(0)
    assert [e.object["metadata"]["name"] for e in replay] == ["old"] and w.batch_queued_at is None
    before = time.monotonic()
    s.create("pods", _pod("a"), namespace="default")
    s.create("pods", _pod("b"), namespace="default")
    after = time.monotonic()
    batch = await w.next_batch(0)
    assert len(batch) == 2
    assert w.batch_queued_at is not None and before <= w.batch_queued_at <= after
    assert await w.next_batch(0) == [] and w.batch_queued_at is None
    w.close()


async def test_a_replay_left_in_the_buffer_is_not_timed_and_a_change_after_it_is() -> None:
    """A batch cut short by its limit leaves replayed events behind: the next batch is timed
    from the first change offered after them, not from when the first batch was drained."""
    s = _storage()
    for name in ("r1", "r2"):
        s.create("pods", _pod(name), namespace="default")
    w = s.watch("pods", since_rv=0)
    before = time.monotonic()
    s.create("pods", _pod("live"), namespace="default")
    after = time.monotonic()
    assert [e.object["metadata"]["name"] for e in await w.next_batch(0, limit=1)] == ["r1"]
    assert w.batch_queued_at is None
    assert [e.object["metadata"]["name"] for e in await w.next_batch(0)] == ["r2", "live"]
    assert w.batch_queued_at is not None and before <= w.batch_queued_at <= after
    w.close()


def test_history_bound_moves_floor() -> None:
    """Only history_size events per type are kept; older RVs become Gone."""
    s = _storage(history_size=3)
    first = s.resource_version
    for i in range(5):
        s.create("pods", _pod(f"p{i}"), namespace="default")
    with pytest.raises(Gone):
        s.watch("pods", since_rv=first)
    s.watch("pods", since_rv=s.resource_version - 3).close()


async def test_slow_watcher_is_cut_off() -> None:
    """A watcher whose buffer overflows is closed (and emptied) instead of growing without bound."""
    s = _storage()
    w = s.watch("pods", since_rv=None, max_buffer=3)
    for i in range(5):
        s.create("pods", _pod(f"p{i}"), namespace="default")
    assert w.closed and w.overflowed and w.pending() == 0
    assert w not in s.watchers("pods")


def test_namespace_delete_marks_it_terminating() -> None:
    """Deleting a namespace marks it Terminating and refuses creates in it with the cause
    clients look for; it is removed only once empty. The built-in namespaces cannot be deleted."""
    s = _storage()
    s.create("namespaces", {"metadata": {"name": "team"}})
    s.create("pods", _pod("p"), namespace="team")
    marked = s.delete("namespaces", None, "team")
    assert marked["status"]["phase"] == "Terminating" and marked["metadata"]["deletionTimestamp"]
    assert s.delete("namespaces", None, "team")["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    with pytest.raises(Forbidden) as refused:
        s.create("pods", _pod("q"), namespace="team")
    assert refused.value.details is not None
    assert [c["reason"] for c in refused.value.details["causes"]] == [NAMESPACE_TERMINATING]
    assert [key for key, _ in s.namespace_contents("team")] == ["pods"]
    with pytest.raises(Conflict):
        s.finalize_namespace("team")
    s.delete("pods", "team", "p", grace_period_seconds=0)
    s.finalize_namespace("team")
    assert s.get("namespaces", None, "team") is None
    with pytest.raises(Forbidden):
        s.delete("namespaces", None, "default")


async def test_subscribe_and_listeners_see_every_change() -> None:
    """subscribe() queues and add_listener() callbacks both receive each change, in order."""
    s = _storage()
    q = s.subscribe("pods")
    seen: list[str] = []
    remove = s.add_listener("pods", lambda ev: seen.append(ev.type))
    s.create("pods", _pod("p", node="n1"), namespace="default")
    s.delete("pods", "default", "p", grace_period_seconds=0)
    remove()
    s.create("pods", _pod("q"), namespace="default")
    assert seen == ["ADDED", "DELETED"]
    assert [q.get_nowait().type for _ in range(3)] == ["ADDED", "DELETED", "ADDED"]
    s.unsubscribe("pods", q)


def test_bind_sets_node_once() -> None:
    """bind() sets spec.nodeName with PodScheduled=True; a second bind or a wrong uid conflicts."""
    s = _storage()
    pod = s.create("pods", _pod("p"), namespace="default")
    with pytest.raises(Conflict):
        s.bind("default", "p", "n1", uid="other")
    bound = s.bind("default", "p", "n1", uid=pod["metadata"]["uid"])
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    with pytest.raises(Conflict):
        s.bind("default", "p", "n2")


def test_graceful_delete_only_shortens() -> None:
    """A second delete with a longer grace keeps the earlier deadline; a shorter one moves it."""
    s = _storage()
    s.create("pods", _pod("p", node="n1"), namespace="default")
    first = s.delete("pods", "default", "p", grace_period_seconds=10)
    again = s.delete("pods", "default", "p", grace_period_seconds=60)
    assert again is first
    shorter = s.delete("pods", "default", "p", grace_period_seconds=2)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 2


def test_pod_with_finalizer_waits_for_both() -> None:
    """A terminating pod with a finalizer is removed only after the kubelet's final delete and the finalizer."""
    s = _storage()
    s.create("pods", _pod("p", node="n1", finalizers=["x/y"]), namespace="default")
    s.delete("pods", "default", "p")
    held = s.delete("pods", "default", "p", grace_period_seconds=0)
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    cleared = {**held, "metadata": {**held["metadata"], "finalizers": []}}
    s.update("pods", cleared)
    assert s.get("pods", "default", "p") is None


def test_unregister_type_deletes_objects() -> None:
    """Unregistering a type deletes its objects with DELETED events and ends its watches."""
    from dsctl_sim.registry import ResourceType

    s = _storage()
    rt = ResourceType("x.dsctl.io", "v1", "Thing", "things", True, builtin=False)
    s.register_type(rt)
    s.create("x.dsctl.io/things", {"metadata": {"name": "t"}}, namespace="default")
    w = s.watch("x.dsctl.io/things", since_rv=None)
    s.unregister_type("x.dsctl.io/things")
    assert w.closed and "x.dsctl.io/things" not in s.registry
    with pytest.raises(NotFound):
        s.get("x.dsctl.io/things", "default", "t")


def test_daemonset_template_generation_annotation() -> None:
    """The server numbers template generations in deprecated.daemonset.template.generation."""
    s = _storage()
    ds = s.create("apps/daemonsets", _ds("x"), namespace="default")
    key = "deprecated.daemonset.template.generation"
    assert ds["metadata"]["annotations"][key] == "1"
    relabel = {**ds, "metadata": {**ds["metadata"], "labels": {"a": "b"}, "annotations": {key: "9"}}}
    same = s.update("apps/daemonsets", relabel)
    assert same["metadata"]["annotations"][key] == "1"
    new_image = {**same, "spec": _ds("x", "img:2")["spec"]}
    bumped = s.update("apps/daemonsets", new_image)
    assert bumped["metadata"]["annotations"][key] == "2" and bumped["metadata"]["generation"] == 2
    other = _ds("y")
    other["metadata"]["annotations"] = {key: "5"}
    assert s.create("apps/daemonsets", other, namespace="default")["metadata"]["annotations"][key] == "5"


async def test_compact_pods_decode_again_once_the_cache_lets_them_go() -> None:
    """A pod the decoded cache evicted reads, lists, filters and replays as it was stored."""
    st = _storage(decoded_cache_size=2)
    created = [st.create("pods", _pod(f"p{i}", node=f"n{i % 2}", labels={"i": str(i)}), namespace="default")
               for i in range(6)]
    cache = st.table("pods").cache
    assert cache is not None and len(cache) == 2
    assert [st.get("pods", "default", f"p{i}") for i in range(6)] == created
    listed, _ = st.list("pods", label_selector=parse_selector("i in (0,1)"))
    assert [p["metadata"]["name"] for p in listed] == ["p0", "p1"]
    by_node, _ = st.list("pods", field_selector=parse_field_selector("spec.nodeName=n0"))
    assert [p["metadata"]["name"] for p in by_node] == ["p0", "p2", "p4"]
    w = st.watch("pods", since_rv=int(created[0]["metadata"]["resourceVersion"]) - 1,
                 label_selector=parse_selector("i=0"))
    assert [e.object for e in await w.next_batch(0)] == [created[0]]
    w.close()


def test_an_evicted_pod_serves_the_bytes_it_was_written_as() -> None:
    """A pod's encoding is made once, when the version is written, and outlives its decoded object."""
    st = _storage(decoded_cache_size=1)
    pod = st.create("pods", _pod("p"), namespace="default")
    doc = st.get_doc("pods", "default", "p")
    assert doc is not None
    raw = doc.raw
    st.create("pods", _pod("q"), namespace="default")
    again = st.get_doc("pods", "default", "p")
    assert again is not None and again.raw is raw
    assert st.get("pods", "default", "p") == pod
