"""The dry run: the controller's own syncs, one after another, over a copy of the cluster.

Each step is one ``syncplan.plan_sync`` call, the very function a controller worker runs,
over the ``World`` as the previous steps left it. Its writes are applied as the executor
would send them (creates and deletes capped at the DaemonSet's burst, in-place patches at the
controller's), and the next sync sees them, as a controller whose expectations are satisfied
does. No budget, order or placement rule is computed here: the planners decide every step.

Time only moves when the controller would be waiting. A sync that writes nothing while pods
the dry run created (or patched in place) are still starting ends the current *wave*: those
pods then become Ready, the clock moves on by one wave (start-up plus ``minReadySeconds``),
and the next sync starts the next wave. A wave is therefore every node the rolling update
acted on (deleted, patched or surged) before any pod it started became available, whatever
number of syncs the burst cap spread it over. Pods that exist now and are not Ready stay so:
nothing tells when, or whether, they will recover; the planner replaces an unavailable old pod
at once, and an unavailable current one holds its share of the budget.

The run ends when a sync has nothing to write and nothing is starting (the rollout is done,
or held), when a wave past ``max_waves`` would start (before its writes), or, as a guard,
after a number of syncs no rollout of this size needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dsctl.daemonset.eligibility import Eligibility, Fit
from dsctl.daemonset.history import collision_count, resolve_create_conflict, revision_data_equal
from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
from dsctl.daemonset.manage import cap_burst
from dsctl.daemonset.nodetable import NodeTable
from dsctl.daemonset.podplan import Plan
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.daemonset.template import pod_factory
from dsctl.plan.world import World
from dsctl_api.objects import annotations_of, as_list, as_map, name
from dsctl_api.timefmt import format_rfc3339

__all__ = ["DryRun", "DryRunError", "NoBackoff", "Wave", "dry_run"]

_MAX_COLLISIONS = 5
_IDLE_STEPS = 3
"""Clock steps in a row, with nothing written, before a run that only waits counts as settled."""
_READY_MARGIN = 1.0
"""Seconds beyond minReadySeconds at which a pod the dry run made Ready counts as available
(availability needs strictly more than minReadySeconds)."""


class DryRunError(ValueError):
    """The controller would not act on this DaemonSet; the message says why, as its condition would."""


class NoBackoff:
    """A ``BackoffView`` with no failed pod behind it: the dry run's pods never fail."""

    def in_backoff(self, key: str, *, now: float) -> bool:
        """Never."""
        return False

    def remaining(self, key: str, *, now: float) -> float:
        """Nothing left."""
        return 0.0

    def next_delay(self, key: str, *, now: float) -> float:
        """The controller's first step (one second)."""
        return 1.0


@dataclass(frozen=True, slots=True)
class Wave:
    """Nodes the rolling update acts on before any pod it started becomes available."""

    number: int
    nodes: tuple[str, ...]
    in_place: int = 0
    """How many of them are patched in place rather than recreated."""


@dataclass(slots=True)
class DryRun:
    """What the controller's syncs did, step by step, and where the fleet ended."""

    first: SyncPlan
    """The first sync's plan: the revision hash and history, the first table of nodes."""
    last: SyncPlan
    """The last sync's plan (its status says what holds the rollout back)."""
    final: NodeTable
    """The node table of the last sync: every node's verdict and pods at the end."""
    world: World
    waves: list[Wave] = field(default_factory=list)
    syncs: int = 0
    settled: bool = False
    """The last sync had nothing to write and nothing was starting."""
    truncated: bool = False
    """Stopped at ``max_waves`` (or the sync guard) before the fleet settled."""
    collision_count: int | None = None
    """The collisionCount the revision hash was computed with (after any bump)."""
    fits: dict[str, Fit] = field(default_factory=dict)
    """The eligibility verdict of every node, as the syncs received them."""


