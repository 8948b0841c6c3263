"""The kubelet's graceful node shutdown, as pure data: the plan, and the pod statuses it writes.

Follows ``pkg/kubelet/nodeshutdown`` (see ADR 0101):

- The kubelet settings ``shutdownGracePeriod`` and ``shutdownGracePeriodCriticalPods`` become
  two priority groups, killed one after the other: pods below the system-critical priority
  (2000000000) get ``shutdownGracePeriod - shutdownGracePeriodCriticalPods`` seconds, then
  critical pods get ``shutdownGracePeriodCriticalPods``. A critical period longer than the
  whole turns the feature off, and so does a zero period (the node just powers off).
- A pod is killed with the group's period, or its own ``terminationGracePeriodSeconds`` when
  that is shorter. It is not deleted: its status becomes phase Failed (Succeeded stays
  Succeeded), reason ``Terminated``, message ``Pod was terminated in response to imminent
  node shutdown.``, with the condition ``DisruptionTarget`` True, reason
  ``TerminationByKubelet``, carrying the same message.
- While the shutdown runs the kubelet admits no pod: a new pod gets phase Failed, reason
  ``NodeShutdown`` and message ``Pod was rejected: Pod was rejected as the node is shutting
  down.``, and loses the conditions the kubelet owns (it never ran).
- An empty group is skipped at once; a group ends when its last pod is killed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers.podstatus import failed_status

__all__ = [
    "DEFAULT_CRITICAL_GRACE_SECONDS",
    "DEFAULT_GRACE_SECONDS",
    "REJECTED_MESSAGE",
    "REJECTED_REASON",
    "SYSTEM_CRITICAL_PRIORITY",
    "TERMINATED_MESSAGE",
    "TERMINATED_REASON",
    "ShutdownGroup",
    "kill_seconds",
    "plan_groups",
    "rejected_status",
    "terminated_status",
]

DEFAULT_GRACE_SECONDS = 3.0
"""The simulator's ``shutdownGracePeriod`` when a shutdown names none (the kubelet's is 0: off)."""
DEFAULT_CRITICAL_GRACE_SECONDS = 1.0
"""The simulator's ``shutdownGracePeriodCriticalPods`` when a shutdown names none."""
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
TERMINATED_REASON = "Terminated"
TERMINATED_MESSAGE = "Pod was terminated in response to imminent node shutdown."
REJECTED_REASON = "NodeShutdown"
REJECTED_MESSAGE = "Pod was rejected: Pod was rejected as the node is shutting down."
DISRUPTION_REASON = "TerminationByKubelet"
# Conditions the kubelet owns (pkg/kubelet/types PodConditionsByKubelet): a rejected pod's
# status is built afresh, so these are dropped; others (DisruptionTarget...) are kept.
_KUBELET_CONDITIONS = frozenset({
    "PodScheduled", "Ready", "Initialized", "ContainersReady", "PodReadyToStartContainers",
})


@dataclass(frozen=True, slots=True)
class ShutdownGroup:
    """Pods whose priority is at least ``priority`` (and below the next group's) get ``seconds``."""

    priority: int
    seconds: float


def plan_groups(grace_seconds: float, critical_seconds: float) -> list[ShutdownGroup]:
    """The kubelet's priority groups for these settings; empty when graceful shutdown is off."""
    if not grace_seconds > 0 or critical_seconds < 0 or critical_seconds > grace_seconds:
        return []
    return [ShutdownGroup(0, grace_seconds - critical_seconds), ShutdownGroup(SYSTEM_CRITICAL_PRIORITY,
                                                                              critical_seconds)]


def group_index(groups: list[ShutdownGroup], pod: Mapping[str, Any]) -> int:
    """Which group kills ``pod``: the last whose priority is not above the pod's (the first for
    pods below every group's priority)."""
    raw = (pod.get("spec") or {}).get("priority")
    priority = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
    index = 0
    for position, group in enumerate(groups):
        if group.priority <= priority:
            index = position
    return index


def kill_seconds(group: ShutdownGroup, pod: Mapping[str, Any]) -> float:
    """The grace a pod is killed with: the group's, or the pod's own when that is shorter."""
    own = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    if isinstance(own, (int, float)) and not isinstance(own, bool) and math.isfinite(own) and own <= group.seconds:
        return max(0.0, float(own))
    return group.seconds


def terminated_status(pod: Mapping[str, Any], *, now: float) -> dict[str, Any]:
    """The status of a pod the shutdown manager killed."""
    old_phase = (pod.get("status") or {}).get("phase")
    status = failed_status(pod, now=now)
    if old_phase == "Succeeded":
        status["phase"] = "Succeeded"
    status["reason"] = TERMINATED_REASON
    status["message"] = TERMINATED_MESSAGE
    stamp = format_rfc3339(now)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
    previous = next((c for c in status.get("conditions") or [] if c.get("type") == "DisruptionTarget"), None)
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == "True" else None
    conditions.append({"type": "DisruptionTarget", "status": "True", "reason": DISRUPTION_REASON,
                       "message": TERMINATED_MESSAGE, "lastProbeTime": None,
                       "lastTransitionTime": since or stamp})
    status["conditions"] = conditions
    return status


def rejected_status(pod: Mapping[str, Any], *, now: float) -> dict[str, Any]:
    """The status of a pod the kubelet refused to admit because the node is shutting down."""
    old = pod.get("status") or {}
    status: dict[str, Any] = {
        "phase": "Failed",
        "reason": REJECTED_REASON,
        "message": REJECTED_MESSAGE,
        "startTime": old.get("startTime") or format_rfc3339(now),
    }
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    kept = [c for c in old.get("conditions") or [] if isinstance(c, Mapping)
            and c.get("type") not in _KUBELET_CONDITIONS]
    if kept:
        status["conditions"] = [dict(c) for c in kept]
    return status
