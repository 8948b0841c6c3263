"""Risks: one line each, for what an operator should look at twice before applying.

- pods land on control-plane nodes (``node-role.kubernetes.io/control-plane``, by label or by
  a taint the pod tolerates);
- ``maxUnavailable`` is a quarter or more of the nodes that run the DaemonSet;
- an image with ``:latest`` or no tag (what the kubelet pulls changes under the same spec);
- a selector change: apps/v1 refuses it (``spec.selector`` is immutable); ``dsctl.io/v1``
  accepts it, and the pods the new selector misses are released, not deleted;
- a toleration of every taint (``operator: Exists`` without a key);
- the node readiness gate turned on or off (``NODE_READINESS_GATE_FIELD``: the CRD's
  ``spec.nodeReadinessGate`` or the apps/v1 annotation ``dsctl.io/node-readiness-gate``), read as
  the controller reads it (``extensions.gates_nodes``: an unreadable value gates);
- ``maxDisruptions`` removed: the controller deletes the PodDisruptionBudget it keeps;
- ``unhealthyNodePolicy`` changed: which nodes a rolling update waits for changes.

Settings are compared as the controller reads them (``dsctl.daemonset.extensions``), in both
places each can be set, so moving a setting from the annotation to the field is no risk.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from dsctl.daemonset.access import pod_spec
from dsctl.daemonset.extensions import (
    MAX_DISRUPTIONS_FIELD,
    NODE_READINESS_GATE_FIELD,
    UNHEALTHY_NODE_POLICY_FIELD,
    InvalidControl,
    gates_nodes,
    node_readiness_gate,
    rollout_controls,
    set_at,
)
from dsctl.daemonset.update import InvalidRollout, update_strategy_type, updated_desired_node_counts
from dsctl_api.defaults import pull_policy_for
from dsctl_api.objects import as_list, as_map, labels, spec

__all__ = ["CONTROL_PLANE", "risks"]

CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
_QUARTER = 4

Obj = Mapping[str, Any]


def _names(nodes: Iterable[str], limit: int = 3) -> str:
    shown = sorted(nodes)
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more


def _control_plane(node: Obj) -> bool:
    if CONTROL_PLANE in labels(node):
        return True
    return any(as_map(t).get("key") == CONTROL_PLANE for t in as_list(spec(node).get("taints")))


def _images(ds: Obj) -> Iterable[tuple[str, str]]:
    template_spec = pod_spec(ds)
    for field in ("initContainers", "containers"):
        for container in as_list(template_spec.get(field)):
            image = as_map(container).get("image")
            if isinstance(image, str) and image:
                yield str(as_map(container).get("name") or "?"), image


def _gate_words(ds: Obj) -> str:
    """Where the gate is set, and its value when the controller cannot read it."""
    where = set_at(ds, NODE_READINESS_GATE_FIELD) or NODE_READINESS_GATE_FIELD.crd_path
    try:
        node_readiness_gate(ds)
    except InvalidControl as exc:
        return f"{where}; {exc.message}, read as true until fixed"
    return where


def _policy(ds: Obj | None) -> str | None:
    """The effective ``unhealthyNodePolicy``; None when unreadable (the controller holds the rollout)."""
    if ds is None:
        return None
    try:
        return rollout_controls(ds).unhealthy_node_policy
    except InvalidControl:
        return None


def _lifecycle(add: Any, ds: Obj, live: Obj | None) -> None:
    """The readiness gate, the disruption budget and the unhealthy-node policy, each compared as the
    controller reads it."""
    before, after = live is not None and gates_nodes(live), gates_nodes(ds)
    if after and not before:
        add("readiness-gate", f"the node readiness gate is turned on ({_gate_words(ds)}): a node that carries "
                              "the readiness taint keeps it until this DaemonSet's pod there is available, so "
                              "ordinary pods wait for it")
    elif before and not after:
        add("readiness-gate", "the node readiness gate is turned off: the readiness taint no longer waits for "
                              "this DaemonSet's pod, and workloads may land before it is Ready")
    if live is not None:
        was = set_at(live, MAX_DISRUPTIONS_FIELD)
        if was is not None and set_at(ds, MAX_DISRUPTIONS_FIELD) is None:
            add("max-disruptions-removed", f"maxDisruptions is removed (was set at {was}): the controller deletes "
                                           "the PodDisruptionBudget it keeps, and evictions (drain, VPA) are no "
                                           "longer limited")
        old_policy, new_policy = _policy(live), _policy(ds)
        if old_policy is not None and new_policy is not None and old_policy != new_policy:
            where = set_at(ds, UNHEALTHY_NODE_POLICY_FIELD) or set_at(live, UNHEALTHY_NODE_POLICY_FIELD)
            what = ("nodes not Ready for unhealthyNodeSeconds are left out of the rolling update, and updated "
                    "when they recover" if new_policy == "Skip" else
                    "pods on nodes that are not Ready count against maxUnavailable again, so dead nodes can "
                    "stall the rolling update")
            add("unhealthy-node-policy", f"unhealthyNodePolicy changes from {old_policy} to {new_policy} ({where}): "
                                         f"{what}")


def risks(ds: Obj, live: Obj | None, *, custom: bool, nodes: Mapping[str, Obj], gained: Collection[str],
          should_run: Collection[str]) -> list[dict[str, str]]:
    """The risk lines of applying ``ds`` over ``live`` (None: a new DaemonSet)."""
    found: list[dict[str, str]] = []

    def add(risk: str, message: str) -> None:
        found.append({"id": risk, "message": message})

    landing = [n for n in gained if n in nodes and _control_plane(nodes[n])]
    if landing:
        add("control-plane", f"pods land on {len(landing)} control-plane node(s): {_names(landing)}")
    try:
        if update_strategy_type(ds) == "RollingUpdate" and should_run:
            limits = updated_desired_node_counts(ds, should_run)
            if limits.max_surge == 0 and limits.max_unavailable * _QUARTER >= limits.desired:
                share = round(100 * limits.max_unavailable / limits.desired)
                add("max-unavailable", f"maxUnavailable lets {limits.max_unavailable} of {limits.desired} nodes "
                                       f"({share} %) go without the pod at once (25 % or more)")
    except InvalidRollout:
        pass
    for container, image in _images(ds):
        if pull_policy_for(image) == "Always":
            why = "the :latest tag" if image.rsplit("/", 1)[-1].partition("@")[0].endswith(":latest") else "no tag"
            add("latest-image", f"container {container}: image {image} has {why}: what runs can change under "
                                "the same spec, and a rollback may not restore it")
    if live is not None and spec(live).get("selector") != spec(ds).get("selector"):
        if custom:
            add("selector-change", "spec.selector changes: pods the new selector does not match are released "
                                   "(left running, owned by nobody), not deleted")
        else:
            add("selector-change", "spec.selector changes: the API refuses it (spec.selector is immutable in "
                                   "apps/v1); delete and recreate the DaemonSet, or keep the selector")
    for toleration in as_list(pod_spec(ds).get("tolerations")):
        item = as_map(toleration)
        if item.get("operator") == "Exists" and not item.get("key"):
            effect = item.get("effect")
            scope = f"every {effect} taint" if effect else "every taint"
            add("tolerates-everything", f"a toleration (operator Exists, no key) tolerates {scope}: pods run on "
                                        "cordoned, draining and dedicated nodes alike")
    _lifecycle(add, ds, live)
    return found
