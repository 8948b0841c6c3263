"""Readers of the DaemonSet and pod fields the domain planners look at.

Planners receive plain JSON dicts, sometimes projections with fields stripped, and must never
raise on an object that is missing a field or carries the wrong type there: a malformed
object is treated as if the field were absent. The readers of what every object shares
(metadata, ``spec``, ``status``, and the type guards) are in ``dsctl_api.objects``; this
module adds the few that belong to one kind, built on them.

They run several times per pod and node on every sync, so each tests for a plain ``dict``
(what JSON decodes to) before falling back to the much slower ``Mapping`` ABC check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl_api.objects import as_int, as_map, spec, status

__all__ = [
    "bound_node",
    "min_ready_seconds",
    "phase",
    "pod_spec",
    "template",
    "update_strategy",
]


def phase(pod: Any) -> str:
    """``status.phase`` of a pod, or ``""``."""
    value = status(pod).get("phase")
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
