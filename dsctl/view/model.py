"""The grid the page shows, kept current from the informers' caches, and what changed in it.

``GridModel`` owns the grid's cells: one small integer (``cells.Cell.code``) per DaemonSet and
node. The objects themselves stay in the informers' stores, which the model only reads. The
informers' handlers only note what became dirty (a DaemonSet, a node, one DaemonSet's pods on
one node), as the controller's handlers only enqueue; ``flush`` then recomputes the dirty cells
once, however many events touched them, and returns what changed. The server calls ``flush``
on a short period and pushes the result to every page (ADR 0127), so a burst of pod events
costs one recomputation per cell and one message per period.

The layout (DaemonSets in key order, nodes in name order, each node's zone) changes
only inside ``flush``, together with the cells of new rows and columns, so a snapshot is always
complete for its layout. A change of layout is announced rather than sent cell by cell: the
page fetches a new snapshot.

Single-threaded: handlers, ``flush``, ``snapshot`` and ``details`` run on the event loop and
never await, so each sees the caches between two events.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dsctl.daemonset.access import min_ready_seconds
from dsctl.daemonset.eligibility import Eligibility, Fit, eligibility_signature
from dsctl.daemonset.extensions import InvalidControl, RolloutControls, gates_nodes, rollout_controls
from dsctl.daemonset.history import RevisionOverflow, plan_history
from dsctl.daemonset.nodelifecycle import skipped_on
from dsctl.daemonset.podsort import group_by_node
from dsctl.daemonset.readinessgate import DEFAULT_TAINT, ReadinessTaint
from dsctl.daemonset.template import HASH_LABEL, is_pod_updated, target_node, template_generation
from dsctl.daemonset.update import InvalidRollout, update_strategy_type
from dsctl.informer.store import BY_OWNER_UID, index_reads, object_key
from dsctl.view.cells import (
    CODEC,
    Cell,
    Gate,
    Hold,
    State,
    cell_of,
    gate_waits_for,
    holds,
    pick_pod,
    pod_state,
)
from dsctl.view.planfile import PlanOverlay
from dsctl_api.labels import Selector
from dsctl_api.objects import (
    as_list,
    as_map,
    deletion_timestamp,
    generation,
    labels,
    name,
    namespace,
    spec,
    status,
    uid,
)
from dsctl_api.pods import controller_ref, pod_ready_condition

__all__ = ["BY_OWNER_NODE", "SNAPSHOT_VERSION", "ZONE_LABEL", "GridModel", "Lister", "Update", "by_owner_node"]

Obj = Mapping[str, Any]

ZONE_LABEL = "topology.kubernetes.io/zone"
BY_OWNER_NODE = "byOwnerNode"
SNAPSHOT_VERSION = 1
"""Bumped when the snapshot or delta format changes incompatibly (the page checks it)."""


@index_reads("metadata.ownerReferences", "spec.nodeName", "spec.affinity")
def by_owner_node(pod: Obj) -> list[str]:
    """Index function: ``<controller uid>/<target node>`` of a pod, the key of one grid cell."""
    ref = controller_ref(pod)
    owner = ref.get("uid") if ref is not None else None
    node = target_node(pod)
    return [f"{owner}/{node}"] if isinstance(owner, str) and owner and node else []


class Lister(Protocol):
    """What the model reads of an informer's store (``ReadOnlyStore`` and ``Store`` both are)."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The object under ``key``, or None."""
        ...

    def list(self) -> list[dict[str, Any]]:
        """Every object."""
        ...

    def by_index(self, index: str, value: str) -> builtins.list[dict[str, Any]]:
        """The objects filed under ``value`` in ``index``."""
        ...


@dataclass(frozen=True, slots=True)
class Update:
    """What one ``flush`` changed; ``seq`` numbers updates, ``layout`` the layout they refer to.

    ``layout_changed`` means the page must fetch a snapshot; ``cells`` then stays empty (the
    snapshot carries them). Otherwise ``cells`` is flat ``[ds index, node index, code, ...]``
    and ``headers`` maps DaemonSet indexes to their new headers.
    """

    seq: int
    layout: int
    layout_changed: bool = False
    cells: tuple[int, ...] = ()
    headers: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        """The JSON body pushed to pages."""
        if self.layout_changed:
            return {"seq": self.seq, "layout": self.layout}
        return {"seq": self.seq, "layout": self.layout, "cells": list(self.cells),
                "headers": [[index, header] for index, header in sorted(self.headers.items())]}


