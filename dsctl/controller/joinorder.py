"""Which DaemonSets must wait for higher-priority ones on a node that just joined.

The queue's priority lane and gate (``dsctl.workqueue.lanes``) start the syncs a new node
triggers in priority order. One race is left: a sync that a worker had already taken (for a
pod event, say) when the node arrived reads the node cache after the node is in it, and would
create its pod beside, or before, the critical DaemonSet's. So the controller remembers, per
joined node, the DaemonSets that want it and their priorities, until each has synced once
since the join; a sync leaves out the creates on nodes where a DaemonSet of higher priority
has not yet synced, and looks again shortly. An entry lapses after ``hold`` seconds, so a
hung or failing sync of a critical DaemonSet never keeps the others off a node for long.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog

from dsctl.daemonset.podplan import Plan, soonest
from dsctl.tuning import JOIN_HOLD_SECONDS, JOIN_RECHECK_SECONDS

__all__ = ["JoinOrder"]

log = structlog.get_logger(__name__)



@dataclass
class _Join:
    at: float
    pending: dict[str, int] = field(default_factory=dict)


class JoinOrder:
    """Per-node pending syncs after a join; all times are the caller's monotonic clock."""

    def __init__(self, *, hold: float = JOIN_HOLD_SECONDS) -> None:
        self.hold = hold
        self._joins: dict[str, _Join] = {}

    def __len__(self) -> int:
        return len(self._joins)

    def node_wanted(self, node: str, wants: Iterable[tuple[str, int]], *, now: float) -> None:
        """``node`` joined (or became eligible) for these ``(key, priority)``s."""
        pending = dict(wants)
        if len(set(pending.values())) > 1:  # all equal: nobody waits for anybody
            self._joins[node] = _Join(at=now, pending=pending)

    def deferred(self, key: str, priority: int, nodes: Iterable[str], *, now: float) -> set[str]:
        """Of ``nodes``, those where a DaemonSet of higher priority than ``key`` has not synced."""
        if not self._joins:
            return set()
        self._expire(now)
        out: set[str] = set()
        for name in nodes:
            join = self._joins.get(name)
            if join is not None and any(p > priority for k, p in join.pending.items() if k != key):
                out.add(name)
        return out

    def hold_back(self, key: str, priority: int, plan: Plan, *, now: float) -> Plan:
        """``plan`` without the creates ``deferred`` names; those come back in ``JOIN_RECHECK_SECONDS``."""
        held = self.deferred(key, priority, plan.creates, now=now)
        if not held:
            return plan
        log.debug("creates_after_higher_priority", key=key, nodes=len(held))
        return dataclasses.replace(plan, creates=tuple(n for n in plan.creates if n not in held),
                                   requeue_after=soonest(plan.requeue_after, JOIN_RECHECK_SECONDS))

    def synced(self, key: str, *, started: float) -> None:
        """A sync of ``key`` that began at ``started`` ended: it saw every node joined before."""
        for name in [n for n, j in self._joins.items() if j.at <= started and key in j.pending]:
            join = self._joins[name]
            del join.pending[key]
            if len(set(join.pending.values())) <= 1:
                del self._joins[name]

    def forget(self, key: str, uid: str) -> None:
        """``key`` waits for nothing and holds nobody back any more (it is gone)."""
        for name in [n for n, j in self._joins.items() if key in j.pending]:
            join = self._joins[name]
            del join.pending[key]
            if len(set(join.pending.values())) <= 1:
                del self._joins[name]

    def holds(self, key: str, uid: str) -> bool:
        """Whether some join still waits for ``key`` to sync."""
        return any(key in j.pending for j in self._joins.values())

    def forget_node(self, node: str) -> None:
        """``node`` left: nothing is created there, so nobody waits there."""
        self._joins.pop(node, None)

    def holds_node(self, node: str) -> bool:
        """Whether a join on ``node`` is remembered."""
        return node in self._joins

    def _expire(self, now: float) -> None:
        for name in [n for n, j in self._joins.items() if now - j.at >= self.hold]:
            del self._joins[name]
