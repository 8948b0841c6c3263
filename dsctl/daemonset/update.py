"""RollingUpdate planning: which old pods to delete and where to surge new ones, within budget.

The rolling update runs after manage, over the same cached pods, and only for the
``RollingUpdate`` strategy (``OnDelete`` replaces nothing: manage recreates a pod only after the
user deletes it, and the replacement carries the new hash). It never creates a pod on a node
that has none and never handles failed pods: that is manage's job. Its only levers are
deleting old pods (no surge) or creating a second, new pod beside an old one (surge).

Budgets follow upstream: ``maxUnavailable`` and ``maxSurge`` are ints or percentages of the
desired node count, rounded up; both 0 means ``maxUnavailable = 1``. When ``maxSurge > 0`` the
surge path is taken and ``maxUnavailable`` plays no part in it.

Nodes are visited in name order (upstream uses Go's random map order), so plans are
deterministic and table tests can pin exact pods.

The rollout controls of ``extensions`` (``partition``, ``paused``, a node ``selector``) freeze
some old pods: a frozen node is never updated, but its availability still counts against
``maxUnavailable``, so holding pods back can only make a pass more careful.

Nodes the caller leaves out (``excluded``: nodes skipped as unhealthy under
``unhealthyNodePolicy: Skip``, and departing nodes, see ``dsctl.daemonset.nodelifecycle``) are
invisible to a pass: their pods are neither updated nor counted against ``maxUnavailable`` or
``maxSurge``. A skipped node that recovers is an ordinary node again, updated within the budget.

With ``rollingUpdateType: InPlaceIfPossible`` (which requires ``maxSurge: 0``) the no-surge
path picks pods exactly as before, within the same budget, and then turns each pick whose
revision differs from the current one only in container images into a ``PodUpdate`` instead
of a delete (``dsctl.daemonset.inplace``). A patched pod carries the current hash at once but
counts as unavailable until its kubelet has restarted the changed containers and it is Ready.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from dsctl.daemonset.access import min_ready_seconds, template, update_strategy
from dsctl.daemonset.extensions import NO_CONTROLS, RolloutControls, frozen_nodes
from dsctl.daemonset.inplace import in_place_pending, plan_pod_update
from dsctl.daemonset.podplan import ImageChange, Plan, PodRef, PodUpdate, soonest
from dsctl.daemonset.template import is_pod_updated, template_generation
from dsctl_api.intstr import IntStrError, scaled_value
from dsctl_api.objects import as_map, deletion_timestamp, uid
from dsctl_api.pods import is_pod_available, is_pod_ready, pod_ready_condition
from dsctl_api.timefmt import parse_rfc3339

__all__ = [
    "AVAILABILITY_REQUEUE_MARGIN",
    "AVAILABLE",
    "CANDIDATE",
    "OUT",
    "REPLACE",
    "UNAVAILABLE",
    "InvalidRollout",
    "NoSurgeNodes",
    "NodePods",
    "RolloutLimits",
    "find_updated_pods_on_node",
    "held_nodes",
    "is_pod_updated",
    "max_surge",
    "max_unavailable",
    "no_surge_role",
    "plan_no_surge",
    "plan_rolling_update",
    "rollout_limits",
    "update_strategy_type",
    "updated_desired_node_counts",
]

AVAILABILITY_REQUEUE_MARGIN = 1.0
"""Seconds added to a minReadySeconds wait: availability needs *strictly* more than
minReadySeconds, and timers may fire a little early, so waking exactly on time would find the
pod still unavailable and requeue with a zero delay. One second, as upstream's pod handler and
our manage planner use."""

_ROLLING = "RollingUpdate"
_ON_DELETE = "OnDelete"
_FIELD = "spec.updateStrategy"

Obj = Mapping[str, Any]


class InvalidRollout(ValueError):
    """The DaemonSet's update strategy cannot be planned; ``field`` names the offending path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class RolloutLimits(NamedTuple):
    """Absolute budgets for one rolling-update pass."""

    max_surge: int
    max_unavailable: int
    desired: int


class NodePods(NamedTuple):
    """A node's non-terminating pods split by template; ``ok`` is False when either side has 2+."""

    new: Obj | None
    old: Obj | None
    ok: bool


def update_strategy_type(ds: Obj) -> str:
    """``RollingUpdate`` or ``OnDelete``; unset means the API default, RollingUpdate."""
    kind = update_strategy(ds).get("type")
    if kind in (None, ""):
        return _ROLLING
    if kind not in (_ROLLING, _ON_DELETE):
        raise InvalidRollout(f"{_FIELD}.type", f"unsupported value {kind!r}: must be RollingUpdate or OnDelete")
    return str(kind)