@dataclass(slots=True)
class _Row:
    """One DaemonSet's derived state: everything its cells need besides its pods and nodes."""

    key: str
    uid: str
    rules: Eligibility
    hash: str
    generation: int | None
    controls: RolloutControls
    rolling: bool
    problems: tuple[str, ...]
    signature: tuple[Any, ...]
    header: dict[str, Any]
    gating: bool = False
    """The DaemonSet gates its nodes (``extensions.gates_nodes``, as the controller's gate reads it)."""
    min_ready: int = 0
    holds: dict[str, Hold] = field(default_factory=dict)
    cells: dict[str, int] = field(default_factory=dict)
    should_run: set[str] | None = None
    """Nodes where the pod should run, kept only while holds can exist (``_refresh_holds``)."""


class _Labels(Mapping[str, Mapping[str, str]]):
    """Node name to labels, read from the node store on demand (the selector reads a few)."""

    def __init__(self, nodes: Lister) -> None:
        self._nodes = nodes

    def __getitem__(self, key: str) -> Mapping[str, str]:
        node = self._nodes.get(key)
        if node is None:
            raise KeyError(key)
        return labels(node)

    def __iter__(self) -> Iterator[str]:
        return (name(n) for n in self._nodes.list())

    def __len__(self) -> int:
        return len(self._nodes.list())


class _NodesByName(Mapping[str, Obj]):
    """Node name to node, read from the node store on demand."""

    def __init__(self, nodes: Lister) -> None:
        self._nodes = nodes

    def __getitem__(self, key: str) -> Obj:
        node = self._nodes.get(key)
        if node is None:
            raise KeyError(key)
        return node

    def __iter__(self) -> Iterator[str]:
        return (name(n) for n in self._nodes.list())

    def __len__(self) -> int:
        return len(self._nodes.list())


def _zone(node: Obj) -> str:
    value = labels(node).get(ZONE_LABEL)
    return value if isinstance(value, str) else ""


def _node_signature(node: Obj, taint: ReadinessTaint | None) -> tuple[Any, ...]:
    """What about a node any cell depends on: eligibility inputs, the gate, the zone."""
    return (eligibility_signature(node), taint is not None and taint.on(node), _zone(node))


def _conditions(ds: Obj) -> list[dict[str, str]]:
    out = []
    for cond in as_list(status(ds).get("conditions")):
        c = as_map(cond)
        if c.get("type"):
            out.append({k: str(c.get(k) or "") for k in ("type", "status", "reason", "message")})
    return out


def _header(
    ds: Obj, row_hash: str, controls: RolloutControls, problems: Sequence[str], strategy: str
) -> dict[str, Any]:
    st = status(ds)

    def count(key: str) -> int:
        value = st.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "desired": count("desiredNumberScheduled"),
        "current": count("currentNumberScheduled"),
        "updated": count("updatedNumberScheduled"),
        "ready": count("numberReady"),
        "available": count("numberAvailable"),
        "misscheduled": count("numberMisscheduled"),
        "generation": generation(ds),
        "observedGeneration": count("observedGeneration"),
        "conditions": _conditions(ds),
        "revision": row_hash,
        "strategy": strategy,
        "paused": controls.paused,
        "partition": controls.partition,
        "selector": _selector_text(controls.selector),
        "problems": list(problems),
    }


def _selector_text(selector: Selector | None) -> str:
    """kubectl's ``-l`` syntax for a rollout selector, for the header; ``""`` when unset."""
    if selector is None:
        return ""
    if selector.nothing:
        return "(nothing)"
    terms = []
    for req in selector.requirements:
        if req.op == "exists":
            terms.append(req.key)
        elif req.op == "!":
            terms.append(f"!{req.key}")
        elif req.op == "in" and len(req.values) == 1:
            terms.append(f"{req.key}={req.values[0]}")
        elif req.op in ("gt", "lt"):
            terms.append(f"{req.key} {req.op} {req.values[0] if req.values else ''}")
        else:
            terms.append(f"{req.key} {req.op} ({','.join(req.values)})")
    return ",".join(terms)


