"""One sync of one DaemonSet, decided in one pure call: ``plan_sync(snapshot) -> SyncPlan``.

This is the only place where the order of a sync is decided, and it follows upstream's
``syncDaemonSet``:

1. The DaemonSet is gone: nothing to plan (the caller forgets its state).
2. An empty selector: a ``SelectingAll`` warning and nothing else. Being deleted: nothing.
   A spec no sync can act on (``validation``): warnings and the ``Invalid`` condition.
3. Claim pods and revisions (adopt matching orphans, release strays), then history: the
   current revision hash and the revision writes that keep history consistent.
4. Expectations not yet satisfied, or pods being relabelled to a kept revision: status only,
   without raising ``observedGeneration``.
5. Otherwise manage; if manage writes nothing, the rolling update for the RollingUpdate
   strategy; history cleanup once every pod write went through; the PodDisruptionBudget the
   DaemonSet keeps with ``maxDisruptions`` (``budget``).
6. Status, and the requeue.

The node lifecycle (``nodelifecycle``) enters at three places: each node's facts go into its
outcome (a departing node gets no new pod, ``manage``); the nodes skipped as unhealthy under
``unhealthyNodePolicy: Skip`` are worked out from the table at the sync's time, and with the
departing ones are left out of the rolling update; and both shape the status (the
``RolloutSkippedNodes`` condition, a ``Progressing`` hold once only they are left) and the
budget. The sync comes back when the next unhealthy node crosses its threshold.

The ``SyncPlan`` carries all of that, and ``dsctl.controller.executor.SyncExecutor.run`` carries
it out in the same order, stopping at the first failed stage.

Planning is incremental: a snapshot names the nodes that changed since the previous plan
(``SyncSnapshot.changed``) and carries that plan's ``NodeTable``; only those nodes, the
volatile ones and the nodes of adoptable orphans are re-planned (``nodetable``). Without
them, or when the basis changed, every node is planned, and the result is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from dsctl.daemonset import history as hist
from dsctl.daemonset.access import min_ready_seconds, phase
from dsctl.daemonset.backoffview import BackoffView
from dsctl.daemonset.budget import BudgetPlan, BudgetWrite, plan_budget
from dsctl.daemonset.eligibility import Fit
from dsctl.daemonset.extensions import (
    UNHEALTHY_NODE_POLICY_FIELD,
    InvalidControl,
    RolloutControls,
    burst_replicas,
    deprecated_annotations,
    effective_burst,
    max_disruptions,
    node_readiness_gate,
    rollout_controls,
    set_at,
)
from dsctl.daemonset.inplace import templates_by_hash
from dsctl.daemonset.manage import allows_surge
from dsctl.daemonset.nodelifecycle import node_facts, skipped_message, skipped_nodes
from dsctl.daemonset.nodetable import Basis, NodeOutcome, NodeTable, plan_node
from dsctl.daemonset.ownership import adopt_patch, claim, release_patch
from dsctl.daemonset.podplan import Event, Plan, merge_plans, soonest
from dsctl.daemonset.progress import Hold, last_progress, progressing_condition, rollout_hold, rollout_started
from dsctl.daemonset.reasons import (
    DEPARTING_NODES,
    DEPRECATED_ANNOTATION,
    DISRUPTION_BUDGET_FAILURE,
    INVALID,
    INVALID_ROLLOUT,
    INVALID_ROLLOUT_CONTROL,
    INVALID_SPEC,
    REPLICA_FAILURE,
    REVISION_OUT_OF_RANGE,
    ROLLOUT_SKIPPED_NODES,
    SELECTING_ALL,
    UNHEALTHY_NODES,
)
from dsctl.daemonset.status import Status, availability_requeue
from dsctl.daemonset.template import target_node, template_generation
from dsctl.daemonset.update import (
    InvalidRollout,
    held_nodes,
    plan_no_surge,
    plan_rolling_update,
    update_strategy_type,
)
from dsctl.daemonset.validation import validate_daemonset
from dsctl_api.labels import Selector, SelectorError, selector_from_label_selector
from dsctl_api.objects import as_int, as_map, deletion_timestamp, is_map
from dsctl_api.pods import controller_ref

__all__ = [
    "LIFECYCLE_CONDITIONS",
    "ClusterView",
    "ConditionWrite",
    "OwnershipWrite",
    "StatusPlan",
    "SyncPlan",
    "SyncSnapshot",
    "plan_sync",
]

Obj = Mapping[str, Any]
_TERMINAL = ("Failed", "Succeeded")
SKIP_REQUEUE_MARGIN = 0.5
"""Seconds added to the wait for an unhealthy node to cross ``unhealthyNodeSeconds``: its
``lastTransitionTime`` has whole seconds, and a timer may fire a little early."""
LIFECYCLE_CONDITIONS = (ROLLOUT_SKIPPED_NODES, DISRUPTION_BUDGET_FAILURE)
"""The condition types a sync sets from ``StatusPlan.conditions`` and otherwise removes."""
_SELECTING_ALL = "This daemon set is selecting all pods. A non-empty selector is required."


class ClusterView(Protocol):
    """Read-only access to the caches, read synchronously while a plan is made."""

    def nodes(self) -> Iterable[Obj]: ...

    def node(self, name: str) -> Obj | None: ...

    def pods_on_node(self, node: str) -> Iterable[Obj]:
        """Every cached pod whose target node (``template.target_node``) is ``node``."""
        ...

    def owned_pods(self, uid: str) -> Iterable[Obj]: ...

    def orphan_pods(self, namespace: str) -> Iterable[Obj]: ...

    def owned_revisions(self, uid: str) -> Iterable[Obj]: ...

    def orphan_revisions(self, namespace: str) -> Iterable[Obj]: ...


@dataclass(frozen=True, slots=True)
class SyncSnapshot:
    """Everything one plan is made from. Build it with no await between reading the
    expectations (``satisfied``) and handing it to ``plan_sync``: "satisfied" must mean "this
    snapshot shows every write the controller made"."""

    ds: Obj
    """The DaemonSet, with ``apiVersion`` and ``kind`` set."""
    view: ClusterView
    satisfied: bool
    now: float
    backoff: BackoffView
    fit: Callable[[Obj], Fit]
    """The DaemonSet's eligibility verdict for a node (the caller may cache it by node version)."""
    global_burst: int = 250
    previous: NodeTable | None = None
    changed: frozenset[str] | None = None
    """Nodes whose object or pods changed since ``previous`` was made; None: plan every node."""
    budget: Obj | None = None
    """The cached PodDisruptionBudget of the DaemonSet's namespace and name, if any."""


