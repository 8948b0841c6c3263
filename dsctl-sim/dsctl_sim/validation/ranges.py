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


def _values(obj: Any, steps: list[str]) -> Iterator[Any]:
    if not steps:
        yield obj
        return
    step, rest = steps[0], steps[1:]
    many = step.endswith("[]")
    name = step[:-2] if many else step
    if not isinstance(obj, Mapping) or obj.get(name) is None:
        return
    value = obj[name]
    if many:
        for item in value if isinstance(value, list) else ():
            yield from _values(item, rest)
    else:
        yield from _values(value, rest)


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


def decode_error(key: str, obj: Mapping[str, Any]) -> str | None:
    """encoding/json's error for the first listed integer field ``obj`` cannot hold; None if all fit."""
    for path, struct, go_type in INT_FIELDS.get(key, ()):
        low, high = _RANGES[go_type]
        for value in _values(obj, path.split(".")):
            if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
                continue
            field = path.replace("[]", "")
            return f"json: cannot unmarshal {_json_kind(value)} into Go struct field {struct}.{field} of type {go_type}"
    return None