def _scaled(ds: Obj, key: str, desired: int) -> int:
    if update_strategy_type(ds) != _ROLLING:
        return 0
    value = as_map(update_strategy(ds).get("rollingUpdate")).get(key)
    try:
        return scaled_value(value, desired, round_up=True)
    except IntStrError as exc:
        raise InvalidRollout(f"{_FIELD}.rollingUpdate.{key}", str(exc)) from exc


def max_surge(ds: Obj, desired: int) -> int:
    """``maxSurge`` against ``desired`` nodes (percent rounded up); 0 unless RollingUpdate."""
    return _scaled(ds, "maxSurge", desired)


def max_unavailable(ds: Obj, desired: int) -> int:
    """``maxUnavailable`` against ``desired`` nodes (percent rounded up), before the 0/0 rule."""
    return _scaled(ds, "maxUnavailable", desired)


def updated_desired_node_counts(ds: Obj, nodes_should_run: Collection[str]) -> RolloutLimits:
    """The budgets for this pass: desired = nodes where the pod should run.

    If both budgets come out 0 with something desired, ``maxUnavailable`` becomes 1 so the
    rollout can progress (the API rejects 0/0, but a stale or hand-made object may carry it).
    Raises ``InvalidRollout`` on malformed values.
    """
    return rollout_limits(ds, len(nodes_should_run))


def rollout_limits(ds: Obj, desired: int) -> RolloutLimits:
    """``updated_desired_node_counts`` for a caller that knows only how many nodes should run the pod."""
    surge = max_surge(ds, desired)
    unavailable = max_unavailable(ds, desired)
    if desired > 0 and surge == 0 and unavailable == 0:
        unavailable = 1
    return RolloutLimits(max_surge=surge, max_unavailable=unavailable, desired=desired)


def find_updated_pods_on_node(pods: Sequence[Obj], template_hash: str, generation: int | None) -> NodePods:
    """At most one new and one old pod among the node's pods that are not terminating.

    More than one of either kind gives ``ok=False``: manage prunes duplicates first, and the
    rolling update leaves such a node alone until it has.
    """
    new: Obj | None = None
    old: Obj | None = None
    for pod in pods:
        if deletion_timestamp(pod):
            continue
        if is_pod_updated(pod, template_hash, generation):
            if new is not None:
                return NodePods(None, None, False)
            new = pod
        else:
            if old is not None:
                return NodePods(None, None, False)
            old = pod
    return NodePods(new, old, True)


def _availability_wait(pod: Obj, min_ready: int, now: float) -> float | None:
    """Seconds until a Ready but not yet available pod counts as available; None if not Ready."""
    if min_ready <= 0 or not is_pod_ready(pod):
        return None
    condition = pod_ready_condition(pod) or {}
    try:
        since = parse_rfc3339(str(condition.get("lastTransitionTime") or ""))
    except ValueError:
        return None  # availability can never be established for it; a requeue would spin
    # A transition time in the future (clock skew) must not postpone us past one full wait.
    wait = min(max(since + min_ready - now, 0.0), min_ready)
    return wait + AVAILABILITY_REQUEUE_MARGIN


@dataclass(slots=True)
class _Pass:
    """Shared inputs of one rolling-update pass and the requeue it accumulates."""

    min_ready: int
    now: float
    frozen: frozenset[str] = frozenset()
    requeue: float | None = None

    def available(self, pod: Obj) -> bool:
        """Whether ``pod`` is available now; if it is only Ready, note when to look again."""
        if is_pod_available(pod, self.min_ready, self.now) and not in_place_pending(pod):
            return True
        wait = _availability_wait(pod, self.min_ready, self.now)
        if wait is not None:
            self.requeue = soonest(self.requeue, wait)
        return False


