"""Should a DaemonSet's pod run on a node? The two answers every other planner starts from.

``should_run``: a pod should be created there if none exists. ``should_continue_running``:
an existing pod may stay. They differ only for taints: an untolerated ``NoSchedule`` taint
stops new pods but leaves running ones alone, while an untolerated ``NoExecute`` taint
evicts as well.

The judgement is made for the pod we would create, so the automatic daemon tolerations are
included. Only placement rules the controller owns are checked: the template's
``nodeName``, ``nodeSelector``, required node affinity (every operator, ``matchFields``) and
taints. Resources, host ports, ``PreferNoSchedule`` taints, ``spec.unschedulable`` and node
conditions without a taint are deliberately ignored, as upstream does: the scheduler and
kubelet have the final word, and a daemon must not vanish from a cordoned node.

For one DaemonSet against thousands of nodes, build ``Eligibility.of(ds)`` once and call
``check`` per node; ``node_should_run`` is the one-shot form. ``extra`` names tolerations the
controller adds to every pod beyond upstream's (the readiness taint's, ``readinessgate``): the
verdict must be the one for the pod that is really created.

Each verdict names the rule that keeps a new pod off the node (``Fit.reason``): it explains
the decision, never makes it, and ``dsctl plan`` groups nodes by it. A rule added here gives
its verdicts a reason of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dsctl.daemonset.access import pod_spec
from dsctl.daemonset.tolerations import with_daemon_tolerations
from dsctl_api.nodeaffinity import required_node_affinity_matches, required_terms
from dsctl_api.objects import as_list, as_map, is_map, labels, name, spec, text
from dsctl_api.taints import find_untolerated

__all__ = [
    "NODE_AFFINITY",
    "NODE_NAME",
    "NODE_SELECTOR",
    "TAINT",
    "Eligibility",
    "Fit",
    "eligibility_signature",
    "evaluate_nodes",
    "node_should_run",
    "verdicts",
]

_BLOCKING = ("NoSchedule", "NoExecute")
_EVICTING = ("NoExecute",)


NODE_NAME = "nodeName"
"""The template's ``nodeName`` names another node."""
NODE_SELECTOR = "nodeSelector"
"""The node's labels fail the template's ``nodeSelector``."""
NODE_AFFINITY = "nodeAffinity"
"""The node fails the template's required node affinity."""
TAINT = "taint"
"""A ``NoSchedule`` or ``NoExecute`` taint the pod does not tolerate; the reason reads
``taint <key>[=<value>]:<effect>``, naming the first such taint."""


class Fit(NamedTuple):
    """The verdict for one node: ``should_run`` and ``should_continue_running`` decide.

    ``reason`` is why ``should_run`` is False (one of the rule names above, "" when the pod
    should run). It is for people and ``dsctl plan``; no planner reads it.
    """

    should_run: bool
    should_continue_running: bool
    reason: str = ""


NO = Fit(False, False)
YES = Fit(True, True)
_BY_NODE_NAME = Fit(False, False, NODE_NAME)
_BY_NODE_SELECTOR = Fit(False, False, NODE_SELECTOR)
_BY_NODE_AFFINITY = Fit(False, False, NODE_AFFINITY)


