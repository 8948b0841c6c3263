"""Per-node planning, and the table that lets a sync re-plan only the nodes that changed.

Manage and status are sums over nodes: what one node needs (``manage.manage_node``) and what
it adds to the counters (``status.node_counts``) depend only on the node, the DaemonSet's
pods that target it, and a few DaemonSet-wide values, the ``Basis``. A ``NodeTable`` keeps
each node's ``NodeOutcome`` with running totals, so after one node changed a sync computes one
outcome, not five thousand.

Three things make an outcome depend on more than its node and pods, and each is handled here:

- The basis (template generation, revision hash, surge, minReadySeconds, the DaemonSet's UID
  and generation): a different basis makes ``updated`` start from an empty table.
- Time and backoff: a node with a failed pod, a manage requeue, or a Ready pod still waiting
  out ``minReadySeconds`` is *volatile*; every sync re-plans the volatile nodes.
- The node's lifecycle facts (``nodelifecycle.node_facts``: not Ready since when, departing
  or not), read from the node object like its eligibility. An outcome keeps the time a node
  turned unhealthy, not whether that is long enough ago to skip it: the sync compares it with
  its own clock (``unhealthy``), so passing time re-plans nothing.
- Nothing else. Whoever calls ``updated`` must name every node whose object or pods changed
  since the table was made; ``dsctl.controller.planmemory.ChangeLog`` collects them from the informers.

A table built from scratch and a table updated step by step over the same history are equal
(``tests/unit/daemonset/test_nodetable_property.py`` checks it over random event sequences).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dsctl.daemonset.access import phase
from dsctl.daemonset.backoffview import BackoffView
from dsctl.daemonset.eligibility import Fit
from dsctl.daemonset.inplace import in_place_pending
from dsctl.daemonset.manage import manage_node
from dsctl.daemonset.nodelifecycle import HEALTHY, NodeFacts, counts_when_unhealthy
from dsctl.daemonset.podplan import Plan, merge_plans
from dsctl.daemonset.sharedmap import SharedMap
from dsctl.daemonset.sortednames import SortedNames
from dsctl.daemonset.status import NO_COUNTS, Counts, Status, node_counts, status_of
from dsctl.daemonset.template import is_pod_updated
from dsctl.daemonset.update import (
    CANDIDATE,
    OUT,
    REPLACE,
    UNAVAILABLE,
    NoSurgeNodes,
    find_updated_pods_on_node,
    no_surge_role,
)
from dsctl_api.objects import deletion_timestamp, is_map
from dsctl_api.pods import is_pod_available, is_pod_ready

__all__ = ["Basis", "NodeOutcome", "NodeTable", "plan_node"]

Obj = Mapping[str, Any]


class Basis(NamedTuple):
    """The DaemonSet-wide inputs of every node's outcome; a change invalidates them all."""

    uid: str
    generation: int
    hash: str
    template_generation: int | None
    surge: bool
    min_ready: int


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """One node's share of a sync.

    ``fit`` None: the cache does not know the node (its unbound pods are deleted).
    ``pods``: the DaemonSet's claimed pods targeting the node, as planned on.
    ``old``: some live pod there is of another revision (the rolling update has work).
    """

    node: str
    fit: Fit | None
    pods: tuple[Obj, ...]
    manage: Plan
    counts: Counts
    volatile: bool
    old: bool
    skip_since: float | None = None
    """When the node turned unhealthy, if the rolling update looks at it (it should run the pod,
    or holds one) and it would not count there once unhealthy long enough
    (``nodelifecycle.counts_when_unhealthy``)."""
    departing: str | None = None
    """Why the node is going away (``nodelifecycle.DEPARTING_REASONS``), or None."""
    held: bool = False
    """A pod would be created or replaced here, but the node is departing."""
    extra: int = 0
    """Running pods beyond the one the node should run (surge, excess, misscheduled): pods a
    PodDisruptionBudget counts as healthy that no node's availability needs."""
    roll: int = OUT
    """The node's part in a rolling update without surge (``update.no_surge_role``); ``OUT``
    under a basis that allows surge, where the rolling update plans every node."""
    roll_wait: float | None = None
    """The requeue the node's pods ask of that rolling update."""


def _roll(basis: Basis, fit: Fit | None, live: tuple[Obj, ...], now: float) -> tuple[int, float | None]:
    if basis.surge:
        return OUT, None
    return no_surge_role(live, should_run=fit is not None and fit.should_run, hash=basis.hash,
                         generation=basis.template_generation, min_ready=basis.min_ready, now=now)


