"""Defensive readers for the few fields the domain planners look at.

Planners receive plain JSON dicts, sometimes projections with fields stripped, and must never
raise on an object that is missing a field or carries the wrong type there: a malformed
object is treated as if the field were absent. Every planner reads through these helpers so
that rule lives in one place.

They run several times per pod and node on every sync, so each tests for a plain ``dict``
(what JSON decodes to) before falling back to the much slower ``Mapping`` ABC check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

__all__ = [
    "annotations_of",
    "as_int",
    "as_list",
    "as_map",
    "bound_node",
    "deletion_timestamp",
    "is_map",
    "labels",
    "meta",
    "min_ready_seconds",
    "name",
    "namespace",
    "phase",
    "pod_spec",
    "spec",
    "template",
    "text",
    "uid",
    "update_strategy",
]

_EMPTY: Mapping[str, Any] = {}


def is_map(value: Any) -> bool:
    """Whether ``value`` is a mapping; plain dicts (the common case) skip the slow ABC check."""
    return type(value) is dict or isinstance(value, Mapping)


def as_map(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty mapping."""
    return value if type(value) is dict or isinstance(value, Mapping) else _EMPTY


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty list."""
    return value if type(value) is list or isinstance(value, list) else []


def text(value: Any) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


@overload
def as_int(value: Any, default: int = 0) -> int: ...
@overload
def as_int(value: Any, default: None) -> int | None: ...
def as_int(value: Any, default: int | None = 0) -> int | None:
    """``value`` if it is an integer (JSON ``true``/``false`` are not), else ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def meta(obj: Any) -> Mapping[str, Any]:
    """``obj.metadata`` or an empty mapping."""
    if type(obj) is dict:
        found = obj.get("metadata")
        if type(found) is dict:
            return found
    return as_map(as_map(obj).get("metadata"))


def spec(obj: Any) -> Mapping[str, Any]:
    """``obj.spec`` or an empty mapping."""
    if type(obj) is dict:
        found = obj.get("spec")
        if type(found) is dict:
            return found
    return as_map(as_map(obj).get("spec"))


def _status(obj: Any) -> Mapping[str, Any]:
    if type(obj) is dict:
        found = obj.get("status")
        if type(found) is dict:
            return found
    return as_map(as_map(obj).get("status"))


def name(obj: Any) -> str:
    """``metadata.name`` or ``""``."""
    value = meta(obj).get("name")
    return value if isinstance(value, str) else ""


def namespace(obj: Any) -> str:
    """``metadata.namespace`` or ``""``."""
    value = meta(obj).get("namespace")
    return value if isinstance(value, str) else ""


def uid(obj: Any) -> str:
    """``metadata.uid`` or ``""``."""
    value = meta(obj).get("uid")
    return value if isinstance(value, str) else ""


def labels(obj: Any) -> Mapping[str, Any]:
    """``metadata.labels`` or an empty mapping."""
    found = meta(obj).get("labels")
    return found if type(found) is dict else as_map(found)


def annotations_of(obj: Any) -> Mapping[str, Any]:
    """``metadata.annotations`` or an empty mapping."""
    return as_map(meta(obj).get("annotations"))


def deletion_timestamp(obj: Any) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set (the object is being deleted)."""
    return bool(meta(obj).get("deletionTimestamp"))


def phase(pod: Any) -> str:
    """``status.phase`` of a pod, or ``""``."""
    value = _status(pod).get("phase")
    return value if isinstance(value, str) else ""


def bound_node(pod: Any) -> str:
    """``spec.nodeName`` of a pod (the node it is bound to), or ``""``."""
    value = spec(pod).get("nodeName")
    return value if isinstance(value, str) else ""


def template(ds: Any) -> Mapping[str, Any]:
    """``spec.template`` of a DaemonSet, or an empty mapping."""
    return as_map(spec(ds).get("template"))


def pod_spec(ds: Any) -> Mapping[str, Any]:
    """``spec.template.spec`` of a DaemonSet, or an empty mapping."""
    return as_map(template(ds).get("spec"))


def update_strategy(ds: Any) -> Mapping[str, Any]:
    """``spec.updateStrategy`` of a DaemonSet, or an empty mapping."""
    return as_map(spec(ds).get("updateStrategy"))


def min_ready_seconds(ds: Any) -> int:
    """``spec.minReadySeconds`` of a DaemonSet as a non-negative int; anything malformed is 0."""
    return max(0, as_int(spec(ds).get("minReadySeconds")))