@dataclass(frozen=True, slots=True)
class OwnershipWrite:
    """Adopt or release one pod or revision: a strategic merge patch."""

    kind: Literal["pods", "revisions"]
    name: str
    namespace: str
    patch: dict[str, Any]
    adopt: bool


@dataclass(frozen=True, slots=True)
class ConditionWrite:
    """Set one condition on the status and nothing else (the sync could not act)."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StatusPlan:
    """The counters to write; ``observed`` raises ``observedGeneration`` (an acting sync).

    ``hold`` is what holds the rollout back on purpose, for the ``Progressing`` condition.
    """

    counters: Status
    observed: bool
    created_revision: bool
    hold: Hold | None = None
    conditions: tuple[ConditionWrite, ...] = ()
    """The ``LIFECYCLE_CONDITIONS`` to set; the others of those types are removed."""
    skipped: int = 0
    """Nodes skipped as unhealthy (``dsctl_daemonset_skipped_nodes``)."""
    held_departing: int = 0
    """Departing nodes where a pod is held back (``dsctl_daemonset_departing_held_nodes``)."""
    progress_since: Callable[[], float | None] | None = None
    """The last progress as the API's objects show it (``progress.last_progress``), for a
    status writer that remembers none; computed only when asked."""


@dataclass(frozen=True, slots=True)
class SyncPlan:
    """What one sync does, in the order ``SyncExecutor.run`` does it.

    ``terminal`` set: nothing to retry until the DaemonSet changes. ``act`` False: the plan
    stops after ``condition`` (or does nothing at all).
    """

    ds: Obj
    act: bool = False
    events: tuple[Event, ...] = ()
    condition: ConditionWrite | None = None
    terminal: str | None = None
    recheck_owner: bool = False
    ownership: tuple[OwnershipWrite, ...] = ()
    history: hist.HistoryPlan | None = None
    pods: Plan = field(default_factory=Plan)
    burst: int = 250
    cleanup: tuple[str, ...] = ()
    status: StatusPlan | None = None
    requeue_after: float | None = None
    requeue_now: bool = False
    table: NodeTable | None = None
    full: bool = True
    """Every node was planned (no previous table could be used)."""
    replanned: int = 0
    """How many nodes were planned."""
    skipped: frozenset[str] = frozenset()
    """Nodes the rolling update leaves out as unhealthy (``unhealthyNodePolicy: Skip``)."""
    budget: BudgetWrite | None = None
    """The PodDisruptionBudget write, if the budget must change."""

    @property
    def status_only(self) -> bool:
        """Expectations pending or pods being relabelled: no pod writes, status not observed."""
        return self.status is not None and not self.status.observed


def plan_sync(snapshot: SyncSnapshot) -> SyncPlan:
    """Decide one sync; see the module docstring for the order."""
    ds = snapshot.ds
    meta, spec = as_map(ds.get("metadata")), as_map(ds.get("spec"))
    selector = _selector(spec)
    if selector is not None and selector.empty:
        return SyncPlan(ds=ds, events=(Event("Warning", SELECTING_ALL, _SELECTING_ALL),))
    if deletion_timestamp(ds):
        return SyncPlan(ds=ds)
    problems = validate_daemonset(ds)
    if problems or selector is None:
        message = "; ".join(str(p) for p in problems) or "spec.selector: unreadable"
        return SyncPlan(ds=ds, events=tuple(Event("Warning", INVALID_SPEC, str(p)) for p in problems[:5]),
                        condition=ConditionWrite(INVALID, INVALID_SPEC, message),
                        terminal=message)
    uid, namespace = str(meta.get("uid") or ""), str(meta.get("namespace") or "")
    api_version, kind = str(ds.get("apiVersion") or "apps/v1"), str(ds.get("kind") or "DaemonSet")
    events = [Event("Warning", DEPRECATED_ANNOTATION, message) for message in deprecated_annotations(ds)]
    ownership: list[OwnershipWrite] = []

    revisions = _claim(ds, snapshot.view.owned_revisions(uid), snapshot.view.orphan_revisions(namespace),
                       selector, kind="revisions", events=events, ownership=ownership,
                       api_version=api_version, ds_kind=kind)
    try:
        history = hist.plan_history(ds=ds, revisions=revisions, pods=_lazy(snapshot.view.owned_pods, uid),
                                    api_version=api_version, kind=kind, now=snapshot.now)
    except hist.RevisionOverflow as exc:
        return SyncPlan(ds=ds, events=(*events, Event("Warning", REVISION_OUT_OF_RANGE, str(exc))),
                        condition=ConditionWrite(REPLICA_FAILURE, REVISION_OUT_OF_RANGE, str(exc)), terminal=str(exc))

    # Not status.observedGeneration, though the failed-pod backoff key holds it: only a node with
    # a failed pod reads that key, and such a node is volatile, planned again every sync.
    basis = Basis(uid=uid, generation=as_int(meta.get("generation")),
                  hash=history.hash, template_generation=template_generation(ds), surge=allows_surge(ds),
                  min_ready=min_ready_seconds(ds))
    table, full, replanned = _plan_nodes(snapshot, selector, basis, events=events, ownership=ownership,
                                         api_version=api_version, kind=kind)
    recheck = any(w.adopt for w in ownership)
    counters = table.status()
    created = history.create is not None
    controls = _read_controls(ds)
    skipped, skip_requeue = _skipped(controls, table, snapshot.now)
    left_out = skipped | table.departing
    hold = _hold(ds, controls, table, history, snapshot.view) or _lifecycle_hold(ds, table, skipped, left_out)
    conditions = _skipped_condition(controls, skipped)
    common = SyncPlan(ds=ds, act=True, recheck_owner=recheck, ownership=tuple(ownership), history=history,
                      table=table, full=full, replanned=replanned, skipped=skipped)

    def since() -> float | None:
        return last_progress(table.all_pods(), hash=history.hash, generation=basis.template_generation,
                             min_ready=basis.min_ready, condition=progressing_condition(ds.get("status")),
                             started=None if created else rollout_started(history.current))

    def status(observed: bool, budget: BudgetPlan | None = None) -> StatusPlan:
        problem = budget.problem if budget is not None else None
        extra = (ConditionWrite(DISRUPTION_BUDGET_FAILURE, *problem),) if problem is not None else ()
        return StatusPlan(counters, observed=observed, created_revision=created, hold=hold,
                          conditions=(*conditions, *extra), skipped=len(skipped), held_departing=len(table.held),
                          progress_since=since)

    if not snapshot.satisfied or history.pod_patches:
        # Pods relabelled to the kept revision still show the old hashes in this snapshot: a
        # rolling update planned on it would replace pods that are current.
        return replace(common, events=tuple(events), status=status(False), requeue_now=bool(history.pod_patches),
                       requeue_after=skip_requeue)

    pods = table.manage_plan()
    if not pods.has_writes:
        pods = _with_rolling_update(ds, table, history, pods, controls=controls, view=snapshot.view,
                                    now=snapshot.now, events=events, excluded=left_out)
    burst = _burst(ds, snapshot.global_burst, events)
    cleanup = tuple(hist.plan_history_cleanup(ds=ds, old_revisions=history.old,
                                              pods=_all_pods(snapshot.view, uid, table))) if history.old else ()
    desired_skipped = sum(1 for n in skipped if _should_run(table.outcomes.get(n)))
    budget = _budget(ds, snapshot.budget, table, pods, skipped=desired_skipped, api_version=api_version, kind=kind)
    events.extend(budget.events)
    return replace(common, events=tuple(events), pods=pods, burst=burst, cleanup=cleanup, budget=budget.write,
                   status=status(True, budget),
                   requeue_after=soonest(soonest(pods.requeue_after, availability_requeue(ds, counters)),
                                         skip_requeue))


# -- claim ------------------------------------------------------------------------------------


def _selector(spec: Mapping[str, Any]) -> Selector | None:
    try:
        return selector_from_label_selector(spec.get("selector"))
    except (SelectorError, TypeError, ValueError):
        return None


def _claim(
    ds: Obj, owned: Iterable[Obj], orphans: Iterable[Obj], selector: Selector, *, kind: Literal["pods", "revisions"],
    events: list[Event], ownership: list[OwnershipWrite], api_version: str, ds_kind: str,
) -> list[Obj]:
    """The objects ``ds`` owns once the planned adoptions and releases are done."""
    meta = as_map(ds.get("metadata"))
    uid, namespace = str(meta.get("uid") or ""), str(meta.get("namespace") or "")
    verdict = claim([*owned, *orphans], owner_uid=uid, selector=selector, owner_namespace=namespace,
                    owner_deleting=bool(deletion_timestamp(ds)))
    result = list(verdict.owned)
    for obj in verdict.to_adopt:
        refusal = hist.adoption_refusal(obj) if kind == "revisions" else None
        if refusal is not None:
            events.append(Event("Warning", REVISION_OUT_OF_RANGE, refusal))
            continue
        obj_meta = as_map(obj.get("metadata"))
        ownership.append(OwnershipWrite(kind, str(obj_meta.get("name") or ""), str(obj_meta.get("namespace") or ""),
                                        adopt_patch(ds, obj, api_version=api_version, kind=ds_kind), adopt=True))
        result.append(obj)
    for obj in verdict.to_release:
        obj_meta = as_map(obj.get("metadata"))
        ownership.append(OwnershipWrite(kind, str(obj_meta.get("name") or ""), str(obj_meta.get("namespace") or ""),
                                        release_patch(uid, obj), adopt=False))
    return result


def _lazy(read: Callable[[str], Iterable[Obj]], arg: str) -> Iterable[Obj]:
    yield from read(arg)


def _all_pods(view: ClusterView, uid: str, table: NodeTable) -> Iterable[Obj]:
    """Claimed pods plus owned ones the table leaves out (terminating, terminal, unplaced): a
    pod on its way out still protects its revision from cleanup. Lazy: cleanup with nothing
    to delete never walks them."""
    yield from table.all_pods()
    yield from view.owned_pods(uid)


# -- nodes ------------------------------------------------------------------------------------


def _plannable(pod: Obj) -> bool:
    """Pods the planners see: objects with a target node, minus terminal ones being deleted."""
    return is_map(pod) and not (deletion_timestamp(pod) and phase(pod) in _TERMINAL)


def _plan_nodes(
    snapshot: SyncSnapshot, selector: Selector, basis: Basis, *, events: list[Event],
    ownership: list[OwnershipWrite], api_version: str, kind: str,
) -> tuple[NodeTable, bool, int]:
    """Claim pods and re-plan nodes: the changed ones with a usable previous table, else all."""
    ds, view, now = snapshot.ds, snapshot.view, snapshot.now
    meta = as_map(ds.get("metadata"))
    uid, namespace = str(meta.get("uid") or ""), str(meta.get("namespace") or "")
    previous = snapshot.previous
    orphans = list(view.orphan_pods(namespace))
    incremental = snapshot.changed is not None and previous is not None and previous.basis == basis
    if incremental:
        assert previous is not None and snapshot.changed is not None
        nodes = set(snapshot.changed) | previous.volatile
        nodes.update(n for o in orphans if (n := target_node(o)))
        candidates = [p for n in nodes for p in view.pods_on_node(n) if _mine(p, uid)]
        # Orphans without a target node are claimed too (adopted or left), never planned.
        candidates.extend(o for o in orphans if not target_node(o))
    else:
        previous = NodeTable(basis=basis)
        candidates = list(view.owned_pods(uid))
        candidates.extend(orphans)
    owned = _claim(ds, candidates, (), selector, kind="pods", events=events, ownership=ownership,
                   api_version=api_version, ds_kind=kind)
    by_node: dict[str, list[Obj]] = {}
    for pod in owned:
        target = target_node(pod) if _plannable(pod) else None
        if target:
            by_node.setdefault(target, []).append(pod)
    if not incremental:
        nodes = {str(as_map(n.get("metadata")).get("name") or "") for n in view.nodes()} | set(by_node)
        nodes.discard("")
    outcomes: list[NodeOutcome] = []
    for name in sorted(nodes):
        node = view.node(name)
        fit = snapshot.fit(node) if node is not None else None
        outcomes.append(plan_node(ds, basis, name, fit, by_node.get(name, ()), now=now, backoff=snapshot.backoff,
                                  facts=node_facts(node)))
    return previous.updated(outcomes), not incremental, len(outcomes)


def _mine(pod: Obj, uid: str) -> bool:
    """Owned by ``uid`` (or an orphan: the claim decides) and not someone else's."""
    ref = controller_ref(pod)
    return ref is None or ref.get("uid") == uid


