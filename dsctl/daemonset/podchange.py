"""Which pod updates can change what a sync decides.

Kubelets update a pod's status far more often than anything a DaemonSet controller reads
changes: container states, restart counts, IPs, probe times, and the Pending → Running step.
Upstream syncs the owner on every one of them, and every sync walks all of the DaemonSet's
nodes and pods. ``planning_view`` reduces a pod to what the planners can depend on, so the
pod handler can drop an update whose view did not change, as the node handler drops
heartbeats by ``eligibility_signature``.

The planners read (``manage``, ``update``, ``status``, ``podsort``, ``ownership``, ``history``):

- metadata except ``resourceVersion``: name, uid, labels (selector, revision hash, template
  generation), ownerReferences, creation and deletion timestamps, annotations;
- spec: ``nodeName`` (bound first, stranded pods) and the node affinity (the target node);
- status: only whether the phase is terminal (``Failed``, ``Succeeded``) and the Ready
  condition, whose transition time matters only while it is True (availability counts
  ``minReadySeconds`` from it); and, only for a pod carrying an in-place update record
  (``dsctl.daemonset.inplace``), its containers' restart counts, which end that update.
  Other pods' restarts (a crash loop) stay filtered out.

Everything else in metadata and spec is kept as is, so the view errs on the side of a sync.
Assumption: any field a planner starts reading must be reflected here; the table in
``tests/unit/daemonset/test_podchange.py`` pins the current list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl.daemonset.access import phase
from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
from dsctl_api.objects import annotations_of, as_list, as_map, meta, spec
from dsctl_api.pods import is_terminal, pod_ready_condition

__all__ = ["planning_view", "same_for_planning"]


def planning_view(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of ``pod`` the planners can depend on; equal views plan alike."""
    metadata = {k: v for k, v in meta(pod).items() if k != "resourceVersion"}
    condition = as_map(pod_ready_condition(pod))
    ready = condition.get("status") == "True"
    since = condition.get("lastTransitionTime") if ready else None
    restarts = _restarts(pod) if IN_PLACE_ANNOTATION in annotations_of(pod) else None
    return (metadata, spec(pod), _terminal_phase(pod), ready, since, restarts)


_NO_VERSION = {"resourceVersion": None}


def same_for_planning(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update from ``old`` to ``new`` cannot change any plan or status.

    Exactly ``planning_view(old) == planning_view(new)``, decided without building either view
    and stopping at the first difference: the pod handler asks it for every pod update.
    """
    old_meta, new_meta = meta(old), meta(new)
    if old_meta is not new_meta and {**old_meta, **_NO_VERSION} != {**new_meta, **_NO_VERSION}:
        return False
    if spec(old) != spec(new):
        return False
    old_ready, new_ready = as_map(pod_ready_condition(old)), as_map(pod_ready_condition(new))
    ready = new_ready.get("status") == "True"
    if (old_ready.get("status") == "True") != ready:
        return False
    if ready and old_ready.get("lastTransitionTime") != new_ready.get("lastTransitionTime"):
        return False
    if (is_terminal(old) or is_terminal(new)) and _terminal_phase(old) != _terminal_phase(new):
        return False
    # The metadata are equal here, so both carry the in-place record or neither does.
    return IN_PLACE_ANNOTATION not in annotations_of(new) or _restarts(old) == _restarts(new)


def _terminal_phase(pod: Mapping[str, Any]) -> str:
    return phase(pod) if is_terminal(pod) else ""


def _restarts(pod: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    return [
        (as_map(s).get("name"), as_map(s).get("restartCount"))
        for s in as_list(as_map(pod.get("status")).get("containerStatuses"))
    ]
