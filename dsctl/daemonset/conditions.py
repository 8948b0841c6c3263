"""DaemonSet status conditions that dsctl maintains.

``apps/v1`` defines ``status.conditions`` but kube's controller sets none. dsctl sets
``Invalid`` while the spec cannot be reconciled (see ``validation``), and ``ReplicaFailure``
(as upstream's ReplicaSet controller does) while a write the DaemonSet needs is refused: a pod
create or delete, or a ControllerRevision write (reason ``FailedCreateRevision``...). So
``kubectl describe`` and alerting on ``.status.conditions`` show why nothing happens. Conditions are replaced by
type; ``lastTransitionTime`` changes only when ``status`` flips.

A status written with a condition always carries the four counters apps/v1's schema marks
required (``REQUIRED_COUNTERS``, 0 when not known yet): in CRD mode the schema is enforced on
status writes, and a status holding only a condition is refused with 422.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl_api.objects import as_list, as_map
from dsctl_api.timefmt import format_rfc3339

__all__ = ["REQUIRED_COUNTERS", "set_condition", "without_condition"]

REQUIRED_COUNTERS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")


def set_condition(
    status: Mapping[str, Any] | None, cond_type: str, *, reason: str, message: str, now: float
) -> dict[str, Any]:
    """``status`` with condition ``cond_type`` set to True; other conditions untouched.

    Missing required counters are set to 0, so the result passes the CRD's schema.
    """
    result = dict(as_map(status))
    for counter in REQUIRED_COUNTERS:
        result.setdefault(counter, 0)
    conditions = list(as_list(result.get("conditions")))
    transition = format_rfc3339(now)
    at = len(conditions)
    for index, condition in enumerate(conditions):
        current = as_map(condition)
        if current.get("type") == cond_type:
            if current.get("status") == "True":
                transition = str(current.get("lastTransitionTime") or transition)
            at = index
            break
    wanted = {"type": cond_type, "status": "True", "reason": reason, "message": message,
              "lastTransitionTime": transition}
    # In its place, so that setting a condition that is already there changes nothing.
    rest = [c for c in conditions[at + 1:] if as_map(c).get("type") != cond_type]
    result["conditions"] = [*conditions[:at], wanted, *rest]
    return result


def without_condition(status: Mapping[str, Any] | None, cond_type: str) -> dict[str, Any]:
    """``status`` without condition ``cond_type`` (and without an emptied ``conditions`` list)."""
    result = dict(as_map(status))
    kept = [c for c in as_list(result.get("conditions")) if as_map(c).get("type") != cond_type]
    if kept:
        result["conditions"] = kept
    else:
        result.pop("conditions", None)
    return result