# -- rolling update, burst --------------------------------------------------------------------


def _read_controls(ds: Obj) -> RolloutControls | InvalidControl:
    """The rollout controls, or the first extension field that cannot be read. An unreadable
    ``nodeReadinessGate`` holds the rollout like an unreadable control: it is reported the same way,
    and the gate itself takes it as true (ADR 0172)."""
    try:
        controls = rollout_controls(ds)
        node_readiness_gate(ds)
    except InvalidControl as exc:
        return exc
    return controls


def _node_labels(view: ClusterView) -> dict[str, Mapping[str, Any]]:
    return {str(as_map(n.get("metadata")).get("name") or ""): as_map(as_map(n.get("metadata")).get("labels"))
            for n in view.nodes()}


def _hold(ds: Obj, controls: RolloutControls | InvalidControl, table: NodeTable, history: hist.HistoryPlan,
          view: ClusterView) -> Hold | None:
    """What holds the rolling update back, counted as the rolling update counts it; None for
    OnDelete (the controls do not apply) or when nothing is held."""
    try:
        if update_strategy_type(ds) != "RollingUpdate":
            return None
    except InvalidRollout:
        return None
    held = 0
    if isinstance(controls, RolloutControls):
        if not controls.holds_back:
            return None
        if table.old:
            labels = _node_labels(view) if controls.selector is not None else None
            held = len(held_nodes(ds=ds, nodes_should_run=table.should_run(), pods_by_node=table.pods_by_node(),
                                  hash=history.hash, controls=controls, node_labels=labels))
    return rollout_hold(ds, controls, held=held, desired=table.totals[0])