def plan_rolling_update(
    *,
    ds: Obj,
    nodes_should_run: Collection[str],
    pods_by_node: Mapping[str, Sequence[Obj]],
    hash: str,
    now: float,
    controls: RolloutControls = NO_CONTROLS,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
    old_templates: Mapping[str, Obj] | None = None,
    has_old: bool | None = None,
    excluded: frozenset[str] = frozenset(),
) -> Plan:
    """Plan one rolling-update pass: old pods to delete and nodes to surge onto.

    ``nodes_should_run`` are the existing nodes where the pod should run (``should_run``);
    ``pods_by_node`` maps target node names to the DaemonSet's pods there (terminal pods that
    are already being deleted may be left out, as upstream does). Nodes absent from
    ``nodes_should_run``, including nodes that no longer exist, count as should-not-run.
    ``hash`` is the current revision's hash (``HistoryPlan.hash``).

    ``requeue_after`` is set when some pod is Ready but not yet available for minReadySeconds:
    it is the time until the first of them becomes available. OnDelete yields an empty plan,
    and so does ``controls.paused``. ``node_labels`` (node name to labels) is read only for
    ``controls.selector``. ``old_templates`` (revision hash to stored template, see
    ``inplace.templates_by_hash``) is read only for ``controls.in_place``. ``has_old`` False
    tells that no live pod is of another revision (a caller that keeps count, see
    ``nodetable.NodeTable.old``); then only the strategy is checked. ``excluded`` nodes are left
    out of the pass altogether (see the module docstring). Raises ``InvalidRollout`` for a
    malformed strategy.
    """
    if update_strategy_type(ds) != _ROLLING or controls.paused:
        return Plan()
    limits = updated_desired_node_counts(ds, nodes_should_run)
    generation = template_generation(ds)
    if has_old is False or not _has_old_pods(pods_by_node, hash, generation):
        # Nothing to roll: both paths only ever act on nodes that hold an old pod. This is the
        # steady state, and skipping the per-node pass here halves the cost of a no-op sync.
        return Plan()
    view = {node: list(pods_by_node.get(node, ())) for node in {*pods_by_node, *nodes_should_run}}
    nodes = [(name, find_updated_pods_on_node(view[name], hash, generation)) for name in sorted(view)]
    state = _Pass(min_ready=min_ready_seconds(ds), now=now, frozen=_frozen(nodes, controls, node_labels or {}))
    if excluded:
        nodes = [(name, found) for name, found in nodes if name not in excluded]
    updates: list[PodUpdate] = []
    if limits.max_surge == 0:
        deletes: list[PodRef] = _no_surge(nodes, limits, state)
        creates: list[str] = []
        if controls.in_place and deletes:
            old_pods = {uid(found.old): found.old for _, found in nodes if found.old is not None}
            deletes, updates = _in_place(ds, old_pods, deletes, old_templates=old_templates or {}, hash=hash,
                                         generation=generation)
    else:
        creates, deletes = _surge(nodes, limits, state, set(nodes_should_run))
    return Plan(creates=tuple(creates), deletes=tuple(deletes), updates=tuple(updates),
                requeue_after=state.requeue)


