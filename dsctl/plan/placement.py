"""Placement: which nodes gain the DaemonSet's pod, lose it, or keep theirs, and why.

*Before* is the pods the DaemonSet holds now (its own, and the orphans its first sync adopts);
*after* is where the dry run's syncs left them. The reason of each node is the planner's own
verdict (``eligibility.Fit.reason``), never judged again here:

- a node that loses its pod: the verdict under the new spec;
- a node that gains one: the verdict under the live spec (what kept it off until now), or
  "new DaemonSet";
- a node that keeps its pod: the verdict under the new spec (eligible, or a taint it keeps
  running under);
- a node that should run the pod and gets none (*withheld*): it is departing.

The node lifecycle comes first, because it is what the controller acts on: a departing node
(``nodelifecycle.departing_reason``, as the sync's node table holds it) keeps its running pod to
the end and gets no new one, whatever taint it carries; a node the rolling update skips as
unhealthy (``SyncPlan.skipped``, ``unhealthyNodePolicy: Skip``) keeps its old pod.

``REASONS`` turns a verdict's rule into words. A rule a planner adds shows up under its own
name until it gets a line there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dsctl.daemonset.eligibility import NODE_AFFINITY, NODE_NAME, NODE_SELECTOR, TAINT, Fit
from dsctl.daemonset.nodelifecycle import (
    AUTOSCALER_TAINT,
    DEPARTING_AUTOSCALER,
    DEPARTING_DELETING,
    DEPARTING_KARPENTER,
    DEPARTING_SHUTDOWN,
    KARPENTER_TAINT,
)

__all__ = ["CHANGES", "DEPARTING", "REASONS", "UNHEALTHY", "Group", "Placement", "group_placement", "reason_text"]

Change = Literal["gain", "lose", "keep", "withheld"]
CHANGES: tuple[Change, ...] = ("gain", "lose", "keep", "withheld")

DEPARTING = "departing"
"""The reason of a departing node: ``departing <NodeShutdown|ClusterAutoscalerScaleDown|...>``."""
UNHEALTHY = "unhealthy"
"""The reason of a node the rolling update skips as unhealthy (``unhealthyNodePolicy: Skip``)."""

REASONS: dict[str, str] = {
    "": "eligible",
    NODE_NAME: "the template's nodeName names another node",
    NODE_SELECTOR: "nodeSelector does not match the node's labels",
    NODE_AFFINITY: "required node affinity does not match the node",
    TAINT: "a taint the pod does not tolerate",
    DEPARTING: "the node is departing",
    UNHEALTHY: "skipped as unhealthy (unhealthyNodePolicy Skip: not Ready for unhealthyNodeSeconds)",
}
"""A verdict's rule (``Fit.reason`` up to its first space) in words."""

NEW_DAEMONSET = "new"
NO_POD = "missing"
NODE_GONE = "gone"
_OWN: dict[str, str] = {
    NEW_DAEMONSET: "new DaemonSet",
    NO_POD: "eligible, and holds no pod now",
    NODE_GONE: "the node is not in the cluster",
}


_DEPARTING_WORDS: dict[str, str] = {
    DEPARTING_SHUTDOWN: "the kubelet is shutting it down",
    DEPARTING_AUTOSCALER: f"cluster-autoscaler is removing it ({AUTOSCALER_TAINT})",
    DEPARTING_KARPENTER: f"Karpenter is disrupting it ({KARPENTER_TAINT})",
    DEPARTING_DELETING: "the Node is being deleted",
}


def reason_text(reason: str) -> str:
    """Words for a reason code with its detail (``taint gpu:NoSchedule``)."""
    if reason in _OWN:
        return _OWN[reason]
    rule, _, detail = reason.partition(" ")
    text = REASONS.get(rule, rule)
    if rule == DEPARTING:
        return f"{text}: {_DEPARTING_WORDS.get(detail, detail)}" if detail else text
    return f"{text} ({detail})" if detail else text


