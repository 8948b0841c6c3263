"""The signals real clusters give for a node that is going away, as the tools that set them write them.

Nothing in the simulator sets these on its own; tests and the chaos suite put them on nodes,
through the ordinary API, the way cluster-autoscaler and Karpenter do (ADR 0102):

- **cluster-autoscaler** (``utils/taints``) taints a node it is about to delete with
  ``ToBeDeletedByClusterAutoscaler``, effect NoSchedule, value the Unix time in seconds as a
  decimal string, through a read-modify-write ``Update`` of the Node that it retries on
  conflict; it may also cordon the node. A node it merely considers is tainted
  ``DeletionCandidateOfClusterAutoscaler``, effect PreferNoSchedule, with the same value form.
- **Karpenter** (v1, ``pkg/apis/v1``) taints a node it disrupts with ``karpenter.sh/disrupted``,
  effect NoSchedule, no value, and keeps the finalizer ``karpenter.sh/termination`` on every
  node it manages, so that a deleted node stays (with ``deletionTimestamp``) until Karpenter
  has drained it and removes the finalizer.
- a **Node with a deletionTimestamp**: kube-apiserver removes a Node at once unless it carries
  finalizers (Nodes have no grace period: ``deletionGracePeriodSeconds`` is 0).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DELETION_CANDIDATE_TAINT",
    "KARPENTER_DISRUPTED_TAINT",
    "KARPENTER_TERMINATION_FINALIZER",
    "TO_BE_DELETED_TAINT",
    "deletion_candidate_taint",
    "karpenter_disrupted_taint",
    "to_be_deleted_taint",
]

TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
DELETION_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"
KARPENTER_DISRUPTED_TAINT = "karpenter.sh/disrupted"
KARPENTER_TERMINATION_FINALIZER = "karpenter.sh/termination"


def to_be_deleted_taint(now: float) -> dict[str, Any]:
    """cluster-autoscaler's taint on a node it is deleting, as of ``now`` (epoch seconds)."""
    return {"key": TO_BE_DELETED_TAINT, "value": str(int(now)), "effect": "NoSchedule"}


def deletion_candidate_taint(now: float) -> dict[str, Any]:
    """cluster-autoscaler's soft taint on a node it considers removing."""
    return {"key": DELETION_CANDIDATE_TAINT, "value": str(int(now)), "effect": "PreferNoSchedule"}


def karpenter_disrupted_taint() -> dict[str, Any]:
    """Karpenter's taint on a node it is disrupting (consolidation, drift, expiry, deletion)."""
    return {"key": KARPENTER_DISRUPTED_TAINT, "effect": "NoSchedule"}