def _skipped(controls: RolloutControls | InvalidControl, table: NodeTable, now: float
             ) -> tuple[frozenset[str], float | None]:
    """The nodes ``unhealthyNodePolicy: Skip`` leaves out now, and when to look again for the next."""
    if not isinstance(controls, RolloutControls) or not controls.skips_unhealthy or not table.unhealthy:
        return frozenset(), None
    skipped, wait = skipped_nodes(table.unhealthy_since(), seconds=controls.unhealthy_node_seconds, now=now)
    return skipped, None if wait is None else wait + SKIP_REQUEUE_MARGIN


def _skipped_condition(controls: RolloutControls | InvalidControl, skipped: frozenset[str]
                       ) -> tuple[ConditionWrite, ...]:
    if not skipped or not isinstance(controls, RolloutControls):
        return ()
    return (ConditionWrite(ROLLOUT_SKIPPED_NODES, UNHEALTHY_NODES,
                           skipped_message(sorted(skipped), seconds=controls.unhealthy_node_seconds)),)


def _lifecycle_hold(ds: Obj, table: NodeTable, skipped: frozenset[str], left_out: frozenset[str]) -> Hold | None:
    """The hold once every node but those left out (skipped, departing) runs an available pod
    of the current revision: the rollout waits for them on purpose, and no deadline runs."""
    if not left_out:
        return None
    try:
        if update_strategy_type(ds) != "RollingUpdate":
            return None
    except InvalidRollout:
        return None
    desired, _, _, _, available, updated = table.without(left_out)
    if not desired == updated == available:
        return None
    waiting = [n for n in left_out if _incomplete(table.outcomes.get(n))]
    if not waiting:
        return None
    unhealthy = sum(1 for n in waiting if n in skipped)
    parts = []
    if unhealthy:
        noun = "node" if unhealthy == 1 else "nodes"
        parts.append(f"{unhealthy} {noun} skipped as unhealthy ({set_at(ds, UNHEALTHY_NODE_POLICY_FIELD)} Skip)")
    if len(waiting) > unhealthy:
        gone = len(waiting) - unhealthy
        parts.append(f"{gone} departing {'node' if gone == 1 else 'nodes'}")
    return Hold(UNHEALTHY_NODES if unhealthy else DEPARTING_NODES,
                f"waits for {' and '.join(parts)}: every other node is updated")


