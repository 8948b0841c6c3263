"""DaemonSet status: the seven counters (``Status``), how they are counted, and whether they are worth a write.

Counted per node in the node list (pods on nodes the cache does not know are not counted),
looking only at the node's first pod in ``podsort`` order:

- should run: ``desiredNumberScheduled``; with a pod, also ``currentNumberScheduled``, and
  by that one pod ``numberReady``, ``numberAvailable`` (Ready for ``minReadySeconds``) and
  ``updatedNumberScheduled`` (current hash, or current ``pod-template-generation``);
- should not run but has a pod: ``numberMisscheduled``. This includes pods kept because an
  untolerated taint is only ``NoSchedule``.

A pod patched in place (``dsctl.daemonset.inplace``) is not available until its kubelet
has restarted the changed containers. ``numberUnavailable`` is desired minus available.
``observedGeneration`` is the caller's: it is raised only by a sync that was allowed to act on the current generation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsctl.daemonset.access import min_ready_seconds
from dsctl.daemonset.eligibility import Fit, verdicts
from dsctl.daemonset.inplace import in_place_pending
from dsctl.daemonset.podsort import oldest
from dsctl.daemonset.template import is_pod_updated, template_generation
from dsctl_api.objects import as_int, as_map, is_map
from dsctl_api.pods import is_pod_available, is_pod_ready

__all__ = [
    "NO_COUNTS",
    "STATUS_FIELDS",
    "Counts",
    "Status",
    "availability_requeue",
    "compute_status",
    "node_counts",
    "status_changed",
    "status_of",
    "status_with",
]


@dataclass(frozen=True, slots=True)
class Status:
    """The seven DaemonSet status counters, as computed from the cache.

    ``observedGeneration`` and ``collisionCount`` are not here: the controller sets the first
    when it writes, and only revision snapshots change the second.
    """

    desired_number_scheduled: int = 0
    current_number_scheduled: int = 0
    number_misscheduled: int = 0
    number_ready: int = 0
    number_available: int = 0
    number_unavailable: int = 0
    updated_number_scheduled: int = 0

    def as_fields(self) -> dict[str, int]:
        """The counters under their API (camelCase) names, ready to merge into ``status``."""
        return {api: getattr(self, attr) for attr, api in STATUS_FIELDS.items()}

    @classmethod
    def from_fields(cls, status: Mapping[str, Any] | None) -> Status:
        """Read the counters of an existing ``status`` dict; missing or non-int values are 0."""
        source = as_map(status)
        return cls(**{attr: as_int(source.get(api)) for attr, api in STATUS_FIELDS.items()})


STATUS_FIELDS: dict[str, str] = {
    "desired_number_scheduled": "desiredNumberScheduled",
    "current_number_scheduled": "currentNumberScheduled",
    "number_misscheduled": "numberMisscheduled",
    "number_ready": "numberReady",
    "number_available": "numberAvailable",
    "number_unavailable": "numberUnavailable",
    "updated_number_scheduled": "updatedNumberScheduled",
}
"""Status attribute name → API field name, in the order ``kubectl`` prints them."""


Counts = tuple[int, int, int, int, int, int]
"""One node's share of the counters: desired, current, misscheduled, ready, available, updated."""

NO_COUNTS: Counts = (0, 0, 0, 0, 0, 0)


def node_counts(
    fit: Fit | None, pods: Sequence[Any], *, min_ready: int, hash: str, generation: int | None, now: float
) -> Counts:
    """What one node adds to the counters (``fit`` None: a node the cache does not know)."""
    if fit is None:
        return NO_COUNTS
    live = [p for p in pods if is_map(p)]
    if not fit.should_run:
        return (0, 0, 1, 0, 0, 0) if live else NO_COUNTS
    pod = oldest(live)
    if pod is None:
        return (1, 0, 0, 0, 0, 0)
    ready = available = 0
    if is_pod_ready(pod):
        ready = 1
        # Without minReadySeconds, Ready is available: skip a second condition lookup.
        if (not min_ready or is_pod_available(pod, min_ready, now)) and not in_place_pending(pod):
            available = 1
    return (1, 1, 0, ready, available, 1 if is_pod_updated(pod, hash, generation) else 0)


def status_of(totals: Counts) -> Status:
    """The counters from summed ``node_counts``."""
    desired, current, misscheduled, ready, available, updated = totals
    return Status(
        desired_number_scheduled=desired,
        current_number_scheduled=current,
        number_misscheduled=misscheduled,
        number_ready=ready,
        number_available=available,
        number_unavailable=desired - available,
        updated_number_scheduled=updated,
    )


def compute_status(
    *,
    ds: Mapping[str, Any],
    nodes: Iterable[Any],
    pods_by_node: Mapping[str, Sequence[Any]],
    hash: str,
    now: float,
    fits: Mapping[str, Fit] | None = None,
) -> Status:
    """The counters for ``ds`` given the cache's nodes and the claimed pods grouped by node."""
    min_ready = min_ready_seconds(ds)
    generation = template_generation(ds)
    totals = [0, 0, 0, 0, 0, 0]
    for node_name, fit in verdicts(ds, nodes, fits):
        counts = node_counts(fit, pods_by_node.get(node_name, ()), min_ready=min_ready, hash=hash,
                             generation=generation, now=now)
        for i, value in enumerate(counts):
            totals[i] += value
    return status_of((totals[0], totals[1], totals[2], totals[3], totals[4], totals[5]))


def status_changed(old_status: Mapping[str, Any] | None, new: Status, *, generation: int) -> bool:
    """Whether a write is needed: any counter differs, or ``observedGeneration < generation``."""
    old = as_map(old_status)
    if Status.from_fields(old) != new:
        return True
    return as_int(old.get("observedGeneration")) < generation


def status_with(
    old_status: Mapping[str, Any] | None, new: Status, *, observed_generation: int | None
) -> dict[str, Any]:
    """The status to write: ``old_status`` (collisionCount, conditions...) with the new counters.

    ``observed_generation`` None keeps the old value (a sync that only wrote status because
    its expectations were pending must not claim to have seen the new generation).
    """
    result = dict(as_map(old_status))
    for api_name in STATUS_FIELDS.values():
        result.pop(api_name, None)
    result.update(new.as_fields())
    if observed_generation is not None:
        result["observedGeneration"] = observed_generation
    return result


def availability_requeue(ds: Mapping[str, Any], status: Status) -> float | None:
    """Seconds after which to sync again because Ready pods are waiting out ``minReadySeconds``.

    A last line of defence (the pod handler also requeues on the Ready transition): without
    it a pod that becomes available with no further event would never be counted.
    """
    min_ready = min_ready_seconds(ds)
    if min_ready > 0 and status.number_ready != status.number_available:
        return float(min_ready)
    return None