def plan_node(
    ds: Obj, basis: Basis, node: str, fit: Fit | None, pods: Sequence[Obj], *, now: float, backoff: BackoffView,
    facts: NodeFacts = HEALTHY,
) -> NodeOutcome:
    """The outcome of one node under ``basis`` at ``now``; ``facts`` are the node's lifecycle facts."""
    live = tuple([p for p in pods if is_map(p)])
    departing = facts.departing if fit is not None else None
    manage = manage_node(ds, node, fit, live, hash=basis.hash, now=now, backoff=backoff, surge=basis.surge,
                         min_ready=basis.min_ready, departing=departing is not None)
    if fit is not None and len(live) == 1 and not deletion_timestamp(live[0]) and facts is HEALTHY:
        return _one_pod(node, fit, live, manage, basis=basis, now=now)
    counts = node_counts(fit, live, min_ready=basis.min_ready, hash=basis.hash,
                         generation=basis.template_generation, now=now)
    volatile = manage.requeue_after is not None
    old = False
    for pod in live:
        if deletion_timestamp(pod):
            continue
        if not old and not is_pod_updated(pod, basis.hash, basis.template_generation):
            old = True
        if volatile:
            continue
        waiting = basis.min_ready > 0 and is_pod_ready(pod) and not is_pod_available(pod, basis.min_ready, now)
        volatile = waiting or phase(pod) == "Failed"
    running = sum(1 for p in live if not deletion_timestamp(p) and phase(p) not in _TERMINAL)
    should_run = fit is not None and fit.should_run
    extra = running - 1 if should_run and running else running
    skip_since = None
    since = facts.unhealthy_since
    # A node that should not run the pod but holds one still takes part in the rolling update
    # (a NotReady node's not-ready NoSchedule taint untolerated, say): it is a candidate too.
    if since is not None and fit is not None and (should_run or live) and not counts_when_unhealthy(
            live, since=since, hash=basis.hash, generation=basis.template_generation):
        skip_since = since
    roll, roll_wait = _roll(basis, fit, live, now)
    return NodeOutcome(node=node, fit=fit, pods=live, manage=manage, counts=counts, volatile=volatile, old=old,
                       skip_since=skip_since, departing=departing, held=departing is not None and should_run
                       and not running, extra=extra, roll=roll, roll_wait=roll_wait)


_TERMINAL = ("Failed", "Succeeded")
_COUNTS_UNAVAILABLE = frozenset((UNAVAILABLE, REPLACE))


def _one_pod(node: str, fit: Fit, live: tuple[Obj, ...], manage: Plan, *, basis: Basis, now: float) -> NodeOutcome:
    """``plan_node`` for the steady state, one live pod: each fact about the pod read once."""
    pod = live[0]
    updated = is_pod_updated(pod, basis.hash, basis.template_generation)
    ready = is_pod_ready(pod)
    waiting = basis.min_ready > 0 and ready and not is_pod_available(pod, basis.min_ready, now)
    counts: Counts
    if fit.should_run:
        available = ready and not waiting and not in_place_pending(pod)
        counts = (1, 1, 0, 1 if ready else 0, 1 if available else 0, 1 if updated else 0)
    else:
        counts = (0, 0, 1, 0, 0, 0)
    pod_phase = phase(pod)
    volatile = manage.requeue_after is not None or waiting or pod_phase == "Failed"
    roll, roll_wait = _roll(basis, fit, live, now)
    return NodeOutcome(node=node, fit=fit, pods=live, manage=manage, counts=counts, volatile=volatile,
                       old=not updated, extra=0 if fit.should_run or pod_phase in _TERMINAL else 1,
                       roll=roll, roll_wait=roll_wait)