def _should_run(outcome: NodeOutcome | None) -> bool:
    return outcome is not None and outcome.fit is not None and outcome.fit.should_run


def _incomplete(outcome: NodeOutcome | None) -> bool:
    """Whether a node keeps the counters from saying the rollout is complete."""
    if outcome is None:
        return False
    desired, _, _, _, available, updated = outcome.counts
    return bool(desired) and not (available and updated)


def _budget(ds: Obj, existing: Obj | None, table: NodeTable, pods: Plan, *, skipped: int, api_version: str,
            kind: str) -> BudgetPlan:
    """The budget plan, counting this sync's surge creates (beside a running pod) as extra."""
    try:
        wanted: int | InvalidControl | None = max_disruptions(ds, desired=table.totals[0])
    except InvalidControl as exc:
        wanted = exc
    if wanted is None and existing is None:
        return BudgetPlan()
    surging = 0
    for node in pods.creates if isinstance(wanted, int) else ():
        outcome = table.outcomes.get(node)
        if outcome is not None and any(not deletion_timestamp(p) and phase(p) not in _TERMINAL for p in outcome.pods):
            surging += 1
    return plan_budget(ds, existing, max_disruptions=wanted, desired=table.totals[0], skipped=skipped,
                       extra=table.extra + surging, api_version=api_version, kind=kind)


