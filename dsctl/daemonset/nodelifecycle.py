"""What the planners know about a node's life: is it healthy, and is it going away?

Two facts per node, read from the Node object alone (``node_facts``), the same for every
DaemonSet:

- **Unhealthy since**: the node's ``Ready`` condition is not True (False, Unknown, or never
  posted), since its ``lastTransitionTime`` (the node's creation when it never posted). A
  DaemonSet whose ``unhealthyNodePolicy`` is ``Skip`` leaves such a node out of its rolling
  update once it has been unhealthy for ``unhealthyNodeSeconds`` (``skipped_nodes``), unless the
  node's pod was already of the current revision when the node turned unhealthy: the new
  revision may be why, so that node counts as upstream counts it (``counts_when_unhealthy``).
- **Departing**: the node is going away, by one of the signals below. A departing node gets no
  new daemon pod and its failed pods are not replaced; its running pods are left alone, so an
  agent stays to the end (``dsctl.daemonset.manage``), and the rolling update leaves it out.

The departing signals, as the tools that send them write them (ADR 0101, ADR 0102):

- the kubelet's graceful node shutdown: ``Ready`` False, reason ``KubeletNotReady``, with
  ``node is shutting down`` among the aggregated errors of its message (the kubelet sets no
  taint);
- cluster-autoscaler's scale-down: the taint ``ToBeDeletedByClusterAutoscaler``;
- Karpenter's disruption: the taint ``karpenter.sh/disrupted``;
- a Node with a ``deletionTimestamp`` (held by a finalizer, Karpenter's
  ``karpenter.sh/termination`` for one).

A DaemonSet that tolerates every taint would otherwise put a pod on each of them, and re-create
the pods a shutting-down kubelet fails and rejects (kubernetes 122912). The reasons are
constants, so that ``dsctl plan`` and ``dsctl view`` can group nodes by them.

Pure; the handlers compare ``lifecycle_signature`` of two versions of a node to tell a change
of either fact from a heartbeat (ADR 0181, ADR 0182).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsctl.daemonset.template import is_pod_updated
from dsctl_api.objects import as_list, as_map, deletion_timestamp, is_map, meta, spec, status, text
from dsctl_api.timefmt import parse_rfc3339

__all__ = [
    "AUTOSCALER_TAINT",
    "DEPARTING_AUTOSCALER",
    "DEPARTING_DELETING",
    "DEPARTING_KARPENTER",
    "DEPARTING_REASONS",
    "DEPARTING_SHUTDOWN",
    "HEALTHY",
    "KARPENTER_TAINT",
    "SHUTTING_DOWN_MESSAGE",
    "SKIPPED_UNHEALTHY",
    "NodeFacts",
    "counts_when_unhealthy",
    "departing_reason",
    "lifecycle_signature",
    "node_facts",
    "skipped_message",
    "skipped_nodes",
    "skipped_on",
    "unhealthy_since",
]

Obj = Mapping[str, Any]

SHUTTING_DOWN_MESSAGE = "node is shutting down"
"""The kubelet's node shutdown manager's error, joined into the Ready condition's message."""
AUTOSCALER_TAINT = "ToBeDeletedByClusterAutoscaler"
KARPENTER_TAINT = "karpenter.sh/disrupted"

DEPARTING_SHUTDOWN = "NodeShutdown"
DEPARTING_AUTOSCALER = "ClusterAutoscalerScaleDown"
DEPARTING_KARPENTER = "KarpenterDisruption"
DEPARTING_DELETING = "NodeDeleting"
DEPARTING_REASONS = (DEPARTING_DELETING, DEPARTING_SHUTDOWN, DEPARTING_AUTOSCALER, DEPARTING_KARPENTER)
"""Why a node is departing, strongest first (a node may show several signals; the first wins)."""
SKIPPED_UNHEALTHY = "UnhealthyNode"
"""Why a node is left out of a rolling update under ``unhealthyNodePolicy: Skip``."""

_TAINT_REASONS = {AUTOSCALER_TAINT: DEPARTING_AUTOSCALER, KARPENTER_TAINT: DEPARTING_KARPENTER}


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """A node's lifecycle facts; see the module docstring."""

    unhealthy_since: float | None = None
    """When ``Ready`` stopped being True (wall-clock seconds); None while it is True."""
    departing: str | None = None
    """One of ``DEPARTING_REASONS``, or None."""


HEALTHY = NodeFacts()


def _ready(node: Obj) -> Mapping[str, Any] | None:
    for condition in as_list(status(node).get("conditions")):
        if is_map(condition) and condition.get("type") == "Ready":
            return as_map(condition)
    return None


def unhealthy_since(node: Obj) -> float | None:
    """When ``node``'s Ready condition stopped being True; None while it is True or cannot be dated.

    A node that never posted Ready is unhealthy since its creation.
    """
    ready = _ready(node)
    if ready is not None and ready.get("status") == "True":
        return None
    stamp = ready.get("lastTransitionTime") if ready is not None else None
    for value in (stamp, meta(node).get("creationTimestamp")):
        if value:
            try:
                return parse_rfc3339(text(value))
            except (ValueError, OverflowError):
                continue
    return None