class _Run:
    """One dry run's moving parts."""

    def __init__(self, ds: dict[str, Any], world: World, *, now: float, burst: int, wave_seconds: float,
                 extra_tolerations: tuple[Mapping[str, Any], ...] = ()) -> None:
        self.ds = ds
        self.extra_tolerations = extra_tolerations
        self.world = world
        self.clock = now
        self.burst = burst
        self.wave_seconds = wave_seconds
        self.rules = Eligibility.of(ds, extra=extra_tolerations)
        self.fits: dict[str, Fit] = {}
        self.api_version = str(ds.get("apiVersion") or "apps/v1")
        self.kind = str(ds.get("kind") or "DaemonSet")
        self.min_ready = _min_ready(ds)
        self.starting: set[str] = set()
        """UIDs of pods the dry run created or patched that are not Ready yet."""
        self.patched: set[str] = set()
        """Nodes whose pod was patched in place."""
        self.previous: NodeTable | None = None

    def fit(self, node: Mapping[str, Any]) -> Fit:
        node_name = name(node)
        verdict = self.fits.get(node_name)
        if verdict is None:
            verdict = self.fits[node_name] = self.rules.check(node)
        return verdict

    def plan(self) -> SyncPlan:
        changed = self.world.take_changed() if self.previous is not None else None
        snapshot = SyncSnapshot(ds=self.ds, view=self.world, satisfied=True, now=self.clock, backoff=NoBackoff(),
                                fit=self.fit, global_burst=self.burst, previous=self.previous, changed=changed)
        plan = plan_sync(snapshot)
        if plan.terminal is not None:
            raise DryRunError(plan.terminal)
        if not plan.act:
            said = "; ".join(e.message for e in plan.events)
            raise DryRunError(said or "the DaemonSet is being deleted: the controller leaves it alone")
        self.previous = plan.table
        return plan

    def apply_history(self, plan: SyncPlan) -> None:
        history = plan.history
        for write in plan.ownership:
            self.world.set_owner(write.kind, write.name, write.namespace, self.ds, adopt=write.adopt,
                                 api_version=self.api_version, ds_kind=self.kind)
        if history is not None:
            if history.create is not None:
                self.world.put_revision(history.create)
            for revision in history.updates:
                self.world.put_revision(revision)
            for patch in history.pod_patches:
                self.world.relabel_pod(patch.pod.uid, patch.patch)
            for revision_name in history.deletes:
                self.world.delete_revision(revision_name)
        for revision_name in plan.cleanup:
            self.world.delete_revision(revision_name)

    def apply_pods(self, plan: SyncPlan) -> Plan:
        """Carry out the pod stage as the executor does; returns what was carried out."""
        pods = cap_burst(plan.pods, burst=min(self.burst, plan.burst))
        updates = plan.pods.updates[: max(0, self.burst)]
        if pods.creates:
            assert plan.history is not None
            make = pod_factory(self.ds, hash=plan.history.hash, api_version=self.api_version, kind=self.kind,
                               extra_tolerations=self.extra_tolerations)
            for node in pods.creates:
                created = self.world.create_pod(make(node), now=self.clock)
                self.starting.add(str(created["metadata"]["uid"]))
        for ref in pods.deletes:
            self.world.delete_pod(ref.uid)
            self.starting.discard(ref.uid)
        for update in updates:
            self.world.update_in_place(update)
            self.starting.add(update.pod.uid)
            self.patched.add(update.pod.node)
        return Plan(creates=pods.creates, deletes=pods.deletes, updates=updates)

    def finish_starting(self) -> None:
        """Every pod the dry run started is Ready (and available once the clock has moved on)."""
        self.clock += self.wave_seconds
        ready_since = format_rfc3339(self.clock - self.min_ready - _READY_MARGIN)
        for pod_uid in sorted(self.starting):
            pod = self.world.pod(pod_uid)
            if pod is None:
                continue
            status = pod.setdefault("status", {})
            status["phase"] = "Running"
            status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_since}]
            restarts = _in_place_restarts(pod)
            status["containerStatuses"] = [
                {"name": c.get("name"), "ready": True, "restartCount": restarts.get(str(c.get("name")), 0),
                 "image": c.get("image")}
                for c in as_list(as_map(pod.get("spec")).get("containers")) if isinstance(c, Mapping)
            ]
            self.world.relabel_pod(pod_uid, {})
        self.starting.clear()


