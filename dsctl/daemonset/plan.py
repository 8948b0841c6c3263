"""The values that pure planners return and the controller executes.

Every planner in ``dsctl.daemonset`` (manage, rolling update, status) is a function from
objects already in the cache to one of these frozen values; ``syncplan.SyncPlan`` gathers
them for one sync. ``dsctl.controller.executor`` is the only place that turns them into API
calls, events, backoff steps and requeues, so planners are tested table-driven without any
fake client.

Conventions the executor relies on:

- ``Plan.creates`` names nodes, at most once each; a create is one pod built by
  ``template.new_pod`` for that node.
- ``Plan.deletes`` carries the pod UID so the executor can send a UID precondition and
  never delete a same-named successor.
- ``Event.regarding`` of None means "the DaemonSet being synced" (upstream records
  ``FailedDaemonPod`` and friends on the DaemonSet, not on the pod).
- ``Plan.updates`` are in-place image updates (``rollingUpdateType: InPlaceIfPossible``), each
  naming the pod by UID and the resourceVersion it was planned on, both sent as the patch's
  preconditions, so it never touches a successor or a pod that changed since.
- ``Plan.backoff_steps`` are failed-pod backoff keys the executor advances
  (``FailedPodBackoff.next(key, now=...)``) before it sends the pod writes; planners never
  mutate backoff state themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dsctl_api.objects import as_int, as_map, name, namespace, uid

__all__ = [
    "STATUS_FIELDS",
    "Event",
    "EventType",
    "ImageChange",
    "Plan",
    "PodRef",
    "PodUpdate",
    "Status",
    "merge_plans",
    "soonest",
]

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True, slots=True)
class PodRef:
    """Enough of a pod to delete it safely and to say which node it was for.

    ``node`` is the pod's target node (``spec.nodeName`` or its ``metadata.name`` affinity
    value); empty when it has none.
    """

    namespace: str
    name: str
    uid: str
    node: str = ""

    @classmethod
    def of(cls, pod: Mapping[str, Any], *, node: str = "") -> PodRef:
        """Build a ref from a pod dict; missing metadata becomes empty strings."""
        return cls(namespace=namespace(pod), name=name(pod), uid=uid(pod), node=node)


@dataclass(frozen=True, slots=True)
class ImageChange:
    """One container whose image an in-place update replaces (containers match by name)."""

    container: str
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class PodUpdate:
    """An in-place update: patch ``images`` into the pod and move it to revision ``hash``.

    ``generation`` is the DaemonSet's template generation for the ``pod-template-generation``
    label, None when the DaemonSet has none.
    """

    pod: PodRef
    hash: str
    images: tuple[ImageChange, ...]
    generation: int | None = None
    resource_version: str = ""
    """The version of the pod the plan was made on: the patch's precondition."""
    restart_counts: tuple[tuple[str, int], ...] = ()
    """Each changed container's restartCount in that version (-1 without a status)."""


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes event to record. ``regarding`` None means the DaemonSet itself."""

    type: EventType
    reason: str
    message: str
    regarding: PodRef | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What one sync step wants done: creates, then deletes, then a requeue.

    ``requeue_after`` is the soonest time (seconds from now) at which the DaemonSet must be
    synced again even if no watch event arrives (failed-pod backoff, minReadySeconds).
    """

    creates: tuple[str, ...] = ()
    deletes: tuple[PodRef, ...] = ()
    updates: tuple[PodUpdate, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: float | None = None
    backoff_steps: tuple[str, ...] = ()

    @property
    def has_writes(self) -> bool:
        """Whether executing the plan touches pods (and so sets expectations)."""
        return bool(self.creates or self.deletes or self.updates)

    @property
    def empty(self) -> bool:
        """Nothing at all to do: no writes, events, backoff steps or requeue."""
        return not (self.has_writes or self.events or self.backoff_steps) and self.requeue_after is None


def soonest(a: float | None, b: float | None) -> float | None:
    """The earlier of two optional requeue delays; None only when both are None."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def merge_plans(plans: Iterable[Plan]) -> Plan:
    """Concatenate plans in order, dropping repeated creates (by node), deletes and updates (by UID or name).

    The requeue is the soonest of all. Upstream runs the rolling update only when manage issued
    no writes (its expectations would be unsatisfied otherwise); the caller decides whether to
    include an update plan, this function only combines.
    """
    creates: dict[str, None] = {}
    deletes: dict[tuple[str, str, str], PodRef] = {}
    updates: dict[str, PodUpdate] = {}
    events: list[Event] = []
    steps: dict[str, None] = {}
    requeue: float | None = None
    for plan in plans:
        for node in plan.creates:
            creates.setdefault(node, None)
        for ref in plan.deletes:
            key = (ref.namespace, ref.name, ref.uid) if ref.uid else (ref.namespace, ref.name, "")
            deletes.setdefault(key, ref)
        for update in plan.updates:
            updates.setdefault(update.pod.uid or f"{update.pod.namespace}/{update.pod.name}", update)
        events.extend(plan.events)
        for step in plan.backoff_steps:
            steps.setdefault(step, None)
        requeue = soonest(requeue, plan.requeue_after)
    return Plan(
        creates=tuple(creates),
        deletes=tuple(deletes.values()),
        updates=tuple(updates.values()),
        events=tuple(events),
        requeue_after=requeue,
        backoff_steps=tuple(steps),
    )


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