@dataclass(frozen=True, slots=True)
class Group:
    """Nodes with the same change and the same reason."""

    change: Change
    reason: str
    """The verdict's reason (``nodeSelector``, ``taint gpu:NoSchedule``...), the node's lifecycle
    (``departing NodeShutdown``, ``unhealthy``), ``new``, ``missing``, ``gone``, or "" (eligible)."""
    was: bool
    """The reason is the live spec's verdict (a gain: what kept the node off until now)."""
    nodes: tuple[str, ...]

    @property
    def text(self) -> str:
        """The reason in words, as the table prints it."""
        words = reason_text(self.reason)
        if self.was:
            return f"was excluded: {words}"
        if self.change == "withheld":
            return f"gets no pod although eligible: {words}"
        if self.change == "keep" and self.reason.startswith(DEPARTING):
            return f"keeps its pod to the end: {words}"
        if self.change == "keep" and self.reason == UNHEALTHY:
            return f"keeps its old pod: {words}"
        if self.change == "keep" and self.reason:
            return f"stays although {words} (a running pod may stay)"
        return words

    def to_json(self) -> dict[str, Any]:
        """The group in the plan document."""
        return {"reason": self.reason, "text": self.text, "count": len(self.nodes), "nodes": list(self.nodes)}


@dataclass(frozen=True, slots=True)
class Placement:
    """The groups of each change, largest first."""

    groups: tuple[Group, ...]

    def count(self, change: Change) -> int:
        """Nodes with this change."""
        return sum(len(g.nodes) for g in self.groups if g.change == change)

    def nodes(self, change: Change) -> set[str]:
        """The nodes with this change."""
        return {n for g in self.groups if g.change == change for n in g.nodes}

    def to_json(self) -> dict[str, Any]:
        """``{gain|lose|keep|withheld: {count, groups}}``."""
        return {change: {"count": self.count(change),
                         "groups": [g.to_json() for g in self.groups if g.change == change]}
                for change in CHANGES}


def group_placement(
    *,
    before: Iterable[str],
    after: Iterable[str],
    fit_now: Callable[[str], Fit | None],
    fit_before: Callable[[str], Fit | None] | None,
    departing: Mapping[str, str] | None = None,
    skipped: Collection[str] = (),
    withheld: Collection[str] = (),
) -> Placement:
    """Group the nodes by change and reason.

    ``before``/``after``: the nodes holding a pod now and once applied. ``fit_now(node)`` is the
    new spec's verdict (None: the node is not in the cluster); ``fit_before`` the live spec's,
    None for a new DaemonSet. ``departing`` (node -> ``nodelifecycle.DEPARTING_REASONS``) and
    ``withheld`` (departing nodes that should run the pod and hold none) come from the sync's
    node table, ``skipped`` from the sync's Skip result (the skipped nodes that hold an old pod).
    """
    had, has = set(before), set(after)
    leaving = departing or {}
    keyed: dict[tuple[Change, str, bool], list[str]] = {}
    for node in sorted(set(withheld) - has):
        keyed.setdefault(("withheld", f"{DEPARTING} {leaving.get(node, '')}".rstrip(), False), []).append(node)
    for node in sorted(had | has):
        if node in has and node not in had:
            change: Change = "gain"
            old = fit_before(node) if fit_before is not None else None
            if fit_before is None:
                key = (change, NEW_DAEMONSET, False)
            elif old is not None and not old.should_run:
                key = (change, old.reason, True)
            else:
                key = (change, NO_POD, False)
        else:
            change = "lose" if node not in has else "keep"
            fit = fit_now(node)
            if fit is None:
                reason = NODE_GONE
            elif change == "keep" and node in leaving:
                reason = f"{DEPARTING} {leaving[node]}"
            elif change == "keep" and node in skipped:
                reason = UNHEALTHY
            else:
                reason = "" if fit.should_run else fit.reason
            key = (change, reason, False)
        keyed.setdefault(key, []).append(node)
    groups = [Group(change=c, reason=r, was=w, nodes=tuple(nodes)) for (c, r, w), nodes in keyed.items()]
    groups.sort(key=lambda g: (CHANGES.index(g.change), -len(g.nodes), g.reason))
    return Placement(tuple(groups))


def holders(pods_by_node: Mapping[str, Iterable[Mapping[str, Any]]], live: Callable[[Mapping[str, Any]], bool]) \
        -> set[str]:
    """Nodes with at least one pod for which ``live`` holds."""
    return {node for node, pods in pods_by_node.items() if any(live(p) for p in pods)}
