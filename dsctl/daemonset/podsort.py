"""Which daemon pod is "the" pod of a node: ordering and per-node grouping.

When a node holds several pods of one DaemonSet, the planners keep the first in this order
and status counts only it: bound pods before unbound ones (a bound pod is further along),
then the oldest ``creationTimestamp``, then the name, so the choice is deterministic even
for pods created in the same second.

``group_by_node`` builds the ``pods_by_node`` map every planner takes. It drops pods that
are both terminal and being deleted (they are gone in every sense that matters), except for
history cleanup, which must still see their revision labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dsctl.daemonset.access import bound_node, phase
from dsctl.daemonset.template import target_node
from dsctl_api.objects import deletion_timestamp, is_map, meta, name
from dsctl_api.timefmt import parse_rfc3339

__all__ = ["creation_time", "group_by_node", "oldest", "pod_sort_key", "sort_pods"]

_TERMINAL = ("Succeeded", "Failed")


def creation_time(obj: Any) -> float:
    """``metadata.creationTimestamp`` in epoch seconds; missing or unparseable sorts first."""
    raw = meta(obj).get("creationTimestamp")
    if not isinstance(raw, str) or not raw:
        return float("-inf")
    try:
        return parse_rfc3339(raw)
    except (ValueError, OverflowError):
        return float("-inf")


def pod_sort_key(pod: Any) -> tuple[int, float, str]:
    """Sort key: bound first, then oldest, then by name."""
    return (0 if bound_node(pod) else 1, creation_time(pod), name(pod))


def sort_pods(pods: Iterable[Any]) -> list[Any]:
    """A new list of ``pods``, the pod to keep first."""
    return sorted(pods, key=pod_sort_key)


def oldest(pods: Sequence[Any]) -> Any | None:
    """The pod to keep among ``pods`` (None for an empty sequence), without sorting all of them."""
    if not pods:
        return None
    if len(pods) == 1:
        return pods[0]
    return min(pods, key=pod_sort_key)


def group_by_node(
    pods: Iterable[Any], *, include_deleted_terminal: bool = False
) -> dict[str, list[Mapping[str, Any]]]:
    """Claimed pods grouped by target node, in input order within a node.

    Pods without a target node, and entries that are not objects, are left out.
    """
    result: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        if not is_map(pod):
            continue
        if not include_deleted_terminal and deletion_timestamp(pod) and phase(pod) in _TERMINAL:
            continue
        node = target_node(pod)
        if node:
            result.setdefault(node, []).append(pod)
    return result