def _with_rolling_update(ds: Obj, table: NodeTable, history: hist.HistoryPlan, manage: Plan, *,
                         controls: RolloutControls | InvalidControl, view: ClusterView, now: float,
                         events: list[Event], excluded: frozenset[str] = frozenset()) -> Plan:
    """Manage's plan (which writes nothing) merged with the rolling update's.

    The per-node pass runs only while some node holds a pod of another revision
    (``NodeTable.old``); otherwise only the strategy is checked, as the full pass would.
    Without surge and with no rollout control holding nodes back, it is read from the roles
    the table keeps per node (``update.plan_no_surge``); otherwise every node is walked. An
    unreadable control holds the whole rolling update, and says so.
    """
    if isinstance(controls, InvalidControl):
        events.append(Event("Warning", INVALID_ROLLOUT_CONTROL,
                            f"{controls.field}: {controls.message}; the rolling update is held until it is fixed"))
        controls = RolloutControls(paused=True)
    has_old = table.old > 0
    if has_old and not controls.holds_back and table.basis is not None and not table.basis.surge:
        # Without surge and with no node held back, the table keeps each node's part in the
        # pass: the same plan at a cost that follows what changed (ADR 0195).
        try:
            update = plan_no_surge(ds=ds, nodes=table.no_surge_nodes(excluded), hash=history.hash,
                                   controls=controls,
                                   old_templates=templates_by_hash(history.old) if controls.in_place else None)
        except InvalidRollout as exc:
            events.append(Event("Warning", INVALID_ROLLOUT, f"{exc.field}: {exc.message}"))
            return manage
        return merge_plans([manage, update]) if not update.empty else manage
    should_run = table.should_run() if has_old else [""] * table.totals[0]
    labels = _node_labels(view) if controls.selector is not None and has_old else None
    old_templates = templates_by_hash(history.old) if controls.in_place and has_old else None
    try:
        update = plan_rolling_update(ds=ds, nodes_should_run=should_run,
                                     pods_by_node=table.pods_by_node() if has_old else {}, hash=history.hash,
                                     now=now, controls=controls, node_labels=labels,
                                     old_templates=old_templates, has_old=has_old, excluded=excluded)
    except InvalidRollout as exc:
        events.append(Event("Warning", INVALID_ROLLOUT, f"{exc.field}: {exc.message}"))
        return manage
    return merge_plans([manage, update]) if not update.empty else manage


def _burst(ds: Obj, global_burst: int, events: list[Event]) -> int:
    """min(--burst-replicas, the DaemonSet's burstReplicas); an unreadable one is reported."""
    try:
        burst_replicas(ds)
    except InvalidControl as exc:
        events.append(Event("Warning", INVALID_ROLLOUT_CONTROL,
                            f"{exc.field}: {exc.message}; --burst-replicas applies"))
    return effective_burst(ds, global_burst=global_burst)
