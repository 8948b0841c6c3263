"""The fake client behaves like an API server where the controller's tests rely on it."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube import errors
from dsctl.kube.resources import NODES, PODS

from .fakeclient import Call, FakeClient, merge_patch

POD: dict[str, Any] = {"metadata": {"generateName": "agent-", "labels": {"app": "agent"}}, "spec": {"x": 1}}


async def test_create_stamps_and_stores_a_copy() -> None:
    """create fills in name, uid and resourceVersion, stores the object, and answers with a copy."""
    fake = FakeClient()
    created = await fake.create(PODS, POD, namespace="ns")
    meta = created["metadata"]
    assert meta["name"].startswith("agent-") and meta["uid"] and meta["resourceVersion"]
    assert meta["namespace"] == "ns" and created["kind"] == "Pod"
    created["spec"]["x"] = 2
    assert (await fake.get(PODS, meta["name"], namespace="ns"))["spec"] == {"x": 1}
    assert fake.named(PODS, "ns") == [meta["name"]]


@pytest.mark.parametrize(("verb", "call"), [
    pytest.param("get", lambda f: f.get(PODS, "nope", namespace="ns"), id="get"),
    pytest.param("delete", lambda f: f.delete(PODS, "nope", namespace="ns"), id="delete"),
    pytest.param("patch", lambda f: f.patch(PODS, "nope", {"a": 1}, namespace="ns"), id="patch"),
    pytest.param("update", lambda f: f.update(PODS, {"metadata": {"name": "nope"}}, namespace="ns"), id="update"),
])
async def test_missing_objects_are_not_found(verb: str, call: Any) -> None:
    """Every verb that names an object answers NotFound when it does not exist, and records the call."""
    fake = FakeClient()
    with pytest.raises(errors.NotFound):
        await call(fake)
    assert fake.verbs() == [verb]


async def test_preconditions_and_optimistic_concurrency() -> None:
    """A delete for another UID and an update at a stale resourceVersion are refused with Conflict."""
    fake = FakeClient()
    pod = fake.put(PODS, {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}})
    with pytest.raises(errors.Conflict):
        await fake.delete(PODS, "p", namespace="ns", preconditions_uid="u0")
    with pytest.raises(errors.Conflict):
        await fake.update(PODS, {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "0"}})
    updated = await fake.update(PODS, {**pod, "spec": {"y": 2}})
    assert updated["spec"] == {"y": 2} and updated["metadata"]["uid"] == "u1"
    await fake.delete(PODS, "p", namespace="ns", preconditions_uid="u1")
    assert fake.named(PODS, "ns") == []


async def test_update_status_touches_only_status() -> None:
    """update_status replaces the status and leaves spec and labels as stored."""
    fake = FakeClient()
    fake.put(NODES, {"metadata": {"name": "n1", "labels": {"a": "b"}}, "spec": {"s": 1}})
    await fake.update_status(NODES, {"metadata": {"name": "n1", "labels": {}}, "spec": {}, "status": {"ok": True}})
    stored = fake.stored(NODES, "n1")
    assert stored is not None
    assert stored["status"] == {"ok": True} and stored["spec"] == {"s": 1}
    assert stored["metadata"]["labels"] == {"a": "b"}


async def test_list_filters_by_namespace_and_labels() -> None:
    """list answers the stored objects of one namespace that match a label selector."""
    fake = FakeClient()
    fake.put(PODS, {"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}}})
    fake.put(PODS, {"metadata": {"name": "b", "namespace": "ns", "labels": {"app": "y"}}})
    fake.put(PODS, {"metadata": {"name": "c", "namespace": "other", "labels": {"app": "x"}}})
    listed = await fake.list(PODS, namespace="ns", label_selector="app=x")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]


async def test_injected_failures_count_down_and_change_nothing() -> None:
    """A fault fails the next matching calls only, leaves the store alone, and is recorded like any call."""
    fake = FakeClient()
    denied = errors.Forbidden(403, "Forbidden", "no")
    fake.fail("create", PODS, denied, times=2, when=lambda call: call.namespace == "locked")
    for _ in range(2):
        with pytest.raises(errors.Forbidden):
            await fake.create(PODS, POD, namespace="locked")
    await fake.create(PODS, POD, namespace="open")
    await fake.create(PODS, POD, namespace="locked")
    assert fake.verbs(PODS) == ["create"] * 4
    assert len(fake.named(PODS, "locked")) == 1 and len(fake.named(PODS, "open")) == 1


async def test_permanent_failure() -> None:
    """times=None fails every matching call."""
    fake = FakeClient()
    fake.fail("get", NODES, errors.ServerError(500, "InternalError", "boom"), times=None)
    for _ in range(3):
        with pytest.raises(errors.ServerError):
            await fake.get(NODES, "n1")


def test_unknown_verb_is_refused() -> None:
    """A typo in a fault's verb fails loudly instead of never firing."""
    with pytest.raises(ValueError, match="unknown verb"):
        FakeClient().fail("craete", PODS, errors.NotFound(404, "NotFound", "x"))


async def test_calls_record_what_was_sent() -> None:
    """Each call keeps its verb, resource, namespace, name, body and options, in order."""
    fake = FakeClient()
    fake.put(PODS, {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}})
    await fake.patch(PODS, "p", {"metadata": {"labels": {"a": "b"}}}, namespace="ns")
    await fake.delete(PODS, "p", namespace="ns", preconditions_uid="u1", retry_server_errors=False)
    assert fake.calls == [
        Call("patch", "pods", "ns", "p", {"metadata": {"labels": {"a": "b"}}}, {"patch_type": "merge"}),
        Call("delete", "pods", "ns", "p", None, {"preconditions_uid": "u1", "retry_server_errors": False}),
    ]


@pytest.mark.parametrize(("target", "patch", "expected"), [
    pytest.param({"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}, id="nested-merge"),
    pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="null-removes"),
    pytest.param({"l": [1, 2]}, {"l": [3]}, {"l": [3]}, id="lists-replace"),
    pytest.param({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}, id="scalar-replaces-map"),
])
def test_merge_patch(target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]) -> None:
    """RFC 7386 semantics."""
    assert merge_patch(target, patch) == expected
