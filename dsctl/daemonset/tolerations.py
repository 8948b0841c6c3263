"""The tolerations every daemon pod gets, whatever its template says.

A daemon pod must keep running through the node conditions that the node lifecycle
controller and the kubelet turn into taints (not-ready, unreachable, resource pressure,
cordoning), because the daemon is often what fixes the node. These tolerations are added to
both the pod we create and the virtual pod used to judge eligibility, so a node is never
judged ineligible for a taint the real pod would tolerate.

The controller may add more of its own (``extra``): the readiness taint of the node readiness
gate (``dsctl.daemonset.readinessgate``) is one, so agents start on a node that still carries
it. They are added like the others, to the pod at creation and never to the template, so the
revision hash, computed over the template alone, does not depend on them (upstream adds its
tolerations the same way).

Add-or-replace semantics: a template toleration with the same key, operator, value and
effect is replaced by ours (dropping, for example, a ``tolerationSeconds`` the user set);
every other template toleration is kept in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dsctl_api.objects import as_list, as_map

__all__ = [
    "ALWAYS",
    "HOST_NETWORK_ONLY",
    "add_or_update_toleration",
    "daemon_tolerations",
    "with_daemon_tolerations",
]

ALWAYS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
"""(taint key, effect) tolerated by every daemon pod."""

HOST_NETWORK_ONLY: tuple[tuple[str, str], ...] = (("node.kubernetes.io/network-unavailable", "NoSchedule"),)
"""Tolerated only by host-network pods: they do not need the pod network to start."""


def daemon_tolerations(*, host_network: bool) -> list[dict[str, str]]:
    """The automatic tolerations, each ``operator: Exists`` with no ``tolerationSeconds``."""
    pairs = ALWAYS + (HOST_NETWORK_ONLY if host_network else ())
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in pairs]


def _identity(toleration: Mapping[str, Any]) -> tuple[str, str, str, str]:
    # An absent operator means Equal, an absent value or effect means empty: compare them so.
    return (
        str(toleration.get("key") or ""),
        str(toleration.get("operator") or "Equal"),
        str(toleration.get("value") or ""),
        str(toleration.get("effect") or ""),
    )


def _normalized(toleration: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in toleration.items() if v not in (None, "")} | {
        "operator": toleration.get("operator") or "Equal"
    }


def add_or_update_toleration(tolerations: Iterable[Any], toleration: Mapping[str, Any]) -> list[Any]:
    """A new list with ``toleration`` replacing its identical-identity entries, or appended.

    Entries that are not mappings are kept as they are; they cannot match anything.
    """
    want = _identity(toleration)
    result: list[Any] = []
    replaced = False
    for existing in tolerations:
        if isinstance(existing, Mapping) and _identity(existing) == want:
            if _normalized(existing) == _normalized(toleration):
                result.append(existing)
            else:
                result.append(dict(toleration))
            replaced = True
            continue
        result.append(existing)
    if not replaced:
        result.append(dict(toleration))
    return result


def with_daemon_tolerations(pod_spec: Mapping[str, Any], *, extra: tuple[Mapping[str, Any], ...] = ()) -> list[Any]:
    """The tolerations of ``pod_spec`` with the daemon tolerations, then ``extra``, added or replaced."""
    spec = as_map(pod_spec)
    result: list[Any] = list(as_list(spec.get("tolerations")))
    for toleration in (*daemon_tolerations(host_network=spec.get("hostNetwork") is True), *extra):
        result = add_or_update_toleration(result, toleration)
    return result