@dataclass(frozen=True, slots=True)
class Eligibility:
    """A DaemonSet's placement rules, extracted once so checking a node is cheap.

    Immutable; safe to share between syncs as long as the DaemonSet did not change.
    """

    template_node_name: str
    placement_spec: Mapping[str, Any]
    tolerations: tuple[Any, ...]
    placement_free: bool = field(init=False)
    """No ``nodeSelector`` and no required node affinity: every node passes that check, so
    ``check`` skips it (most DaemonSets, evaluated against every node of every sync)."""

    def __post_init__(self) -> None:
        free = not self.placement_spec.get("nodeSelector") and required_terms(self.placement_spec) is None
        object.__setattr__(self, "placement_free", free)

    @classmethod
    def of(cls, ds: Mapping[str, Any], *, extra: tuple[Mapping[str, Any], ...] = ()) -> Eligibility:
        """Extract the placement rules of ``ds``; malformed parts count as absent."""
        template_spec = pod_spec(ds)
        placement = {
            "nodeSelector": template_spec.get("nodeSelector"),
            "affinity": template_spec.get("affinity"),
        }
        return cls(
            template_node_name=text(template_spec.get("nodeName")),
            placement_spec=placement,
            tolerations=tuple(with_daemon_tolerations(template_spec, extra=extra)),
        )

    def check(self, node: Mapping[str, Any]) -> Fit:
        """``(should_run, should_continue_running)`` for ``node``."""
        node_name = name(node)
        if self.template_node_name and self.template_node_name != node_name:
            return _BY_NODE_NAME
        if not self.placement_free and not required_node_affinity_matches(self.placement_spec, as_map(node)):
            selector_only = {"nodeSelector": self.placement_spec.get("nodeSelector")}
            return _BY_NODE_SELECTOR if not required_node_affinity_matches(selector_only, as_map(node)) \
                else _BY_NODE_AFFINITY
        taints = [t for t in as_list(spec(node).get("taints")) if is_map(t)]
        if not taints:
            return YES
        blocking = find_untolerated(taints, self.tolerations, _BLOCKING)
        if blocking is None:
            return YES
        evicted = find_untolerated(taints, self.tolerations, _EVICTING) is not None
        return Fit(False, not evicted, _taint_reason(blocking))


def _taint_reason(taint: Mapping[str, Any]) -> str:
    key, value, effect = text(taint.get("key")), text(taint.get("value")), text(taint.get("effect"))
    return f"{TAINT} {key}={value}:{effect}" if value else f"{TAINT} {key}:{effect}"


def node_should_run(ds: Mapping[str, Any], node: Mapping[str, Any], *,
                    extra: tuple[Mapping[str, Any], ...] = ()) -> Fit:
    """``(should_run, should_continue_running)`` of ``ds`` on ``node``."""
    return Eligibility.of(ds, extra=extra).check(node)


def evaluate_nodes(ds: Mapping[str, Any], nodes: Iterable[Any]) -> dict[str, Fit]:
    """The verdict for every named node, keyed by node name (nameless entries are skipped)."""
    rules = Eligibility.of(ds)
    result: dict[str, Fit] = {}
    for node in nodes:
        node_name = name(node)
        if node_name:
            result[node_name] = rules.check(node)
    return result


def verdicts(
    ds: Mapping[str, Any], nodes: Iterable[Any], fits: Mapping[str, Fit] | None = None
) -> Iterator[tuple[str, Fit]]:
    """``(node name, verdict)`` for each named node once, in the order given.

    A verdict found in ``fits`` (computed earlier in the same sync) is reused; the others are
    evaluated here, building the DaemonSet's rules only if some node needs them.
    """
    rules: Eligibility | None = None
    seen: set[str] = set()
    for node in nodes:
        node_name = name(node)
        if not node_name or node_name in seen:
            continue
        seen.add(node_name)
        fit = fits.get(node_name) if fits is not None else None
        if fit is None:
            rules = rules or Eligibility.of(ds)
            fit = rules.check(node)
        yield node_name, fit


def _taint_identity(taint: Any) -> tuple[str, str, str]:
    item = as_map(taint)
    return (text(item.get("key")), text(item.get("value")), text(item.get("effect")))


def eligibility_signature(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """A hashable digest of everything about a node that eligibility can depend on.

    Equal signatures guarantee equal verdicts for every DaemonSet, so a node update whose
    signature did not change (a heartbeat, a status change) can be dropped without
    evaluating any DaemonSet. Taint order and ``timeAdded`` do not matter.
    """
    node_labels = tuple(sorted((str(k), str(v)) for k, v in labels(node).items()))
    taints = tuple(sorted(_taint_identity(t) for t in as_list(spec(node).get("taints"))))
    return (name(node), node_labels, taints)
