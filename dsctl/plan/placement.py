"""Placement: which nodes gain the DaemonSet's pod, lose it, or keep theirs, and why.

*Before* is the pods the DaemonSet holds now (its own, and the orphans its first sync adopts);
*after* is where the dry run's syncs left them. The reason of each node is the planner's own
verdict (``eligibility.Fit.reason``), never judged again here:

- a node that loses its pod: the verdict under the new spec;
- a node that gains one: the verdict under the live spec (what kept it off until now), or
  "new DaemonSet";
- a node that keeps its pod: the verdict under the new spec (eligible, or a taint it keeps
  running under).

``REASONS`` turns a verdict's rule into words. A rule a planner adds shows up under its own
name until it gets a line there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dsctl.daemonset.eligibility import NODE_AFFINITY, NODE_NAME, NODE_SELECTOR, TAINT, Fit

__all__ = ["CHANGES", "REASONS", "Group", "Placement", "group_placement", "reason_text"]

Change = Literal["gain", "lose", "keep"]
CHANGES: tuple[Change, ...] = ("gain", "lose", "keep")

REASONS: dict[str, str] = {
    "": "eligible",
    NODE_NAME: "the template's nodeName names another node",
    NODE_SELECTOR: "nodeSelector does not match the node's labels",
    NODE_AFFINITY: "required node affinity does not match the node",
    TAINT: "a taint the pod does not tolerate",
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


def reason_text(reason: str) -> str:
    """Words for a reason code with its detail (``taint gpu:NoSchedule``)."""
    if reason in _OWN:
        return _OWN[reason]
    rule, _, detail = reason.partition(" ")
    text = REASONS.get(rule, rule)
    return f"{text} ({detail})" if detail else text


@dataclass(frozen=True, slots=True)
class Group:
    """Nodes with the same change and the same reason."""

    change: Change
    reason: str
    """The verdict's reason (``nodeSelector``, ``taint gpu:NoSchedule``...), ``new``, ``missing``,
    ``gone``, or "" (eligible)."""
    was: bool
    """The reason is the live spec's verdict (a gain: what kept the node off until now)."""
    nodes: tuple[str, ...]

    @property
    def text(self) -> str:
        """The reason in words, as the table prints it."""
        words = reason_text(self.reason)
        if self.was:
            return f"was excluded: {words}"
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
        """``{gain|lose|keep: {count, groups}}``."""
        return {change: {"count": self.count(change),
                         "groups": [g.to_json() for g in self.groups if g.change == change]}
                for change in CHANGES}


def group_placement(
    *,
    before: Iterable[str],
    after: Iterable[str],
    fit_now: Callable[[str], Fit | None],
    fit_before: Callable[[str], Fit | None] | None,
) -> Placement:
    """Group the nodes by change and reason.

    ``before``/``after``: the nodes holding a pod now and once applied. ``fit_now(node)`` is the
    new spec's verdict (None: the node is not in the cluster); ``fit_before`` the live spec's,
    None for a new DaemonSet.
    """
    had, has = set(before), set(after)
    keyed: dict[tuple[Change, str, bool], list[str]] = {}
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
            reason = NODE_GONE if fit is None else ("" if fit.should_run else fit.reason)
            key = (change, reason, False)
        keyed.setdefault(key, []).append(node)
    groups = [Group(change=c, reason=r, was=w, nodes=tuple(nodes)) for (c, r, w), nodes in keyed.items()]
    groups.sort(key=lambda g: (CHANGES.index(g.change), -len(g.nodes), g.reason))
    return Placement(tuple(groups))


def holders(pods_by_node: Mapping[str, Iterable[Mapping[str, Any]]], live: Callable[[Mapping[str, Any]], bool]) \
        -> set[str]:
    """Nodes with at least one pod for which ``live`` holds."""
    return {node for node, pods in pods_by_node.items() if any(live(p) for p in pods)}
