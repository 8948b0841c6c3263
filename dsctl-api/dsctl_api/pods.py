"""Pod readiness, availability and controller references, as controllers judge them.

These run for every pod of every sync, so the common case (plain dicts and lists, as JSON
decodes) is tested with ``type(x) is dict`` first: ``isinstance`` against the ``Mapping`` ABC
costs ten times more. Any other mapping still passes the ``isinstance`` fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl_api.timefmt import parse_rfc3339

__all__ = [
    "controller_ref",
    "is_pod_available",
    "is_pod_ready",
    "is_terminal",
    "pod_ready_condition",
]


def pod_ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``Ready`` condition of a pod's status, or None."""
    status = pod.get("status")
    if type(status) is not dict and not isinstance(status, Mapping):
        return None
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return None
    for condition in conditions:
        if (type(condition) is dict or isinstance(condition, Mapping)) and condition.get("type") == "Ready":
            return condition
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's Ready condition is True."""
    condition = pod_ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int | float, now: float) -> bool:
    """Ready, and Ready for strictly longer than ``min_ready_seconds`` as of ``now``.

    A Ready condition without a parseable ``lastTransitionTime`` counts as available only
    when ``min_ready_seconds`` is 0.
    """
    condition = pod_ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return False
    if not min_ready_seconds or min_ready_seconds <= 0:
        return True
    try:
        since = parse_rfc3339(str(condition.get("lastTransitionTime") or ""))
    except ValueError:
        return False
    return since + float(min_ready_seconds) < now


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """Phase Succeeded or Failed: the pod will never run again."""
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase in ("Succeeded", "Failed")


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference marked ``controller: true``, or None."""
    meta = obj.get("metadata")
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return None
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if (type(ref) is dict or isinstance(ref, Mapping)) and ref.get("controller") is True:
            return ref
    return None
