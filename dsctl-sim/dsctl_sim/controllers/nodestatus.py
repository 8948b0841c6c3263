"""Pure builders for the node conditions the kubelet posts and the node lifecycle overrides.

Two writers own a Node's conditions in Kubernetes, and the simulator keeps their wording:

- the **kubelet** (``pkg/kubelet/nodestatus/setters.go``) posts ``MemoryPressure``,
  ``DiskPressure``, ``PIDPressure`` and, last, ``Ready``. Each post refreshes every
  condition's ``lastHeartbeatTime``; ``lastTransitionTime`` moves only when the status does.
  ``Ready`` is True with reason ``KubeletReady``, or False with reason ``KubeletNotReady``
  and the kubelet's errors joined as the message; the node shutdown manager's error, while a
  graceful shutdown runs, is ``node is shutting down``.
- the **node lifecycle controller** (kube-controller-manager, ``tryUpdateNodeHealth``), once
  no heartbeat has come for its grace period, sets ``Ready`` and the three pressure
  conditions (never ``NetworkUnavailable``) to Unknown: reason ``NodeStatusUnknown`` and
  message ``Kubelet stopped posting node status.`` for a condition the kubelet had posted
  (``lastHeartbeatTime`` kept, ``lastTransitionTime`` now), reason ``NodeStatusNeverUpdated``
  and message ``Kubelet never posted node status.`` for one it never posted
  (``lastHeartbeatTime`` the node's creation time).

Builders return a new conditions list and never modify the node they read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl_api.timefmt import format_rfc3339

__all__ = [
    "KUBELET_NOT_READY",
    "NEVER_POSTED_MESSAGE",
    "NEVER_UPDATED_REASON",
    "SHUTTING_DOWN_MESSAGE",
    "STOPPED_POSTING_MESSAGE",
    "UNKNOWN_REASON",
    "kubelet_conditions",
    "unknown_conditions",
]

KUBELET_NOT_READY = "KubeletNotReady"
SHUTTING_DOWN_MESSAGE = "node is shutting down"
UNKNOWN_REASON = "NodeStatusUnknown"
STOPPED_POSTING_MESSAGE = "Kubelet stopped posting node status."
NEVER_UPDATED_REASON = "NodeStatusNeverUpdated"
NEVER_POSTED_MESSAGE = "Kubelet never posted node status."

# (type, healthy status, reason, message) of the pressure conditions a healthy kubelet posts.
_PRESSURE = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
_MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def _conditions(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(c) for c in (node.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]


def _post(
    conditions: list[dict[str, Any]], kind: str, status: str, stamp: str, *,
    reason: str, message: str, always_reword: bool,
) -> None:
    """Post one condition as the kubelet's setter does, in place of the list."""
    for condition in conditions:
        if condition.get("type") != kind:
            continue
        condition["lastHeartbeatTime"] = stamp
        if condition.get("status") != status:
            condition.update(status=status, reason=reason, message=message, lastTransitionTime=stamp)
        elif always_reword:
            condition.update(reason=reason, message=message)
        return
    conditions.append({"type": kind, "status": status, "reason": reason, "message": message,
                       "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})


def kubelet_conditions(node: Mapping[str, Any], *, now: float, shutting_down: bool = False) -> list[dict[str, Any]]:
    """The conditions after one kubelet status post: healthy, or Ready False while shutting down."""
    stamp = format_rfc3339(now)
    conditions = _conditions(node)
    for kind, status, reason, message in _PRESSURE:
        _post(conditions, kind, status, stamp, reason=reason, message=message, always_reword=False)
    # Ready goes last: older control planes read the last condition as the Ready one.
    ready = [c for c in conditions if c.get("type") == "Ready"]
    conditions = [c for c in conditions if c.get("type") != "Ready"] + ready
    if shutting_down:
        _post(conditions, "Ready", "False", stamp, reason=KUBELET_NOT_READY, message=SHUTTING_DOWN_MESSAGE,
              always_reword=True)
    else:
        _post(conditions, "Ready", "True", stamp, reason="KubeletReady", message="kubelet is posting ready status",
              always_reword=True)
    return conditions


def unknown_conditions(node: Mapping[str, Any], *, now: float) -> list[dict[str, Any]] | None:
    """The conditions once the node lifecycle gives up on the kubelet; None when ``Ready`` is
    already Unknown (kube-controller-manager writes only when the Ready condition changes)."""
    stamp = format_rfc3339(now)
    created = (node.get("metadata") or {}).get("creationTimestamp") or stamp
    conditions = _conditions(node)
    before = next((dict(c) for c in conditions if c.get("type") == "Ready"), None)
    for kind in _MONITORED:
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None:
            conditions.append({"type": kind, "status": "Unknown", "reason": NEVER_UPDATED_REASON,
                               "message": NEVER_POSTED_MESSAGE, "lastHeartbeatTime": created,
                               "lastTransitionTime": stamp})
        elif current.get("status") != "Unknown":
            current.update(status="Unknown", reason=UNKNOWN_REASON, message=STOPPED_POSTING_MESSAGE,
                           lastTransitionTime=stamp)
    after = next(c for c in conditions if c.get("type") == "Ready")
    return None if after == before else conditions
