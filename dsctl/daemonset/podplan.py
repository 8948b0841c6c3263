"""The pod plan: the pod writes, events and requeue that the manage and rolling-update planners return.

Both planners are functions from objects already in the cache to a ``Plan``;
``syncplan.SyncPlan`` carries the merged one as its ``pods`` stage (the counters are
``status.Status``, summed from the per-node outcomes of ``nodetable.NodeTable``).
``dsctl.controller.executor`` is the only place that turns a plan into API calls, events,
backoff steps and requeues, so planners are tested table-driven without any fake client.

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

from dsctl_api.objects import name, namespace, uid

__all__ = [
    "Event",
    "EventType",
    "ImageChange",
    "Plan",
    "PodRef",
    "PodUpdate",
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