def held_nodes(
    *,
    ds: Obj,
    nodes_should_run: Collection[str],
    pods_by_node: Mapping[str, Sequence[Obj]],
    hash: str,
    controls: RolloutControls,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> frozenset[str]:
    """The nodes whose old pod ``controls`` keep from the rolling update: the frozen set that
    ``plan_rolling_update`` leaves alone, from the same inputs (what a held rollout reports)."""
    generation = template_generation(ds)
    view = {node: list(pods_by_node.get(node, ())) for node in {*pods_by_node, *nodes_should_run}}
    nodes = [(name, find_updated_pods_on_node(view[name], hash, generation)) for name in sorted(view)]
    return _frozen(nodes, controls, node_labels or {})


def _in_place(
    ds: Obj, old_pods: Mapping[str, Obj], picked: list[PodRef], *, old_templates: Mapping[str, Obj],
    hash: str, generation: int | None,
) -> tuple[list[PodRef], list[PodUpdate]]:
    """Split the pods the no-surge pass picked (``old_pods`` by UID) into in-place updates and deletes."""
    current = template(ds)
    memo: dict[str, tuple[ImageChange, ...] | None] = {}
    deletes: list[PodRef] = []
    updates: list[PodUpdate] = []
    for ref in picked:
        pod = old_pods.get(ref.uid)
        update = None if pod is None else plan_pod_update(
            pod, ref, old_templates=old_templates, template=current, hash=hash, generation=generation, memo=memo)
        if update is None:
            deletes.append(ref)
        else:
            updates.append(update)
    return deletes, updates


def _frozen(
    nodes: list[tuple[str, NodePods]], controls: RolloutControls, node_labels: Mapping[str, Mapping[str, str]]
) -> frozenset[str]:
    """The nodes whose old pod this pass must leave alone (see ``dsctl.daemonset.extensions``)."""
    if not controls.holds_back:
        return frozenset()
    old_only = [name for name, found in nodes if found.ok and found.old is not None and found.new is None]
    settled = [name for name, found in nodes if not (found.ok and found.old is not None and found.new is None)]
    return frozen_nodes(controls, old_only=old_only, settled=settled, node_labels=node_labels)


def _has_old_pods(pods_by_node: Mapping[str, Sequence[Obj]], template_hash: str, generation: int | None) -> bool:
    """Whether any live (not terminating) pod is of another revision."""
    for pods in pods_by_node.values():
        for pod in pods:
            if not deletion_timestamp(pod) and not is_pod_updated(pod, template_hash, generation):
                return True
    return False


OUT = 0
"""No pod there and none should run: the node is not part of the pass."""
UNAVAILABLE = 1
"""Counts as unavailable and offers nothing to delete (no pod, a new pod not yet available,
an old and a new pod, or an excess that manage prunes first)."""
AVAILABLE = 2
"""Runs an available new pod."""
REPLACE = 3
"""Runs an old pod that is unavailable: counts as unavailable, and its pod goes at once."""
CANDIDATE = 4
"""Runs an available old pod: deleted while the budget allows, in node-name order."""


def _role(found: NodePods, state: _Pass) -> int:
    """A node's part in the no-surge pass (``OUT`` is the caller's: a node outside the view)."""
    new, old = found.new, found.old
    if not found.ok or (new is None) == (old is None):
        return UNAVAILABLE
    if new is not None:
        return AVAILABLE if state.available(new) else UNAVAILABLE
    assert old is not None
    return CANDIDATE if state.available(old) else REPLACE


def no_surge_role(pods: Sequence[Obj], *, should_run: bool, hash: str, generation: int | None, min_ready: int,
                  now: float) -> tuple[int, float | None]:
    """One node's part in the no-surge pass at ``now``, and the requeue its pods ask for (a Ready
    pod not yet available): what ``plan_rolling_update`` finds for the node, kept per node by a
    caller that re-plans only the nodes that changed (``nodetable.NodeTable``, ADR 0195).

    Both depend on time only while a pod waits out ``minReadySeconds``, and such a node is
    re-planned every sync (``NodeOutcome.volatile``).
    """
    if not pods and not should_run:
        return OUT, None
    state = _Pass(min_ready=min_ready, now=now)
    return _role(find_updated_pods_on_node(pods, hash, generation), state), state.requeue


def _no_surge(nodes: list[tuple[str, NodePods]], limits: RolloutLimits, state: _Pass) -> list[PodRef]:
    # Assumptions:
    # - manage keeps at most one pod per node, recreates a pod on every node left empty (with
    #   the new template) and deals with failed pods; this pass only deletes.
    # - Terminating pods are invisible here: a node whose only pod is terminating looks empty,
    #   and an empty node counts as unavailable (it has no available pod right now).
    # Invariants:
    # - Nodes without an available pod never exceed maxUnavailable because of this pass: at
    #   most maxUnavailable - numUnavailable available old pods are deleted (none if negative).
    # - An old pod that is already unavailable is always replaced: deleting it costs nothing.
    # - A node with an excess of pods (ok=False) or with both an old and a new pod is left to
    #   manage and counted as unavailable.
    # - A frozen node (partition, selector) keeps its old pod, available or not, and still counts.
    # - The pods picked are the unavailable old ones and then the first available old ones by
    #   node name: ``plan_no_surge`` picks the same from per-node roles.
    unavailable = 0
    replace: list[PodRef] = []
    candidates: list[PodRef] = []
    for node, found in nodes:
        role = _role(found, state)
        if role == UNAVAILABLE:
            unavailable += 1
        elif role == REPLACE:
            assert found.old is not None
            if node not in state.frozen:
                replace.append(PodRef.of(found.old, node=node))
            unavailable += 1
        elif role == CANDIDATE and node not in state.frozen:
            assert found.old is not None
            candidates.append(PodRef.of(found.old, node=node))
    budget = max(0, min(limits.max_unavailable - unavailable, len(candidates)))
    return replace + candidates[:budget]


@dataclass(frozen=True, slots=True)
class NoSurgeNodes:
    """The no-surge pass's sums over per-node roles (``no_surge_role``), as a caller that keeps
    them per node hands them over, the nodes left out of the pass already taken out."""

    desired: int
    """Nodes where the pod should run (the budget's base)."""
    unavailable: int
    """Nodes whose role is ``UNAVAILABLE`` or ``REPLACE``."""
    replace: Sequence[str]
    """The ``REPLACE`` nodes, in name order."""
    candidates: Callable[[int], Sequence[str]]
    """The first ``count`` ``CANDIDATE`` nodes in name order."""
    old_pod: Callable[[str], Obj | None]
    """The old pod on a ``REPLACE`` or ``CANDIDATE`` node."""
    requeue: float | None = None
    """The soonest requeue the nodes' pods ask for."""


def plan_no_surge(*, ds: Obj, nodes: NoSurgeNodes, hash: str, controls: RolloutControls = NO_CONTROLS,
                  old_templates: Mapping[str, Obj] | None = None) -> Plan:
    """``plan_rolling_update`` without surge and with nothing frozen, from per-node roles: the
    same plan, at a cost that follows the pods it deletes rather than the nodes (ADR 0195).

    The caller has checked that some live pod is of another revision, that the DaemonSet allows
    no surge and that ``controls`` hold no node back. Raises ``InvalidRollout`` for a malformed
    strategy.
    """
    if update_strategy_type(ds) != _ROLLING or controls.paused:
        return Plan()
    limits = rollout_limits(ds, nodes.desired)
    assert limits.max_surge == 0 and not controls.holds_back
    # The invariants of ``_no_surge`` hold: the unavailable old pods go, then at most
    # maxUnavailable - numUnavailable available ones, the first by node name.
    budget = max(0, limits.max_unavailable - nodes.unavailable)
    picked = [*nodes.replace, *(nodes.candidates(budget) if budget else ())]
    refs: list[PodRef] = []
    old_pods: dict[str, Obj] = {}
    for node in picked:
        pod = nodes.old_pod(node)
        assert pod is not None, node
        refs.append(PodRef.of(pod, node=node))
        old_pods[uid(pod)] = pod
    updates: list[PodUpdate] = []
    if controls.in_place and refs:
        refs, updates = _in_place(ds, old_pods, refs, old_templates=old_templates or {}, hash=hash,
                                  generation=template_generation(ds))
    return Plan(deletes=tuple(refs), updates=tuple(updates), requeue_after=nodes.requeue)


def _surge(
    nodes: list[tuple[str, NodePods]], limits: RolloutLimits, state: _Pass, should_run: set[str]
) -> tuple[list[str], list[PodRef]]:
    # Assumptions:
    # - manage keeps at most two pods per node (one old, one new), creates a pod on an empty
    #   node, deals with failed pods, and itself deletes an old pod once its new neighbour is
    #   available; deleting it here too is harmless (same pod, deduplicated by the executor).
    # - Terminating pods are invisible here, as in the no-surge path.
    # Invariants:
    # - An eligible node whose old pod is unavailable gets its new pod at once, outside the
    #   maxSurge budget: nothing is lost by it.
    # - No more than maxSurge nodes wait for a new pod beside an available old one.
    # - An old pod goes only when its node's new pod is available.
    # - Old pods on nodes that lost eligibility go only while more nodes are available than
    #   desired, so moving the DaemonSet between nodes never drops availability.
    # - A frozen node (partition, selector) gets no surge pod and keeps its old pod.
    surging = 0
    available_nodes = 0
    deletes: list[PodRef] = []
    unwanted: list[PodRef] = []
    allowed: list[str] = []
    candidates: list[str] = []
    for node, found in nodes:
        if not found.ok:
            surging += 1
            continue
        new, old = found.new, found.old
        # Availability counts the node's old pod when it has one, else its new pod, even on
        # nodes being retired.
        counted = old if old is not None else new
        if counted is not None and state.available(counted):
            available_nodes += 1
        if old is None:
            continue  # nothing to replace; manage creates on an empty node
        if new is None and node in state.frozen:
            continue
        if new is None:
            if not state.available(old):
                if node in should_run:
                    allowed.append(node)
                else:
                    deletes.append(PodRef.of(old, node=node))
            elif node not in should_run:
                unwanted.append(PodRef.of(old, node=node))
            elif surging < limits.max_surge:
                candidates.append(node)
        elif not state.available(new):
            surging += 1
        else:
            deletes.append(PodRef.of(old, node=node))
    spare = max(0, min(available_nodes - limits.desired, len(unwanted)))
    deletes.extend(unwanted[:spare])
    budget = max(0, min(limits.max_surge - surging, len(candidates)))
    return allowed + candidates[:budget], deletes