def _shutting_down(node: Obj) -> bool:
    ready = _ready(node)
    if ready is None or ready.get("status") != "False":
        return False
    # The kubelet aggregates its errors: one alone is the message, several read "[a, b]", and a
    # soft-requirement warning may follow. The shutdown manager's error is a fixed phrase.
    return SHUTTING_DOWN_MESSAGE in text(ready.get("message"))


def departing_reason(node: Obj) -> str | None:
    """Why ``node`` is going away (one of ``DEPARTING_REASONS``), or None."""
    if deletion_timestamp(node):
        return DEPARTING_DELETING
    if _shutting_down(node):
        return DEPARTING_SHUTDOWN
    for taint in as_list(spec(node).get("taints")):
        if is_map(taint):
            reason = _TAINT_REASONS.get(text(taint.get("key")))
            if reason is not None:
                return reason
    return None


def node_facts(node: Obj | None) -> NodeFacts:
    """Both facts of ``node``; a node the cache does not know is ``HEALTHY``."""
    if node is None:
        return HEALTHY
    if type(node) is dict and _plainly_healthy(node):
        return HEALTHY
    since, departing = unhealthy_since(node), departing_reason(node)
    if since is None and departing is None:
        return HEALTHY
    return NodeFacts(unhealthy_since=since, departing=departing)


def _plainly_healthy(node: dict[str, Any]) -> bool:
    """The common case, read from plain dicts in one pass: Ready True, no taint, not deleted.

    Every planned node of every sync goes through here; anything else takes the full readers."""
    meta = node.get("metadata")
    if type(meta) is not dict or meta.get("deletionTimestamp"):
        return False
    spec_ = node.get("spec")
    if type(spec_) is dict and spec_.get("taints"):
        return False
    status_ = node.get("status")
    conditions = status_.get("conditions") if type(status_) is dict else None
    if type(conditions) is not list:
        return False
    for condition in conditions:
        if type(condition) is dict and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def lifecycle_signature(node: Obj) -> tuple[Any, ...]:
    """A digest of what ``node_facts`` reads: equal digests, equal facts. A heartbeat (which
    moves only ``lastHeartbeatTime``) leaves it as it was."""
    ready = _ready(node)
    state = (ready.get("status"), ready.get("lastTransitionTime")) if ready is not None else None
    return (state, departing_reason(node))


def counts_when_unhealthy(pods: Iterable[Obj], *, since: float, hash: str, generation: int | None) -> bool:
    """Whether a node unhealthy since ``since`` still counts in the rolling update: some live pod
    on it was of the current revision before it turned unhealthy (created then, or earlier).

    A pod whose creation cannot be dated counts, which holds the rollout rather than skipping.
    """
    for pod in pods:
        if deletion_timestamp(pod) or not is_pod_updated(pod, hash, generation):
            continue
        created = meta(pod).get("creationTimestamp")
        try:
            if parse_rfc3339(text(created)) <= since:
                return True
        except (ValueError, OverflowError):
            return True
    return False


def skipped_nodes(candidates: Mapping[str, float], *, seconds: int, now: float) -> tuple[frozenset[str], float | None]:
    """Of ``candidates`` (node -> unhealthy since), those unhealthy for ``seconds`` at ``now``, and
    the delay until the next one crosses the threshold (None when none will)."""
    skipped: set[str] = set()
    soonest: float | None = None
    for node, since in candidates.items():
        left = since + seconds - now
        if left <= 0:
            skipped.add(node)
        elif soonest is None or left < soonest:
            soonest = left
    return frozenset(skipped), soonest


def skipped_on(
    nodes: Mapping[str, Obj], pods_by_node: Mapping[str, Sequence[Obj]], *, should_run: Iterable[str], hash: str,
    generation: int | None, seconds: int, now: float,
) -> frozenset[str]:
    """The nodes ``unhealthyNodePolicy: Skip`` leaves out at ``now``, worked out from the objects
    (node name -> node; node name -> the DaemonSet's pods there), as the planner works it out from
    its node table: for a reader with no table, such as ``dsctl view``."""
    wanted = set(should_run)
    candidates: dict[str, float] = {}
    for node_name in wanted | set(pods_by_node):
        node = nodes.get(node_name)
        pods = [p for p in pods_by_node.get(node_name, ()) if is_map(p)]
        since = unhealthy_since(node) if node is not None else None
        if since is None or counts_when_unhealthy(pods, since=since, hash=hash, generation=generation):
            continue
        candidates[node_name] = since
    return skipped_nodes(candidates, seconds=seconds, now=now)[0]


def skipped_message(nodes: Sequence[str], *, seconds: int, shown: int = 10) -> str:
    """The message of ``RolloutSkippedNodes``: the count, and up to ``shown`` names."""
    names = ", ".join(sorted(nodes)[:shown])
    more = f" and {len(nodes) - shown} more" if len(nodes) > shown else ""
    noun = "node is" if len(nodes) == 1 else "nodes are"
    return (f"{len(nodes)} {noun} left out of the rolling update, not Ready for {seconds}s or more: "
            f"{names}{more}")
