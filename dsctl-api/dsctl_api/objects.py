"""Defensive readers of the parts every Kubernetes object shares: ``metadata``, ``spec``, ``status``.

Objects arrive as plain JSON dicts, sometimes informer projections with fields stripped, and
the code that reads them must never raise on one that lacks a field or carries the wrong type
there: a malformed field reads as absent (an empty string, mapping or list, or a default).
Keeping that rule in one module means no caller writes ``(obj.get("metadata") or {}).get(...)``
by hand, and the few who would forget the ``or {}`` cannot.

These run for every object on every sync and in event handlers, so each tests for a plain
``dict`` (what JSON decodes to) with ``type(x) is dict`` before falling back to the much slower
``Mapping`` ABC check; the string readers of metadata inline that path, as they run most.
Returned mappings are the object's own: do not mutate them.

Readers of one kind's own fields (a DaemonSet's ``spec.updateStrategy``, a pod's phase) live
with the code that owns that kind, built on these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, overload

__all__ = [
    "annotations_of",
    "as_int",
    "as_list",
    "as_map",
    "deletion_timestamp",
    "generation",
    "is_map",
    "labels",
    "meta",
    "name",
    "namespace",
    "resource_version",
    "spec",
    "status",
    "text",
    "uid",
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
    if type(obj) is dict:  # inlined rather than shared with spec/status: one call less per read
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


def status(obj: Any) -> Mapping[str, Any]:
    """``obj.status`` or an empty mapping."""
    if type(obj) is dict:
        found = obj.get("status")
        if type(found) is dict:
            return found
    return as_map(as_map(obj).get("status"))


def name(obj: Any) -> str:
    """``metadata.name`` or ``""``."""
    if type(obj) is dict:
        found = obj.get("metadata")
        if type(found) is dict:
            value = found.get("name")
            if type(value) is str:
                return value
    value = meta(obj).get("name")
    return value if isinstance(value, str) else ""


def namespace(obj: Any) -> str:
    """``metadata.namespace`` or ``""`` (cluster-scoped objects have none)."""
    if type(obj) is dict:
        found = obj.get("metadata")
        if type(found) is dict:
            value = found.get("namespace")
            if type(value) is str:
                return value
    value = meta(obj).get("namespace")
    return value if isinstance(value, str) else ""


def uid(obj: Any) -> str:
    """``metadata.uid`` or ``""``."""
    if type(obj) is dict:
        found = obj.get("metadata")
        if type(found) is dict:
            value = found.get("uid")
            if type(value) is str:
                return value
    value = meta(obj).get("uid")
    return value if isinstance(value, str) else ""


def resource_version(obj: Any) -> str:
    """``metadata.resourceVersion`` or ``""``. Opaque: compare for equality only, never order."""
    if type(obj) is dict:
        found = obj.get("metadata")
        if type(found) is dict:
            value = found.get("resourceVersion")
            if type(value) is str:
                return value
    value = meta(obj).get("resourceVersion")
    return value if isinstance(value, str) else ""


def generation(obj: Any) -> int:
    """``metadata.generation`` or 0."""
    return as_int(meta(obj).get("generation"))


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