class GridModel:
    """The cells of every DaemonSet on every node, and the changes since the last ``flush``.

    ``daemonsets``, ``nodes``, ``pods`` and ``revisions`` are the informers' stores; ``pods``
    must have the ``BY_OWNER_NODE`` index and ``revisions`` the ``BY_OWNER_UID`` index. Wire
    the ``on_*`` methods to the informers' handlers. ``plan`` is an optional overlay of planned
    waves (``planfile``). ``resource`` names the DaemonSet kind shown (``apps/v1`` or
    ``dsctl.io/v1``), for the page. ``readiness_taint`` is the controller's ``--readiness-taint``
    (None: it runs without the gate): every pod it creates tolerates it, so the grid judges
    eligibility with that toleration too, and marks the nodes that carry it.
    """

    def __init__(
        self,
        *,
        daemonsets: Lister,
        nodes: Lister,
        pods: Lister,
        revisions: Lister,
        resource: str = "apps/v1",
        plan: PlanOverlay | None = None,
        wall: Callable[[], float] = time.time,
        readiness_taint: ReadinessTaint | None = DEFAULT_TAINT,
    ) -> None:
        self._wall = wall
        self.readiness_taint = readiness_taint
        self._extra = (readiness_taint.toleration(),) if readiness_taint is not None else ()
        self._daemonsets = daemonsets
        self._nodes = nodes
        self._pods = pods
        self._revisions = revisions
        self._labels = _Labels(nodes)
        self.resource = resource
        self.plan = plan
        self.synced = False
        """Whether every informer has listed (``mark_synced``): before that the grid is partial."""
        self._rows: dict[str, _Row] = {}
        self._uid_to_key: dict[str, str] = {}
        self._node_sigs: dict[str, tuple[Any, ...]] = {}
        self._ds_order: list[str] = []
        self._ds_index: dict[str, int] = {}
        self._node_order: list[str] = []
        self._node_index: dict[str, int] = {}
        self.seq = 0
        self.layout = 0
        self._layout_dirty = True
        self._dirty_ds: set[str] = set()
        self._dirty_owners: set[str] = set()
        self._dirty_nodes: set[str] = set()
        self._dirty_cells: set[str] = set()

    # -- handlers: note what is dirty, nothing else ------------------------------------------

    def on_ds(self, ds: Obj) -> None:
        """A DaemonSet was added or changed."""
        self._dirty_ds.add(object_key(ds))

    def on_ds_update(self, _old: Obj, new: Obj) -> None:
        """Informer ``on_update`` form of ``on_ds``."""
        self._dirty_ds.add(object_key(new))

    def on_node(self, node: Obj) -> None:
        """A node was added or deleted."""
        self._dirty_nodes.add(name(node))
        self._layout_dirty = True

    def on_node_update(self, old: Obj, new: Obj) -> None:
        """A node changed; only what can change a cell or the layout counts."""
        if _node_signature(old, self.readiness_taint) != _node_signature(new, self.readiness_taint):
            self._dirty_nodes.add(name(new))

    def on_pod(self, pod: Obj) -> None:
        """A pod was added or deleted."""
        self._dirty_cells.update(by_owner_node(pod))

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        """A pod changed (its cell, and the one it left if its owner or node changed)."""
        self._dirty_cells.update(by_owner_node(new))
        if old is not new:
            self._dirty_cells.update(by_owner_node(old))

    def on_revision(self, revision: Obj) -> None:
        """A ControllerRevision was added or deleted: its owner's current revision may move."""
        self._dirty_owners.update(_owner_uids(revision))

    def on_revision_update(self, old: Obj, new: Obj) -> None:
        """Informer ``on_update`` form of ``on_revision``."""
        self._dirty_owners.update(_owner_uids(old))
        self._dirty_owners.update(_owner_uids(new))

    def mark_synced(self) -> None:
        """Every informer has listed: pages refetch a snapshot that is now complete."""
        self.synced = True
        self._layout_dirty = True

    @property
    def pending(self) -> bool:
        """Whether a ``flush`` has anything to look at."""
        return bool(self._layout_dirty or self._dirty_ds or self._dirty_owners or self._dirty_nodes
                    or self._dirty_cells)

    # -- recomputation -----------------------------------------------------------------------

    def flush(self) -> Update | None:
        """Recompute what is dirty; the update to push, or None when nothing visible changed."""
        if not self.pending:
            return None
        for owner in self._dirty_owners:
            key = self._uid_to_key.get(owner)
            if key is not None:
                self._dirty_ds.add(key)
        dirty_ds, self._dirty_ds, self._dirty_owners = self._dirty_ds, set(), set()
        dirty_nodes, self._dirty_nodes = self._dirty_nodes, set()
        dirty_cells, self._dirty_cells = self._dirty_cells, set()

        full: set[str] = set()  # DaemonSets whose every cell is recomputed
        headers: set[str] = set()
        layout_dirty = self._layout_dirty
        for key in dirty_ds:
            changed = self._refresh_row(key)
            if changed is None:
                layout_dirty = True  # added or deleted
                if key in self._rows:
                    full.add(key)
            else:
                headers.add(key)
                if changed:
                    full.add(key)
        for node_name in dirty_nodes:
            node = self._nodes.get(node_name)
            signature = _node_signature(node, self.readiness_taint) if node is not None else None
            previous = self._node_sigs.get(node_name)
            if signature is None:
                self._node_sigs.pop(node_name, None)
            else:
                self._node_sigs[node_name] = signature
            if previous is None or signature is None or previous[2] != signature[2]:
                layout_dirty = True
        if layout_dirty:
            self._relayout()

        touched: dict[str, set[str]] = {key: set() for key in full}
        for key in full:
            touched[key].update(self._node_order)
        for node_name in dirty_nodes:
            if node_name in self._node_index:
                for key in self._ds_order:
                    touched.setdefault(key, set()).add(node_name)
        for cell in dirty_cells:
            owner, _, node_name = cell.partition("/")
            key = self._uid_to_key.get(owner)
            if key is not None and node_name in self._node_index:
                touched.setdefault(key, set()).add(node_name)

        changes: list[int] = []
        for key, nodes in touched.items():
            row = self._rows.get(key)
            if row is None:
                continue
            refit = None if key in full else [n for n in dirty_nodes if n in self._node_index]
            nodes.update(self._refresh_holds(row, refit))
            changes.extend(self._recompute(row, nodes))

        if layout_dirty:
            self._layout_dirty = False
            self.layout += 1
            self.seq += 1
            return Update(self.seq, self.layout, layout_changed=True)
        header_updates = {self._ds_index[k]: self._rows[k].header for k in headers if k in self._rows}
        if not changes and not header_updates:
            return None
        self.seq += 1
        return Update(self.seq, self.layout, cells=tuple(changes), headers=header_updates)

    def _refresh_row(self, key: str) -> bool | None:
        """Rebuild one DaemonSet's row. None when it appeared or vanished; else whether its
        cells may have changed (False: only its header did)."""
        ds = self._daemonsets.get(key)
        old = self._rows.get(key)
        if ds is None:
            if old is not None:
                del self._rows[key]
                self._uid_to_key.pop(old.uid, None)
            return None
        problems: list[str] = []
        try:
            controls = rollout_controls(ds)
        except InvalidControl as exc:
            # The controller holds the whole rolling update until the control is fixed
            # (dsctl.daemonset.syncplan): so does the grid.
            controls = RolloutControls(paused=True)
            problems.append(f"{exc}; the rolling update is held until it is fixed")
        try:
            strategy = update_strategy_type(ds)
        except InvalidRollout as exc:
            strategy = "?"
            problems.append(str(exc))
        ds_uid = uid(ds)
        revisions = self._revisions.by_index(BY_OWNER_UID, ds_uid) if ds_uid else []
        try:
            row_hash = plan_history(ds=ds, revisions=revisions).hash
        except RevisionOverflow as exc:
            row_hash = ""
            problems.append(str(exc))
        generation_ = template_generation(ds)
        # metadata.generation moves with every spec change; the controls (annotations in apps/v1
        # mode) and the current revision (revisions, collisionCount) are compared themselves.
        gating = gates_nodes(ds)
        signature = (ds_uid, row_hash, generation_, controls, strategy, generation(ds), gating)
        header = _header(ds, row_hash, controls, problems, strategy)
        if old is not None and old.signature == signature:
            old.header = header
            return False
        rules = Eligibility.of(ds, extra=self._extra)
        row = _Row(key=key, uid=ds_uid, rules=rules, hash=row_hash, generation=generation_, controls=controls,
                   rolling=strategy == "RollingUpdate", problems=tuple(problems), signature=signature,
                   header=header, gating=gating, min_ready=min_ready_seconds(ds),
                   holds=old.holds if old is not None else {}, cells=old.cells if old else {})
        self._rows[key] = row
        if old is not None and old.uid != ds_uid:
            self._uid_to_key.pop(old.uid, None)
        if ds_uid:
            self._uid_to_key[ds_uid] = key
        return None if old is None else True

    def _refresh_holds(self, row: _Row, refit: Iterable[str] | None) -> set[str]:
        """Recompute the row's holds when any can exist; returns the nodes whose hold changed.

        ``refit`` are the nodes whose eligibility may have changed since the last call (None:
        all of them); the others' ``should_run`` is reused, so a pod event costs no
        eligibility checks.
        """
        skips = row.rolling and row.controls.skips_unhealthy
        if not row.holds and not (row.rolling and row.controls.holds_back) and not skips:
            row.should_run = None
            return set()
        if row.should_run is None or refit is None:
            row.should_run = {n for n in self._node_order if self._fit(row, n).should_run}
        else:
            for n in refit:
                if self._fit(row, n).should_run:
                    row.should_run.add(n)
                else:
                    row.should_run.discard(n)
        pods_by_node = group_by_node(self._pods.by_index(BY_OWNER_UID, row.uid)) if row.uid else {}
        skipped = skipped_on(_NodesByName(self._nodes), pods_by_node, should_run=row.should_run, hash=row.hash,
                             generation=row.generation, seconds=row.controls.unhealthy_node_seconds,
                             now=self._wall()) if skips else ()
        new = holds(controls=row.controls, rolling=row.rolling, pods_by_node=pods_by_node,
                    nodes_should_run=row.should_run, hash=row.hash, generation=row.generation,
                    node_labels=self._labels, skipped_unhealthy=skipped)
        old, row.holds = row.holds, new
        return {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}

    def _fit(self, row: _Row, node_name: str) -> Fit:
        node = self._nodes.get(node_name)
        return row.rules.check(node) if node is not None else Fit(False, False)

    def cell(self, row: _Row, node_name: str) -> Cell:
        """The cell of one row on one node, computed from the caches now."""
        node = self._nodes.get(node_name)
        if node is None:
            return Cell()
        fit = row.rules.check(node)
        pods = self._pods.by_index(BY_OWNER_NODE, f"{row.uid}/{node_name}") if row.uid else []
        return cell_of(fit=fit, pods=pods, hash=row.hash, generation=row.generation,
                       hold=row.holds.get(node_name, Hold.NONE), gated=self._gate(row, node, fit, pods))

    def _gate(self, row: _Row, node: Obj, fit: Fit, pods: Sequence[Obj]) -> Gate:
        """The node's readiness gate as it concerns ``row``: the controller's own decision."""
        taint = self.readiness_taint
        signature = self._node_sigs.get(name(node))
        tainted = signature[1] if signature is not None else taint is not None and taint.on(node)
        if not tainted or taint is None:
            return Gate.NO
        if row.gating and gate_waits_for(key=row.key, node=node, fit=fit, pods=pods, min_ready=row.min_ready,
                                         taint=taint, now=self._wall()):
            return Gate.WAITING
        return Gate.YES

    def _recompute(self, row: _Row, nodes: Iterable[str]) -> list[int]:
        """Recompute cells; returns ``[ds index, node index, code, ...]`` of those that changed."""
        changes: list[int] = []
        ds_index = self._ds_index[row.key]
        cells = row.cells
        for node_name in nodes:
            index = self._node_index.get(node_name)
            if index is None:
                continue
            code = self.cell(row, node_name).code
            if cells.get(node_name) != code:
                cells[node_name] = code
                changes.extend((ds_index, index, code))
        return changes

    def _relayout(self) -> None:
        nodes = self._nodes.list()
        # The rolling update's own order (nodes by name, see dsctl.daemonset.extensions), so a
        # rollout sweeps the grid from the first cell on and partition holds the last ones.
        self._node_order = sorted(name(n) for n in nodes)
        self._node_index = {n: i for i, n in enumerate(self._node_order)}
        sigs = self._node_sigs
        self._node_sigs = {}
        for node in nodes:
            node_name = name(node)
            known = sigs.get(node_name)
            self._node_sigs[node_name] = known if known is not None else _node_signature(node, self.readiness_taint)
        for row in self._rows.values():
            for gone in row.cells.keys() - self._node_index.keys():
                del row.cells[gone]
        self._ds_order = sorted(self._rows)
        self._ds_index = {k: i for i, k in enumerate(self._ds_order)}

    # -- reads for the server ----------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The whole grid at ``seq``/``layout``: what a page starts from (ADR 0127)."""
        zones = sorted({sig[2] for sig in self._node_sigs.values()})
        zone_index = {z: i for i, z in enumerate(zones)}
        unknown = State.NOT_WANTED.value
        rows = [self._rows[k] for k in self._ds_order]
        return {
            "version": SNAPSHOT_VERSION,
            "seq": self.seq,
            "layout": self.layout,
            "synced": self.synced,
            "resource": self.resource,
            "codec": CODEC,
            "nodes": self._node_order,
            "zones": zones,
            "nodeZone": [zone_index[self._node_sigs[n][2]] for n in self._node_order],
            "daemonsets": [{"key": r.key, "namespace": r.key.partition("/")[0], "name": r.key.partition("/")[2],
                            "header": r.header} for r in rows],
            "cells": [[r.cells.get(n, unknown) for n in self._node_order] for r in rows],
            "plan": self._plan_snapshot(),
        }

    def _plan_snapshot(self) -> dict[str, Any] | None:
        if self.plan is None:
            return None
        waves: list[list[int] | None] = []
        for key in self._ds_order:
            planned = self.plan.waves.get(key)
            waves.append(None if planned is None else [planned.get(n, 0) for n in self._node_order])
        return {"source": self.plan.source, "maxWave": self.plan.max_wave, "waves": waves,
                "unmatched": sorted(set(self.plan.waves) - set(self._ds_order))}

    def details(self, ds_key: str, node_name: str) -> dict[str, Any] | None:
        """What clicking a cell shows (without events); None for an unknown DaemonSet or node."""
        row = self._rows.get(ds_key)
        node = self._nodes.get(node_name)
        if row is None or node is None:
            return None
        cell = self.cell(row, node_name)
        fit = row.rules.check(node)
        pods = self._pods.by_index(BY_OWNER_NODE, f"{row.uid}/{node_name}") if row.uid else []
        wave = self.plan.waves.get(ds_key, {}).get(node_name) if self.plan is not None else None
        return {
            "daemonset": {"key": ds_key, "revision": row.hash, "header": row.header},
            "cell": {"state": cell.state.name, "revision": cell.revision.name, "hold": cell.hold.name,
                     "gated": cell.gated is not Gate.NO, "gate": cell.gated.name, "code": cell.code},
            "readinessTaint": str(self.readiness_taint) if self.readiness_taint is not None else None,
            "wanted": {"shouldRun": fit.should_run, "shouldContinueRunning": fit.should_continue_running},
            "plannedWave": wave,
            "node": _node_details(node),
            "pods": [_pod_details(p, row) for p in pods],
        }

    def pod_of(self, ds_key: str, node_name: str) -> Obj | None:
        """The pod a cell shows (see ``cells.pick_pod``), for reading its events."""
        row = self._rows.get(ds_key)
        if row is None or not row.uid:
            return None
        return pick_pod(self._pods.by_index(BY_OWNER_NODE, f"{row.uid}/{node_name}"), row.hash, row.generation)

    def counts(self) -> dict[str, int]:
        """Cells per state over the whole grid (for logs and tests)."""
        out: dict[str, int] = {}
        for row in self._rows.values():
            for code in row.cells.values():
                state = State(code & 7).name
                out[state] = out.get(state, 0) + 1
        return out


