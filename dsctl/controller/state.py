"""The one owner of per-DaemonSet runtime state, and the one path that forgets it.

Runtime state is whatever the controller keeps about a DaemonSet between syncs, beyond the
informer caches: what it wrote and has not seen yet, what it remembers to plan less, what it
owes the next status write, the series it exports. ``RuntimeState`` holds every piece of it,
one field per holder, and ``RuntimeState.forget(key, uid)`` is the only way any of it is
cleared when a DaemonSet goes away: it calls ``forget`` on every field.

``Syncer.sync`` calls ``observe(key, uid)`` first thing on every sync, with the UID the cache
holds for ``key`` (None when it holds nothing). When that is not the UID the state was kept
for, the DaemonSet was deleted, or deleted and re-created under the same name: ``forget``
runs before anything reads the state. Because the sync is the trigger, whatever a sync that
was still in flight when the DaemonSet went wrote afterwards is cleared too, by the sync that
the deletion's event queues (ADR 0087). Handlers only note changes and enqueue keys.

Per-node state is cleared the same way by ``forget_node(name)``, which the node handler calls
when a Node is deleted; a holder that keeps per-node entries also implements ``NodeHolder``.

**Adding state.** Write a class that keeps it per DaemonSet key (or UID) and implements
``Holder``: ``forget(key, uid)`` drops everything about that DaemonSet, ``holds(key, uid)``
says whether anything is left. Add it as a field below and build it in ``create``; hand the
field to the component that uses it. ``tests/unit/controller/test_state.py`` fills every
field this class declares and checks that ``forget`` empties it: it fails until the new
holder has a filler there, and whenever its ``forget`` misses something ``holds`` sees.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from prometheus_client import CollectorRegistry

from .backoffstate import MAX_SECONDS, FailedPodBackoff
from .expectations import Expectations, PendingPatches
from .gatememory import ReadinessGateMemory
from .joinorder import JoinOrder
from .metrics import DaemonSetGauges
from .planmemory import ChangeLog, PlanMemory
from .statuswriter import StatusMemory
from .writes import ReplicaFailures

__all__ = ["Holder", "NodeHolder", "RuntimeState"]


@runtime_checkable
class Holder(Protocol):
    """Keeps something per DaemonSet; ``RuntimeState.forget`` clears it."""

    def forget(self, key: str, uid: str) -> None:
        """Drop everything kept for DaemonSet ``key`` whose object had ``uid`` ("" if unknown)."""

    def holds(self, key: str, uid: str) -> bool:
        """Whether anything is still kept for that DaemonSet."""


@runtime_checkable
class NodeHolder(Protocol):
    """Keeps something per node as well; ``RuntimeState.forget_node`` clears it."""

    def forget_node(self, node: str) -> None:
        """Drop everything kept about node ``node``."""

    def holds_node(self, node: str) -> bool:
        """Whether anything is still kept about node ``node``."""


@dataclass(eq=False)
class RuntimeState:
    """Every per-DaemonSet holder of one controller. Fields are holders, and nothing else is."""

    expectations: Expectations
    """Creates and deletes sent and not yet seen in the pod cache."""
    pending_patches: PendingPatches
    """In-place patches sent and not yet seen in the pod cache."""
    backoff: FailedPodBackoff
    """Per-node delays before a failed pod is replaced again (keyed by DaemonSet UID)."""
    changes: ChangeLog
    """Nodes changed since each DaemonSet's last plan."""
    plans: PlanMemory
    """Each DaemonSet's last node table, and its eligibility verdicts per node."""
    join_order: JoinOrder
    """DaemonSets that still have to sync on a node that just joined, by priority."""
    status: StatusMemory
    """The status stage's memory: its last write, the write's echo, gone DaemonSets, progress times."""
    failures: ReplicaFailures
    """The first failed write of each DaemonSet, for the next status's ``ReplicaFailure``."""
    gauges: DaemonSetGauges
    """The series exported per DaemonSet."""
    gate: ReadinessGateMemory
    """The node readiness gate: when each tainted node's gate began, and gating DaemonSets' placement rules."""

    def __post_init__(self) -> None:
        self._uids: dict[str, str] = {}
        for holder in self.holders():
            if not isinstance(holder, Holder):
                raise TypeError(f"{type(holder).__name__} keeps per-DaemonSet state but is not a Holder")

    @classmethod
    def create(
        cls, *, clock: Callable[[], float] = time.monotonic, backoff_max: float = MAX_SECONDS,
        registry: CollectorRegistry | None = None, extra_tolerations: tuple[Mapping[str, Any], ...] = (),
    ) -> RuntimeState:
        """Empty state; ``clock`` is monotonic seconds, ``registry`` receives the gauges,
        ``extra_tolerations`` are the ones every pod gets beyond upstream's (the readiness taint's)."""
        return cls(
            expectations=Expectations(clock=clock),
            pending_patches=PendingPatches(clock=clock),
            backoff=FailedPodBackoff(maximum=backoff_max),
            changes=ChangeLog(),
            plans=PlanMemory(extra=extra_tolerations),
            join_order=JoinOrder(),
            status=StatusMemory(clock=clock),
            failures=ReplicaFailures(),
            gauges=DaemonSetGauges(registry),
            gate=ReadinessGateMemory(extra=extra_tolerations),
        )

    def holders(self) -> tuple[Holder, ...]:
        """Every holder, in field order."""
        return tuple(getattr(self, f.name) for f in fields(self))

    def node_holders(self) -> tuple[NodeHolder, ...]:
        """The holders that also keep per-node entries."""
        return tuple(h for h in self.holders() if isinstance(h, NodeHolder))

    def observe(self, key: str, uid: str | None) -> None:
        """The cache holds DaemonSet ``key`` as ``uid`` (None: not at all). State kept for
        another object under ``key`` is forgotten before anything reads it."""
        kept = self._uids.get(key)
        if uid is None:
            self.forget(key, kept or "")
        elif kept != uid:
            if kept is not None:
                self.forget(key, kept)
            self._uids[key] = uid

    def forget(self, key: str, uid: str) -> None:
        """Drop everything kept for DaemonSet ``key`` whose object had ``uid``: the one cleanup path."""
        self._uids.pop(key, None)
        for holder in self.holders():
            holder.forget(key, uid)

    def forget_node(self, node: str) -> None:
        """Drop everything kept about node ``node`` (it was deleted)."""
        for holder in self.node_holders():
            holder.forget_node(node)

    def holds(self, key: str, uid: str) -> bool:
        """Whether any holder keeps anything for DaemonSet ``key`` / ``uid``."""
        return any(holder.holds(key, uid) for holder in self.holders())