@dataclass(frozen=True, slots=True)
class NodeTable:
    """Every known node's outcome for one DaemonSet, with the sums a sync needs.

    Frozen: ``updated`` returns a new table that shares the unchanged nodes' entries with this
    one (``sharedmap``), so its cost follows the nodes that changed, not the cluster. Nodes
    without a node object and without pods are not kept.
    """

    basis: Basis | None = None
    outcomes: SharedMap[str, NodeOutcome] = field(default_factory=SharedMap)
    totals: Counts = NO_COUNTS
    creating: tuple[str, ...] = ()
    """Nodes whose manage plan is one create on that node and nothing else, sorted by name.
    Kept apart because a cold start has thousands of them: the manage plan of a table holding
    only these is this tuple, with no per-node merge or sort in the sync."""
    acting: frozenset[str] = frozenset()
    """Nodes whose manage plan holds anything else (deletes, events, backoff, a requeue)."""
    volatile: frozenset[str] = frozenset()
    old: int = 0
    """How many nodes hold a live pod of another revision."""
    unhealthy: frozenset[str] = frozenset()
    """Nodes with ``skip_since``: the candidates of ``unhealthyNodePolicy: Skip``."""
    departing: frozenset[str] = frozenset()
    """Nodes that are going away (``NodeOutcome.departing``)."""
    held: frozenset[str] = frozenset()
    """Departing nodes where a pod would otherwise be created or replaced."""
    extra: int = 0
    """The sum of ``NodeOutcome.extra``."""
    roll_unavailable: int = 0
    """Nodes whose ``NodeOutcome.roll`` is ``UNAVAILABLE`` or ``REPLACE``."""
    roll_replace: frozenset[str] = frozenset()
    """Nodes whose ``roll`` is ``REPLACE``."""
    roll_candidates: SortedNames = field(default_factory=SortedNames)
    """Nodes whose ``roll`` is ``CANDIDATE``, in name order: the rolling update takes the first."""
    roll_waiting: frozenset[str] = frozenset()
    """Nodes with a ``roll_wait``."""

    def updated(self, outcomes: Iterable[NodeOutcome], *, gone: Iterable[str] = ()) -> NodeTable:
        """This table with ``outcomes`` replacing their nodes' entries and ``gone`` dropped.

        Each node at most once in ``outcomes`` (``_plan_nodes`` plans a set): into an empty table
        a second outcome for a node would be counted twice."""
        before = self.outcomes
        changes: dict[str, NodeOutcome | None] = {}  # None: the node's entry goes
        totals = list(self.totals)
        acting, volatile = set(self.acting), set(self.volatile)
        unhealthy, departing, held = set(self.unhealthy), set(self.departing), set(self.held)
        stopped: set[str] = set()  # nodes leaving ``creating``
        started: set[str] = set()  # nodes joining it
        old, extra = self.old, self.extra
        roll_unavailable = self.roll_unavailable
        replace, waiting = set(self.roll_replace), set(self.roll_waiting)
        candidates: dict[str, bool] = {}  # a node joining (True) or leaving (False) ``roll_candidates``

        def drop(node: str) -> None:
            nonlocal old, extra, roll_unavailable
            previous = changes[node] if node in changes else before.get(node)
            if previous is None:
                return
            changes[node] = None
            for i, value in enumerate(previous.counts):
                totals[i] -= value
            old -= previous.old
            extra -= previous.extra
            if _lone_create(previous):
                stopped.add(node)
                started.discard(node)
            acting.discard(node)
            volatile.discard(node)
            unhealthy.discard(node)
            departing.discard(node)
            held.discard(node)
            roll = previous.roll
            if roll in _COUNTS_UNAVAILABLE:
                roll_unavailable -= 1
            if roll == REPLACE:
                replace.discard(node)
            elif roll == CANDIDATE:
                candidates[node] = False
            waiting.discard(node)

        for node in gone:
            drop(node)
        fresh = not before
        for outcome in outcomes:
            node = outcome.node
            if not fresh:
                drop(node)
            if outcome.fit is None and not outcome.pods:
                continue
            changes[node] = outcome
            counts = outcome.counts
            if counts is not NO_COUNTS:
                for i, value in enumerate(counts):
                    totals[i] += value
            old += outcome.old
            extra += outcome.extra
            if outcome.skip_since is not None:
                unhealthy.add(node)
            if outcome.departing is not None:
                departing.add(node)
            if outcome.held:
                held.add(node)
            if _lone_create(outcome):
                started.add(node)
            elif not outcome.manage.empty:
                acting.add(node)
            if outcome.volatile:
                volatile.add(node)
            roll = outcome.roll
            if roll in _COUNTS_UNAVAILABLE:
                roll_unavailable += 1
            if roll == REPLACE:
                replace.add(node)
            elif roll == CANDIDATE:
                candidates[node] = True
            if outcome.roll_wait is not None:
                waiting.add(node)
        table = before.updated([(n, o) for n, o in changes.items() if o is not None],
                               drop=[n for n, o in changes.items() if o is None])
        return NodeTable(basis=self.basis, outcomes=table,
                         totals=(totals[0], totals[1], totals[2], totals[3], totals[4], totals[5]),
                         creating=_resorted(self.creating, stopped, started),
                         acting=frozenset(acting), volatile=frozenset(volatile), old=old,
                         unhealthy=_frozen(unhealthy, self.unhealthy), departing=_frozen(departing, self.departing),
                         held=_frozen(held, self.held), extra=extra, roll_unavailable=roll_unavailable,
                         roll_replace=_frozen(replace, self.roll_replace),
                         roll_candidates=self.roll_candidates.updated(candidates),
                         roll_waiting=_frozen(waiting, self.roll_waiting))

    def manage_plan(self) -> Plan:
        """The manage plan of the whole DaemonSet: every node's plan (``creating`` and ``acting``)
        merged in node-name order."""
        if not self.acting:
            return Plan(creates=self.creating) if self.creating else _NOTHING
        order = sorted(self.acting)
        if self.creating:
            order = list(heapq.merge(order, self.creating))
        return merge_plans(self.outcomes[node].manage for node in order)

    def unhealthy_since(self) -> dict[str, float]:
        """The ``unhealthy`` nodes with the time each turned unhealthy."""
        result: dict[str, float] = {}
        for node in self.unhealthy:
            since = self.outcomes[node].skip_since
            if since is not None:
                result[node] = since
        return result

    def without(self, nodes: Iterable[str]) -> Counts:
        """The totals less the counts of ``nodes``."""
        totals = list(self.totals)
        for node in nodes:
            outcome = self.outcomes.get(node)
            if outcome is not None:
                for i, value in enumerate(outcome.counts):
                    totals[i] -= value
        return (totals[0], totals[1], totals[2], totals[3], totals[4], totals[5])

    def no_surge_nodes(self, excluded: frozenset[str] = frozenset()) -> NoSurgeNodes:
        """The per-node roles summed for ``update.plan_no_surge``, ``excluded`` nodes left out.

        Costs what the excluded nodes, the nodes with a requeue and the nodes picked cost, not
        what the table holds (ADR 0195). Meaningful only under a basis without surge.
        """
        unavailable, replace, waiting = self.roll_unavailable, self.roll_replace, self.roll_waiting
        skipped = 0
        if excluded:
            for node in excluded:
                outcome = self.outcomes.get(node)
                if outcome is None:
                    continue
                if outcome.roll in _COUNTS_UNAVAILABLE:
                    unavailable -= 1
                elif outcome.roll == CANDIDATE:
                    skipped += 1
            replace, waiting = replace - excluded, waiting - excluded
        ordered = self.roll_candidates

        def candidates(count: int) -> list[str]:
            if not skipped:
                return ordered.first(count)
            return [n for n in ordered.first(count + skipped) if n not in excluded][:count]

        waits = [w for n in waiting if (w := self.outcomes[n].roll_wait) is not None]
        return NoSurgeNodes(desired=self.totals[0], unavailable=unavailable, replace=sorted(replace),
                            candidates=candidates, old_pod=self._old_pod, requeue=min(waits) if waits else None)

    def _old_pod(self, node: str) -> Obj | None:
        outcome, basis = self.outcomes.get(node), self.basis
        if outcome is None or basis is None:
            return None
        return find_updated_pods_on_node(outcome.pods, basis.hash, basis.template_generation).old

    def should_run(self) -> list[str]:
        """Nodes where the pod should run (for the rolling update's budgets)."""
        return [n for n, o in self.outcomes.items() if o.fit is not None and o.fit.should_run]

    def pods_by_node(self) -> dict[str, Sequence[Obj]]:
        """The claimed pods by target node, as planned on."""
        return {n: o.pods for n, o in self.outcomes.items() if o.pods}

    def all_pods(self) -> Iterable[Obj]:
        """Every claimed pod in the table."""
        for outcome in self.outcomes.values():
            yield from outcome.pods

    def status(self) -> Status:
        """The counters as a ``status.Status``."""
        return status_of(self.totals)