def _owner_uids(obj: Obj) -> list[str]:
    ref = controller_ref(obj)
    owner = ref.get("uid") if ref is not None else None
    return [owner] if isinstance(owner, str) and owner else []


def _node_details(node: Obj) -> dict[str, Any]:
    ready = next((as_map(c) for c in as_list(status(node).get("conditions")) if as_map(c).get("type") == "Ready"), {})
    return {
        "name": name(node),
        "labels": dict(labels(node)),
        "taints": [dict(as_map(t)) for t in as_list(spec(node).get("taints"))],
        "unschedulable": bool(spec(node).get("unschedulable")),
        "ready": {k: ready.get(k) for k in ("status", "reason", "message", "lastTransitionTime") if k in ready},
    }


def _pod_details(pod: Obj, row: _Row) -> dict[str, Any]:
    ready = pod_ready_condition(pod) or {}
    restarts = sum(int(as_map(c).get("restartCount") or 0) for c in as_list(status(pod).get("containerStatuses")))
    return {
        "name": name(pod),
        "namespace": namespace(pod),
        "phase": str(status(pod).get("phase") or ""),
        "state": pod_state(pod).name,
        "ready": ready.get("status") == "True",
        "readySince": ready.get("lastTransitionTime"),
        "revision": str(labels(pod).get(HASH_LABEL) or ""),
        "current": is_pod_updated(pod, row.hash, row.generation),
        "node": target_node(pod) or "",
        "bound": bool(spec(pod).get("nodeName")),
        "restarts": restarts,
        "terminating": deletion_timestamp(pod),
        "created": as_map(pod.get("metadata")).get("creationTimestamp"),
    }
