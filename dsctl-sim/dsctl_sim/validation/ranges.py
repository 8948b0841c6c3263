"""Integer fields and their Go types: what kube-apiserver refuses while decoding, before validation.

A built-in object is decoded into its Go struct, so a number that does not fit the field's
type (``revisionHistoryLimit: 1000000000000000`` in an ``int32``, a revision of 2^63 in an
``int64``), a fraction, or a string where an integer belongs never reaches validation: the
write fails with 400 BadRequest and encoding/json's message, wrapped the way the apiserver
wraps decode errors::

    DaemonSet in version "v1" cannot be handled as a DaemonSet: json: cannot unmarshal number
    1000000000000000 into Go struct field DaemonSetSpec.spec.revisionHistoryLimit of type int32

The field named is the innermost struct's Go name and the JSON path from the object's root
(list indexes omitted, as encoding/json reports them). ``decode_error(key, obj)`` returns
that text (without the wrapper) for the first such field, or None. The table lists the
integer fields of the served kinds that a controller or a user writes; unlisted integers are
not checked.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["INT_FIELDS", "decode_error"]

_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

# (path from a struct, the Go struct holding the last field, Go type); "[]" steps into list items.
_POD_SPEC: tuple[tuple[str, str, str], ...] = (
    ("terminationGracePeriodSeconds", "PodSpec", "int64"),
    ("activeDeadlineSeconds", "PodSpec", "int64"),
    ("priority", "PodSpec", "int32"),
    ("containers[].ports[].containerPort", "ContainerPort", "int32"),
    ("containers[].ports[].hostPort", "ContainerPort", "int32"),
    ("initContainers[].ports[].containerPort", "ContainerPort", "int32"),
    ("initContainers[].ports[].hostPort", "ContainerPort", "int32"),
    *(
        (f"containers[].{probe}.{field}", "Probe", "int32")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe")
        for field in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                      "failureThreshold")
    ),
)
_META: tuple[tuple[str, str, str], ...] = (
    ("metadata.generation", "ObjectMeta", "int64"),
    ("metadata.deletionGracePeriodSeconds", "ObjectMeta", "int64"),
)
_DAEMONSET_STATUS = tuple(
    (f"status.{name}", "DaemonSetStatus", "int32")
    for name in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                 "updatedNumberScheduled", "numberAvailable", "numberUnavailable", "collisionCount")
)

INT_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "apps/daemonsets": (
        *_META,
        ("spec.minReadySeconds", "DaemonSetSpec", "int32"),
        ("spec.revisionHistoryLimit", "DaemonSetSpec", "int32"),
        *((f"spec.template.spec.{p}", s, t) for p, s, t in _POD_SPEC),
        *_DAEMONSET_STATUS,
        ("status.observedGeneration", "DaemonSetStatus", "int64"),
    ),
    "apps/controllerrevisions": (*_META, ("revision", "ControllerRevision", "int64")),
    "pods": (*_META, *((f"spec.{p}", s, t) for p, s, t in _POD_SPEC)),
    "coordination.k8s.io/leases": (
        *_META,
        ("spec.leaseDurationSeconds", "LeaseSpec", "int32"),
        ("spec.leaseTransitions", "LeaseSpec", "int32"),
    ),
    "events": (*_META, ("count", "Event", "int32")),
}


def _values(obj: Any, steps: tuple[tuple[str, bool], ...], at: int = 0) -> Iterator[Any]:
    # Plain ``dict``/``list`` checks: bodies come from a JSON decoder, and this walk runs on every
    # write, where an ``isinstance(..., Mapping)`` check costs more than the rest of the step.
    for index in range(at, len(steps)):
        name, many = steps[index]
        if not isinstance(obj, dict):
            return
        value = obj.get(name)
        if value is None:
            return
        if many:
            if isinstance(value, list):
                for item in value:
                    yield from _values(item, steps, index + 1)
            return
        obj = value
    yield obj


def _compile(path: str) -> tuple[tuple[str, bool], ...]:
    return tuple((step.removesuffix("[]"), step.endswith("[]")) for step in path.split("."))


def _json_kind(value: Any) -> str:
    """How encoding/json names a JSON value in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return f"number {value}"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return f"number {int(value)}"
        return f"number {value!r}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_COMPILED: dict[str, tuple[tuple[str, tuple[tuple[str, bool], ...], str, str], ...]] = {
    key: tuple((path, _compile(path), struct, go_type) for path, struct, go_type in fields)
    for key, fields in INT_FIELDS.items()
}

_Trie = dict[str, tuple[bool, "_Trie", str | None]]
"""Field name -> (a list to step into, the fields below, the Go type when the field is a leaf)."""


def _trie(fields: tuple[tuple[str, str, str], ...]) -> _Trie:
    root: _Trie = {}
    for path, _, go_type in fields:
        node = root
        steps = _compile(path)
        for depth, (name, many) in enumerate(steps):
            leaf = go_type if depth == len(steps) - 1 else None
            _, children, known = node.get(name, (many, {}, None))
            node[name] = (many, children, leaf or known)
            node = children
    return root


_TRIES: dict[str, _Trie] = {key: _trie(fields) for key, fields in INT_FIELDS.items()}


def _all_fit(obj: dict[str, Any], trie: _Trie) -> bool:
    """Whether every listed integer under ``obj`` fits its type: one walk over the fields present."""
    for name, (many, children, go_type) in trie.items():
        value = obj.get(name)
        if value is None:
            continue
        if many:
            if not isinstance(value, list):
                continue
            items: list[Any] | tuple[Any] = value
        else:
            items = (value,)
        for item in items:
            if go_type is not None:
                low, high = _RANGES[go_type]
                if not (isinstance(item, int) and not isinstance(item, bool) and low <= item <= high):
                    return False
            if children and isinstance(item, dict) and not _all_fit(item, children):
                return False
    return True


def decode_error(key: str, obj: Mapping[str, Any]) -> str | None:
    """encoding/json's error for the first listed integer field ``obj`` cannot hold; None if all fit."""
    trie = _TRIES.get(key)
    if trie is None or (isinstance(obj, dict) and _all_fit(obj, trie)):
        return None
    # Something does not fit: name the first listed field that does not, in the table's order.
    for path, steps, struct, go_type in _COMPILED[key]:
        low, high = _RANGES[go_type]
        for value in _values(obj, steps):
            if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
                continue
            field = path.replace("[]", "")
            return f"json: cannot unmarshal {_json_kind(value)} into Go struct field {struct}.{field} of type {go_type}"
    return None