def _in_place_restarts(pod: Mapping[str, Any]) -> dict[str, int]:
    """One restart more than recorded for each container an in-place patch changed."""
    raw = annotations_of(pod).get(IN_PLACE_ANNOTATION)
    try:
        record = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    counts = as_map(as_map(record).get("restartCounts"))
    return {str(k): max(0, int(v)) + 1 for k, v in counts.items() if isinstance(v, int)}


def _resolve_collisions(ds: dict[str, Any], world: World, plan: SyncPlan) -> bool:
    """Bump ``status.collisionCount`` when the new revision's name holds another template, as the
    controller does on AlreadyExists; whether it did (then plan again)."""
    history = plan.history
    if history is None or history.create is None:
        return False
    existing = world.revision(name(history.create))
    if existing is None or revision_data_equal(ds, existing):
        return False
    decision = resolve_create_conflict(ds=ds, existing=existing, live_ds=ds)
    if decision.action != "bump":
        return False
    ds.setdefault("status", {})["collisionCount"] = decision.collision_count
    return True


def _acted_nodes(done: Plan) -> list[str]:
    """Nodes the rolling update acted on, in a sync whose pod stage was the rolling update's."""
    nodes = [ref.node for ref in done.deletes if ref.node]
    nodes += [u.pod.node for u in done.updates if u.pod.node]
    nodes += list(done.creates)
    return nodes


def dry_run(ds: dict[str, Any], world: World, *, now: float, burst: int = 250, wave_seconds: float = 0.0,
            max_waves: int = 100, extra_tolerations: tuple[Mapping[str, Any], ...] = ()) -> DryRun:
    """Sync ``ds`` over ``world`` until the fleet settles (see the module docstring).

    ``ds`` is the DaemonSet as stored after the change; its ``status.collisionCount`` is raised
    here if the controller would raise it. ``wave_seconds`` is how long a pod takes to start
    (the clock also moves by ``minReadySeconds`` per wave). ``extra_tolerations`` are the ones
    the controller adds to every pod (the readiness taint's): eligibility is judged, and pods are
    made, with them. Raises ``DryRunError`` when the controller would refuse the spec.
    """
    step = max(0.0, wave_seconds) + _min_ready(ds) + _READY_MARGIN
    run = _Run(ds, world, now=now, burst=burst, wave_seconds=step, extra_tolerations=extra_tolerations)
    first = run.plan()
    for _ in range(_MAX_COLLISIONS):
        if not _resolve_collisions(ds, world, first):
            break
        run = _Run(ds, world, now=now, burst=burst, wave_seconds=step, extra_tolerations=extra_tolerations)
        first = run.plan()
    assert first.table is not None
    result = DryRun(first=first, last=first, final=first.table, world=world, collision_count=collision_count(ds))
    guard = 8 * (len(first.table.outcomes) + 10)
    wave: list[str] = []
    waved: set[str] = set()
    idle = 0
    plan = first
    while True:
        result.syncs += 1
        run.apply_history(plan)
        rolling = plan.table is not None and not plan.table.manage_plan().has_writes
        if rolling and plan.pods.has_writes and not wave and len(result.waves) >= max_waves:
            # The next wave would start: stop before its writes, so the copy shows the fleet
            # as the simulated waves leave it.
            result.truncated = True
            break
        done = run.apply_pods(plan)
        if done.has_writes or plan.requeue_now:
            idle = 0
            for node in _acted_nodes(done) if rolling else ():
                if node not in waved:
                    waved.add(node)
                    wave.append(node)
        else:
            if wave:
                result.waves.append(Wave(len(result.waves) + 1, tuple(wave),
                                         in_place=sum(1 for n in wave if n in run.patched)))
                wave = []
            if run.starting:
                run.finish_starting()
            elif plan.requeue_after is not None and idle < _IDLE_STEPS:
                # Pods of the snapshot still waiting out minReadySeconds: the controller looks
                # again when they are available.
                idle += 1
                run.clock += plan.requeue_after
            else:
                result.settled = True
                break
        if result.syncs >= guard:
            result.truncated = True
            break
        plan = run.plan()
    assert run.previous is not None
    result.final = run.previous
    result.last = plan
    result.fits = run.fits
    return result


def _min_ready(ds: Mapping[str, Any]) -> int:
    value = as_map(ds.get("spec")).get("minReadySeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