_NOTHING = Plan()


def _frozen(now: set[str], before: frozenset[str]) -> frozenset[str]:
    """``now`` frozen, reusing ``before`` when equal (these sets are nearly always empty)."""
    return before if now == before else frozenset(now)


def _lone_create(outcome: NodeOutcome) -> bool:
    """Whether the outcome's manage plan is exactly one create on its own node."""
    manage = outcome.manage
    return (len(manage.creates) == 1 and manage.creates[0] == outcome.node and not manage.deletes
            and not manage.updates and not manage.events and not manage.backoff_steps
            and manage.requeue_after is None)


def _resorted(nodes: tuple[str, ...], leaving: set[str], joining: set[str]) -> tuple[str, ...]:
    """The sorted ``nodes`` less ``leaving`` plus ``joining`` (disjoint from what stays), sorted.

    A DaemonSet being created on 100,000 nodes has that many in ``creating``, and each sync
    takes a burst out: the leaving nodes are found by bisection and the rest copied in slices,
    never tested one by one."""
    if not leaving and not joining:
        return nodes
    kept = _without(nodes, leaving) if leaving else list(nodes)
    if joining:
        kept.extend(joining)
        kept.sort()  # one sorted run plus a short tail: the sort only sorts the tail and merges
    return tuple(kept)


def _without(nodes: tuple[str, ...], leaving: set[str]) -> list[str]:
    """The sorted ``nodes`` less ``leaving`` (which may name nodes not among them)."""
    cuts = []
    for node in leaving:
        at = bisect_left(nodes, node)
        if at < len(nodes) and nodes[at] == node:
            cuts.append(at)
    cuts.sort()
    kept: list[str] = []
    start = 0
    for at in cuts:
        kept.extend(nodes[start:at])
        start = at + 1
    kept.extend(nodes[start:])
    return kept
