"""scheduling.k8s.io/v1 PriorityClasses: the two built-ins and the rules kube-apiserver enforces.

kube-apiserver creates ``system-node-critical`` (2000001000) and ``system-cluster-critical``
(2000000000) at start-up, refuses to delete them (403), reserves the ``system-`` prefix for
them, caps every other class at 1000000000 (``HighestUserDefinablePriority``) and makes
``value`` and ``preemptionPolicy`` immutable. The simulator does the same, so a client that
resolves ``priorityClassName`` sees what a real cluster would serve.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # storage imports this module, and the validation package imports storage's peers
    from dsctl_sim.validation.causes import Causes

__all__ = [
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "PRIORITY_CLASSES",
    "SYSTEM_PRIORITY_CLASSES",
    "system_class_delete_refusal",
    "validate_priority_class",
]

PRIORITY_CLASSES = "scheduling.k8s.io/priorityclasses"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
_PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")

SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-node-critical"},
     "value": 2_000_001_000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority",
     "description": "Used for system critical pods that must not be moved from their current node."},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-cluster-critical"},
     "value": 2_000_000_000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority",
     "description": "Used for system critical pods that must run in the cluster, but can be moved to another "
                    "node if necessary."},
)
_SYSTEM_VALUES = {pc["metadata"]["name"]: pc["value"] for pc in SYSTEM_PRIORITY_CLASSES}


def validate_priority_class(causes: Causes, pc: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """kube-apiserver's ValidatePriorityClass (and ...Update when ``old`` is given)."""
    name = str((pc.get("metadata") or {}).get("name") or "")
    value = pc.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        causes.required("value", "must be an integer")
        return
    if name.startswith("system-"):
        if _SYSTEM_VALUES.get(name) != value:
            causes.forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for "
                                              "system use only")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.forbidden("value", f"maximum allowed value of a user defined priority is "
                                  f"{HIGHEST_USER_DEFINABLE_PRIORITY}")
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        causes.not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES)
    if old is not None:
        if old.get("value") != value:
            causes.forbidden("value", "may not be changed in an update.")
        if policy is not None and old.get("preemptionPolicy") not in (None, policy):
            causes.immutable("preemptionPolicy", policy)


def system_class_delete_refusal(key: str, name: str) -> str | None:
    """The 403 message for deleting a built-in class, or None when the delete may go on."""
    if key == PRIORITY_CLASSES and name in _SYSTEM_VALUES:
        return (f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: '
                "this is a system priority class and cannot be deleted")
    return None
