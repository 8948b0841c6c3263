"""The manage planner: make every node hold exactly the daemon pods it should.

For each node, given its verdict (``eligibility``) and the DaemonSet's pods targeting it:

- should run, no pod at all: create one.
- may keep running: look at the pods that are not already being deleted.
  - Failed: delete it and warn (``FailedDaemonPod``), unless the node is inside its
    failed-pod backoff; then leave it and requeue for when the backoff ends. At most one
    failed pod per node is replaced per sync, since replacing one starts the backoff.
  - Succeeded: delete it (``SucceededDaemonPod``); a daemon is not meant to exit.
  - The rest are running. Without surge, keep the first in ``podsort`` order and delete the
    others. A node whose only pods were just deleted gets its new pod on the next sync, when
    the deletions have been observed.
  - With surge, keep the oldest pod of the current hash and the oldest of any other hash,
    delete the rest, and delete the kept old pod once it is not Ready or the new one is
    available. A node left with no live pod gets one right away (surge tolerates two),
    unless a failed pod stays there for its backoff.
- may not keep running: delete every pod not already being deleted.
- departing (``nodelifecycle``): nothing is created and failed or succeeded pods are left as
  they are, not replaced; running pods stay, surplus ones are still pruned.

Separately, pods pinned by affinity to a node that no longer exists and never bound are
deleted: nothing else would ever remove them. Bound pods of vanished nodes are pod GC's job.

The plan is pure; ``slow_start_batches`` and ``cap_burst`` shape how the executor sends it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dsctl.daemonset.access import bound_node, min_ready_seconds, phase, update_strategy
from dsctl.daemonset.backoffview import BackoffView, backoff_key
from dsctl.daemonset.eligibility import Fit, verdicts
from dsctl.daemonset.podplan import Event, Plan, PodRef, merge_plans, soonest
from dsctl.daemonset.podsort import sort_pods
from dsctl.daemonset.reasons import FAILED_DAEMON_POD, SUCCEEDED_DAEMON_POD
from dsctl.daemonset.template import HASH_LABEL
from dsctl_api.intstr import IntStrError, scaled_value
from dsctl_api.objects import deletion_timestamp, is_map, labels, name, namespace, text
from dsctl_api.pods import is_pod_available, is_pod_ready, pod_ready_condition
from dsctl_api.timefmt import parse_rfc3339

__all__ = [
    "BURST_REPLICAS",
    "allows_surge",
    "cap_burst",
    "manage_node",
    "plan_manage",
    "slow_start_batches",
]

BURST_REPLICAS = 250
"""Most creates, and separately most deletes, one sync sends."""

_AVAILABILITY_MARGIN = 1.0
"""Seconds added to a minReadySeconds requeue so the pod is surely available by then."""


def allows_surge(ds: Mapping[str, Any]) -> bool:
    """Whether the update strategy is RollingUpdate with a positive ``maxSurge``.

    Scaled against one node, rounding up, so any non-zero percentage allows surge.
    A malformed value allows none.
    """
    strategy = update_strategy(ds)
    if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
        return False
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, Mapping):
        return False
    try:
        return scaled_value(rolling.get("maxSurge"), 1, round_up=True) > 0
    except (IntStrError, TypeError, ValueError):
        return False


def _until_available(pod: Mapping[str, Any], min_ready: int, now: float) -> float | None:
    """Seconds until a Ready pod becomes available, or None if it is not Ready or undatable."""
    condition = pod_ready_condition(pod)
    if condition is None or condition.get("status") != "True" or min_ready <= 0:
        return None
    try:
        since = parse_rfc3339(text(condition.get("lastTransitionTime")))
    except (ValueError, OverflowError):
        return None
    return max(0.0, since + min_ready - now) + _AVAILABILITY_MARGIN


class _Builder:
    """Accumulates one plan; per-node decisions append to it in node order."""

    def __init__(self, ds: Mapping[str, Any], *, backoff: BackoffView, now: float) -> None:
        self.ds = ds
        self.backoff = backoff
        self.now = now
        self.creates: list[str] = []
        self.deletes: list[PodRef] = []
        self.events: list[Event] = []
        self.steps: dict[str, float] = {}
        self.requeue: float | None = None

    def delete(self, pod: Mapping[str, Any], node: str) -> None:
        self.deletes.append(PodRef.of(pod, node=node))

    def failed(self, pod: Mapping[str, Any], node: str) -> bool:
        """Delete a failed pod unless its node is in backoff; whether it is deleted."""
        key = backoff_key(self.ds, node)
        if key in self.steps:
            # Replacing a failed pod just started (or doubled) this node's delay.
            self.requeue = soonest(self.requeue, self.steps[key])
            return False
        if self.backoff.in_backoff(key, now=self.now):
            self.requeue = soonest(self.requeue, self.backoff.remaining(key, now=self.now))
            return False
        self.steps[key] = self.backoff.next_delay(key, now=self.now)
        self.events.append(
            Event(
                "Warning",
                FAILED_DAEMON_POD,
                f"Found failed daemon pod {namespace(pod)}/{name(pod)} on node {node}, will try to kill it",
            )
        )
        self.delete(pod, node)
        return True

    def succeeded(self, pod: Mapping[str, Any], node: str) -> None:
        self.events.append(
            Event(
                "Normal",
                SUCCEEDED_DAEMON_POD,
                f"Found succeeded daemon pod {namespace(pod)}/{name(pod)} on node {node}, will try to delete it",
            )
        )
        self.delete(pod, node)

    def build(self) -> Plan:
        return Plan(
            creates=tuple(self.creates),
            deletes=tuple(self.deletes),
            events=tuple(self.events),
            requeue_after=self.requeue,
            backoff_steps=tuple(self.steps),
        )


def _keep_one(out: _Builder, node: str, running: list[Mapping[str, Any]]) -> None:
    for pod in sort_pods(running)[1:]:
        out.delete(pod, node)


def _surge(
    out: _Builder, node: str, running: list[Mapping[str, Any]], *, hash: str, min_ready: int
) -> None:
    # Of several pods of one side (current revision, or older ones), keep the most useful:
    # available first, then Ready, then upstream's order (bound, older, name). Upstream keeps
    # the oldest alone; with creation times in whole seconds a tie falls to the name and can
    # keep a starting pod while deleting the node's only available one (ADR 0011).
    def usefulness(pod: Mapping[str, Any]) -> int:
        if is_pod_available(pod, min_ready, out.now):
            return 0
        return 1 if is_pod_ready(pod) else 2

    oldest_new: Mapping[str, Any] | None = None
    oldest_old: Mapping[str, Any] | None = None
    for pod in sorted(sort_pods(running), key=usefulness):
        if labels(pod).get(HASH_LABEL) == hash:
            if oldest_new is None:
                oldest_new = pod
                continue
        elif oldest_old is None:
            oldest_old = pod
            continue
        out.delete(pod, node)
    if oldest_new is None or oldest_old is None:
        return
    if not is_pod_ready(oldest_old) or is_pod_available(oldest_new, min_ready, out.now):
        out.delete(oldest_old, node)
        return
    # Both stay for now: look again when the new pod should have become available.
    out.requeue = soonest(out.requeue, _until_available(oldest_new, min_ready, out.now))


def _plan_node(
    out: _Builder,
    node: str,
    fit: Fit,
    pods: Sequence[Mapping[str, Any]],
    *,
    hash: str,
    surge: bool,
    min_ready: int,
    departing: bool = False,
) -> None:
    if fit.should_run and not pods:
        if not departing:
            out.creates.append(node)
        return
    if not fit.should_continue_running:
        for pod in pods:
            if not deletion_timestamp(pod):
                out.delete(pod, node)
        return
    running: list[Mapping[str, Any]] = []
    failed_kept = False
    for pod in pods:
        if deletion_timestamp(pod):
            continue
        pod_phase = phase(pod)
        if departing and pod_phase in _DONE:
            continue  # not replaced on a node that is going away: leave it as it is
        if pod_phase == "Failed":
            failed_kept = not out.failed(pod, node) or failed_kept
        elif pod_phase == "Succeeded":
            out.succeeded(pod, node)
        else:
            running.append(pod)
    if not surge:
        if len(running) > 1:
            _keep_one(out, node, running)
        return
    if not running:
        # Not while a failed pod stays on the node for its backoff: the new pod would be a
        # third beside it and the one deleted now, and on a node that fails every pod (disk
        # pressure, a shutdown) each sync would add one more (kubernetes 124388). Upstream
        # creates here; its no-surge path waits, and so does this one (ADR 0180).
        if fit.should_run and not failed_kept and not departing:
            out.creates.append(node)
        return
    if len(running) > 1:
        _surge(out, node, running, hash=hash, min_ready=min_ready)


def manage_node(
    ds: Mapping[str, Any],
    node: str,
    fit: Fit | None,
    pods: Sequence[Mapping[str, Any]],
    *,
    hash: str,
    now: float,
    backoff: BackoffView,
    surge: bool,
    min_ready: int,
    departing: bool = False,
) -> Plan:
    """The manage plan for one node (``fit`` None: a node the cache does not know).

    ``pods`` are the DaemonSet's claimed pods targeting the node. ``plan_manage`` is this,
    node by node; ``dsctl.daemonset.nodetable`` calls it only for the nodes that changed.
    ``departing``: the node is going away (see the module docstring).
    """
    if fit is not None and len(pods) == 1 and fit.should_continue_running:
        # The steady state: one live pod on a node that may keep it. Nothing to do.
        only = pods[0]
        if is_map(only) and not deletion_timestamp(only) and phase(only) not in _DONE:
            return _EMPTY
    out = _Builder(ds, backoff=backoff, now=now)
    if fit is None:
        for pod in pods:
            if is_map(pod) and not deletion_timestamp(pod) and not bound_node(pod):
                out.delete(pod, node)
    else:
        _plan_node(out, node, fit, [p for p in pods if is_map(p)], hash=hash, surge=surge, min_ready=min_ready,
                   departing=departing)
    return out.build() if (out.creates or out.deletes or out.events or out.steps or out.requeue is not None) \
        else _EMPTY


_EMPTY = Plan()
_DONE = ("Failed", "Succeeded")


def plan_manage(
    *,
    ds: Mapping[str, Any],
    nodes: Iterable[Any],
    pods_by_node: Mapping[str, Sequence[Any]],
    hash: str,
    now: float,
    backoff: BackoffView,
    fits: Mapping[str, Fit] | None = None,
    surge: bool | None = None,
) -> Plan:
    """Creates, deletes, events, backoff steps and requeue for one manage pass.

    ``pods_by_node`` is the claimed pods grouped by ``podsort.group_by_node``. ``fits`` may
    carry verdicts already computed this sync (missing nodes are evaluated here). ``surge``
    overrides ``allows_surge(ds)``. Nodes are handled in the order given, then the pods
    pinned to nodes the list does not hold; creates and deletes keep that order.
    """
    min_ready = min_ready_seconds(ds)
    with_surge = allows_surge(ds) if surge is None else surge
    plans: list[Plan] = []
    seen: set[str] = set()
    for node_name, fit in verdicts(ds, nodes, fits):
        seen.add(node_name)
        plans.append(manage_node(ds, node_name, fit, pods_by_node.get(node_name, ()), hash=hash, now=now,
                                 backoff=backoff, surge=with_surge, min_ready=min_ready))
    for node_name, stranded in pods_by_node.items():
        if node_name not in seen:
            plans.append(manage_node(ds, node_name, None, stranded, hash=hash, now=now, backoff=backoff,
                                     surge=with_surge, min_ready=min_ready))
    return merge_plans(plans)


def slow_start_batches(n: int, *, initial: int = 1) -> list[int]:
    """Batch sizes for ``n`` creates: ``initial``, then doubling, the last one the remainder.

    ``slow_start_batches(10) == [1, 2, 4, 3]``. The executor stops at the first batch with
    a failure, so a doomed create (quota, admission) costs one request, not hundreds.
    """
    batches: list[int] = []
    size = min(n, max(1, initial))
    done = 0
    while done < n:
        batches.append(size)
        done += size
        size = min(2 * size, n - done)
    return batches


def cap_burst(plan: Plan, *, burst: int = BURST_REPLICAS) -> Plan:
    """``plan`` with at most ``burst`` creates and ``burst`` deletes; the rest waits a sync.

    Events, backoff steps and the requeue are kept whole.
    """
    if len(plan.creates) <= burst and len(plan.deletes) <= burst:
        return plan
    return Plan(
        creates=plan.creates[: max(0, burst)],
        deletes=plan.deletes[: max(0, burst)],
        events=plan.events,
        requeue_after=plan.requeue_after,
        backoff_steps=plan.backoff_steps,
    )
