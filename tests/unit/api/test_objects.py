"""``dsctl_api.objects``: every reader gives the field when well formed and a neutral value otherwise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from dsctl_api import objects
from dsctl_api.objects import (
    annotations_of,
    as_int,
    as_list,
    as_map,
    deletion_timestamp,
    generation,
    is_map,
    labels,
    meta,
    name,
    namespace,
    resource_version,
    spec,
    status,
    text,
    uid,
)

FULL: dict[str, Any] = {
    "metadata": {
        "name": "agent", "namespace": "kube-system", "uid": "u-1", "resourceVersion": "42", "generation": 3,
        "labels": {"app": "agent"}, "annotations": {"a": "b"}, "deletionTimestamp": "2026-01-01T00:00:00Z",
    },
    "spec": {"selector": {}},
    "status": {"phase": "Running"},
}
"""An object with every field these readers know, each well formed."""

BROKEN: dict[str, Any] = {
    "metadata": {
        "name": 7, "namespace": ["x"], "uid": None, "resourceVersion": 42, "generation": True,
        "labels": ["app"], "annotations": "a=b", "deletionTimestamp": "",
    },
    "spec": "not-a-map",
    "status": None,
}
"""The same fields, each with a type JSON allows and the API does not: all read as absent."""


@pytest.mark.parametrize(("reader", "expected"), [
    pytest.param(name, "agent", id="name"),
    pytest.param(namespace, "kube-system", id="namespace"),
    pytest.param(uid, "u-1", id="uid"),
    pytest.param(resource_version, "42", id="resource-version"),
    pytest.param(generation, 3, id="generation"),
    pytest.param(labels, {"app": "agent"}, id="labels"),
    pytest.param(annotations_of, {"a": "b"}, id="annotations"),
    pytest.param(deletion_timestamp, True, id="deletion-timestamp"),
    pytest.param(spec, {"selector": {}}, id="spec"),
    pytest.param(status, {"phase": "Running"}, id="status"),
    pytest.param(meta, FULL["metadata"], id="meta"),
])
def test_reads_well_formed_fields(reader: Callable[[Any], Any], expected: Any) -> None:
    """A well-formed field is returned as it is (the object's own mapping, not a copy)."""
    assert reader(FULL) == expected


@pytest.mark.parametrize(("reader", "neutral"), [
    pytest.param(name, "", id="name"),
    pytest.param(namespace, "", id="namespace"),
    pytest.param(uid, "", id="uid"),
    pytest.param(resource_version, "", id="resource-version"),
    pytest.param(generation, 0, id="generation"),
    pytest.param(labels, {}, id="labels"),
    pytest.param(annotations_of, {}, id="annotations"),
    pytest.param(deletion_timestamp, False, id="deletion-timestamp"),
    pytest.param(spec, {}, id="spec"),
    pytest.param(status, {}, id="status"),
])
@pytest.mark.parametrize("obj", [
    pytest.param(BROKEN, id="wrong-types"),
    pytest.param({}, id="empty"),
    pytest.param({"metadata": None}, id="null-metadata"),
    pytest.param({"metadata": "x"}, id="string-metadata"),
    pytest.param(None, id="none"),
    pytest.param(["not", "an", "object"], id="list"),
])
def test_malformed_reads_as_absent(obj: Any, reader: Callable[[Any], Any], neutral: Any) -> None:
    """Any missing or mistyped field reads as the neutral value; no reader raises."""
    assert reader(obj) == neutral


@pytest.mark.parametrize("reader", [
    pytest.param(name, id="name"),
    pytest.param(uid, id="uid"),
    pytest.param(labels, id="labels"),
    pytest.param(spec, id="spec"),
    pytest.param(status, id="status"),
])
def test_other_mappings_are_read_too(reader: Callable[[Any], Any]) -> None:
    """A read-only mapping (not a dict) takes the slower path and reads the same."""
    frozen = MappingProxyType({k: MappingProxyType(v) for k, v in FULL.items()})
    assert reader(frozen) == reader(FULL)


def test_returned_mappings_are_the_objects_own() -> None:
    """No copy is made: the hot path returns the very dict inside the object."""
    assert meta(FULL) is FULL["metadata"]
    assert labels(FULL) is FULL["metadata"]["labels"]
    assert spec(FULL) is FULL["spec"]


@pytest.mark.parametrize(("value", "mapping", "listed", "string"), [
    pytest.param({"a": 1}, True, False, False, id="dict"),
    pytest.param(MappingProxyType({}), True, False, False, id="mapping-proxy"),
    pytest.param([1], False, True, False, id="list"),
    pytest.param((1,), False, False, False, id="tuple-is-no-list"),
    pytest.param("s", False, False, True, id="string"),
    pytest.param(None, False, False, False, id="none"),
])
def test_type_guards(value: Any, mapping: bool, listed: bool, string: bool) -> None:
    """is_map, as_map, as_list and text accept exactly their own JSON type."""
    assert is_map(value) is mapping
    assert (as_map(value) is value) is mapping
    assert isinstance(as_map(value), Mapping)
    assert (as_list(value) is value) is listed
    assert text(value) == (value if string else "")


@pytest.mark.parametrize(("value", "default", "expected"), [
    pytest.param(5, 0, 5, id="int"),
    pytest.param(-1, 0, -1, id="negative"),
    pytest.param(True, 0, 0, id="json-true-is-no-int"),
    pytest.param(1.5, 0, 0, id="float"),
    pytest.param("3", 0, 0, id="numeric-string"),
    pytest.param(None, 7, 7, id="custom-default"),
    pytest.param(None, None, None, id="none-default"),
])
def test_as_int(value: Any, default: int | None, expected: int | None) -> None:
    """Only a real integer passes; booleans, floats and strings give the default."""
    assert as_int(value, default) == expected


def test_public_surface() -> None:
    """The exported names are exactly the readers documented here."""
    assert sorted(objects.__all__) == sorted(
        n for n in dir(objects) if not n.startswith("_") and callable(getattr(objects, n))
        and getattr(getattr(objects, n), "__module__", "") == objects.__name__
    )
