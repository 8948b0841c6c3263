"""The view's grid model over real informer stores: snapshots, coalesced deltas, layout changes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl.daemonset.hashing import compute_hash
from dsctl.daemonset.history import plan_history
from dsctl.daemonset.readinessgate import DEFAULT_TAINT, ReadinessTaint
from dsctl.informer.store import BY_OWNER_UID, Store, by_owner_uid, object_key
from dsctl.view.cells import READINESS_TAINT, Cell, Gate, Hold, Revision, State
from dsctl.view.model import BY_OWNER_NODE, ZONE_LABEL, GridModel, Update, by_owner_node
from dsctl.view.planfile import PlanOverlay
from tests.unit.daemonset.objects import T0, make_ds, make_node, make_pod, taint


class Cluster:
    """Stores plus a model wired as the informers wire them: store first, then the handler."""

    def __init__(self, *, plan: PlanOverlay | None = None,
                 readiness_taint: ReadinessTaint | None = DEFAULT_TAINT) -> None:
        self.daemonsets = Store()
        self.nodes = Store()
        self.pods = Store(indexers={BY_OWNER_NODE: by_owner_node, BY_OWNER_UID: by_owner_uid})
        self.revisions = Store(indexers={BY_OWNER_UID: by_owner_uid})
        self.model = GridModel(daemonsets=self.daemonsets, nodes=self.nodes, pods=self.pods,
                               revisions=self.revisions, plan=plan, readiness_taint=readiness_taint, wall=lambda: T0)

    def put_ds(self, ds: dict[str, Any]) -> None:
        old, new = self.daemonsets.upsert(ds)
        self.model.on_ds_update(old, new) if old is not None else self.model.on_ds(new)

    def put_node(self, node: dict[str, Any]) -> None:
        old, new = self.nodes.upsert(node)
        self.model.on_node_update(old, new) if old is not None else self.model.on_node(new)

    def delete_node(self, name: str) -> None:
        gone = self.nodes.delete(name)
        assert gone is not None
        self.model.on_node(gone)

    def put_pod(self, pod: dict[str, Any]) -> None:
        old, new = self.pods.upsert(pod)
        self.model.on_pod_update(old, new) if old is not None else self.model.on_pod(new)

    def delete_pod(self, pod: dict[str, Any]) -> None:
        gone = self.pods.delete(object_key(pod))
        assert gone is not None
        self.model.on_pod(gone)

    def put_revision(self, revision: dict[str, Any]) -> None:
        old, new = self.revisions.upsert(revision)
        self.model.on_revision_update(old, new) if old is not None else self.model.on_revision(new)

    def cell(self, node: str, ds: str = "default/foo") -> Cell:
        snap = self.model.snapshot()
        row = [d["key"] for d in snap["daemonsets"]].index(ds)
        return Cell.decode(snap["cells"][row][snap["nodes"].index(node)])


def triples(update: Update | None) -> list[tuple[int, int, int]]:
    """The changed cells of an update as sorted (ds index, node index, code); the wire order is free."""
    assert update is not None
    cells = update.cells
    return sorted(zip(cells[0::3], cells[1::3], cells[2::3], strict=True))


def current_hash(ds: dict[str, Any]) -> str:
    """The hash the controller gives the DaemonSet's template (no revision stored yet)."""
    return plan_history(ds=ds, revisions=[]).hash


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    for i in range(3):
        c.put_node(make_node(f"node-{i}"))
    c.put_ds(make_ds())
    return c


def test_first_flush_announces_a_layout(cluster: Cluster) -> None:
    """The first flush lays the grid out: the page must fetch a snapshot, no cells are streamed."""
    update = cluster.model.flush()
    assert update is not None and update.layout_changed and update.cells == ()
    snap = cluster.model.snapshot()
    assert snap["nodes"] == ["node-0", "node-1", "node-2"]
    assert [d["key"] for d in snap["daemonsets"]] == ["default/foo"]
    assert snap["cells"] == [[Cell(State.MISSING).code] * 3]
    assert cluster.model.flush() is None


def test_pod_events_coalesce_into_one_delta_per_flush(cluster: Cluster) -> None:
    """Many events on one cell between two flushes send its final state once."""
    cluster.model.flush()
    ds = make_ds()
    pod = make_pod("node-1", hash=current_hash(ds), phase="Pending")
    cluster.put_pod(pod)
    for phase, ready in (("Running", False), ("Running", True)):
        changed = copy.deepcopy(pod)
        changed["status"] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
        cluster.put_pod(changed)
    update = cluster.model.flush()
    assert update is not None
    assert update == Update(seq=update.seq, layout=1, cells=(0, 1, Cell(State.READY, Revision.NEW).code),
                            headers={})
    assert cluster.model.flush() is None


def test_delta_carries_only_cells_that_changed(cluster: Cluster) -> None:
    """A pod event that leaves its cell's state alone sends nothing."""
    ds = make_ds()
    pod = make_pod("node-0", hash=current_hash(ds), ready=True)
    cluster.put_pod(pod)
    cluster.model.flush()
    relabelled = copy.deepcopy(pod)
    relabelled["metadata"]["labels"]["extra"] = "x"
    cluster.put_pod(relabelled)
    assert cluster.model.flush() is None


def test_pod_deleted_goes_back_to_missing(cluster: Cluster) -> None:
    """Deleting the pod makes its cell missing again."""
    pod = make_pod("node-2", hash=current_hash(make_ds()), ready=True)
    cluster.put_pod(pod)
    cluster.model.flush()
    cluster.delete_pod(pod)
    update = cluster.model.flush()
    assert update is not None and update.cells == (0, 2, Cell(State.MISSING).code)


def test_status_only_change_sends_the_header_alone(cluster: Cluster) -> None:
    """A DaemonSet status write updates its progress header and recomputes no cell."""
    cluster.model.flush()
    ds = make_ds()
    ds["status"] = {"desiredNumberScheduled": 3, "updatedNumberScheduled": 2, "numberAvailable": 1,
                    "conditions": [{"type": "Progressing", "status": "True", "reason": "RevisionUpdated"}]}
    cluster.put_ds(ds)
    update = cluster.model.flush()
    assert update is not None and update.cells == ()
    header = update.headers[0]
    assert (header["desired"], header["updated"], header["available"]) == (3, 2, 1)
    assert header["conditions"] == [{"type": "Progressing", "status": "True", "reason": "RevisionUpdated",
                                     "message": ""}]


def test_template_change_turns_pods_old(cluster: Cluster) -> None:
    """A new template (new generation) makes the current pods old, by the controller's hash."""
    ds = make_ds()
    for i in range(3):
        cluster.put_pod(make_pod(f"node-{i}", hash=current_hash(ds), ready=True))
    cluster.model.flush()
    changed = make_ds()
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "img:2"
    changed["metadata"]["generation"] = 2
    cluster.put_ds(changed)
    update = cluster.model.flush()
    old = Cell(State.READY, Revision.OLD).code
    assert triples(update) == [(0, 0, old), (0, 1, old), (0, 2, old)]
    assert update is not None and update.headers[0]["revision"] == current_hash(changed)


def test_current_revision_follows_the_stored_history(cluster: Cluster) -> None:
    """A revision storing the template under another name (another writer's hash) is the current one."""
    ds = make_ds()
    cluster.put_pod(make_pod("node-0", hash="kcm-hash", ready=True))
    cluster.model.flush()
    assert cluster.cell("node-0").revision is Revision.OLD
    revision = plan_history(ds=ds, revisions=[]).current
    revision["metadata"]["name"] = "foo-kcm-hash"
    revision["metadata"]["labels"]["controller-revision-hash"] = "kcm-hash"
    revision["metadata"]["namespace"] = "default"
    cluster.put_revision(revision)
    update = cluster.model.flush()
    assert update is not None and update.cells == (0, 0, Cell(State.READY, Revision.NEW).code)


def test_collision_count_moves_the_hash() -> None:
    """The hash is computed with status.collisionCount, as the controller computes it."""
    ds = make_ds()
    ds["status"]["collisionCount"] = 1
    assert current_hash(ds) == compute_hash(ds["spec"]["template"], 1) != current_hash(make_ds())


def test_pause_holds_old_pods_and_resume_releases_them(cluster: Cluster) -> None:
    """Pausing marks every old pod held; removing the annotation clears the holds."""
    for i in range(3):
        cluster.put_pod(make_pod(f"node-{i}", hash="old", ready=True))
    cluster.model.flush()
    cluster.put_ds(make_ds(annotations={"dsctl.io/paused": "true"}))
    update = cluster.model.flush()
    held = Cell(State.READY, Revision.OLD, Hold.PAUSED).code
    assert triples(update) == [(0, 0, held), (0, 1, held), (0, 2, held)]
    assert update is not None and update.headers[0]["paused"] is True
    cluster.put_ds(make_ds())
    update = cluster.model.flush()
    assert update is not None and update.cells[2::3] == (Cell(State.READY, Revision.OLD).code,) * 3


def test_partition_hold_moves_as_pods_update(cluster: Cluster) -> None:
    """With partition 1, the last node stays held while the others update."""
    ds = make_ds(annotations={"dsctl.io/partition": "1"})
    cluster.put_ds(ds)
    pods = [make_pod(f"node-{i}", hash="old", ready=True) for i in range(3)]
    for pod in pods:
        cluster.put_pod(pod)
    cluster.model.flush()
    assert [cluster.cell(f"node-{i}").hold for i in range(3)] == [Hold.NONE, Hold.NONE, Hold.PARTITION]


def test_invalid_control_holds_the_rollout(cluster: Cluster) -> None:
    """An unreadable control holds every old pod, as the controller does, and the header says why."""
    cluster.put_pod(make_pod("node-0", hash="old", ready=True))
    cluster.put_ds(make_ds(annotations={"dsctl.io/partition": "lots"}))
    cluster.model.flush()
    header = cluster.model.snapshot()["daemonsets"][0]["header"]
    assert header["problems"] and "dsctl.io/partition" in header["problems"][0]
    assert cluster.cell("node-0").hold is Hold.PAUSED


def test_nodes_skipped_as_unhealthy_are_coloured() -> None:
    """Skip: an old pod on a node NotReady past unhealthyNodeSeconds shows Hold.UNHEALTHY, as the
    controller skips it; a node NotReady for less, or under Count, shows no hold."""
    c = Cluster()
    c.model = GridModel(daemonsets=c.daemonsets, nodes=c.nodes, pods=c.pods, revisions=c.revisions,
                        wall=lambda: T0)
    c.put_node(make_node("node-0", ready=False, ready_since=T0 - 300))
    c.put_node(make_node("node-1", ready=False, ready_since=T0 - 10))
    c.put_node(make_node("node-2"))
    c.put_ds(make_ds(annotations={"dsctl.io/unhealthy-node-policy": "Skip"}))
    for i in range(3):
        c.put_pod(make_pod(f"node-{i}", hash="old", ready=i == 2))
    c.model.flush()
    assert [c.cell(f"node-{i}").hold for i in range(3)] == [Hold.UNHEALTHY, Hold.NONE, Hold.NONE]
    c.put_ds(make_ds())
    c.model.flush()
    assert c.cell("node-0").hold is Hold.NONE


GATE = taint(READINESS_TAINT, "NoSchedule")


def test_a_node_under_the_readiness_taint_still_wants_every_agent(cluster: Cluster) -> None:
    """Every daemon pod tolerates the readiness taint (as the controller makes it): a tainted node shows
    the pod as missing, not kept off, and the cell marks the node gated."""
    cluster.model.flush()
    cluster.put_node(make_node("node-1", taints=[GATE]))
    update = cluster.model.flush()
    assert update is not None and update.cells == (0, 1, Cell(State.MISSING, gated=Gate.YES).code)


def test_without_a_gate_the_taint_keeps_the_pod_off() -> None:
    """--readiness-taint "" (the controller runs without the gate): the taint is an ordinary one."""
    c = Cluster(readiness_taint=None)
    c.put_node(make_node("node-0", taints=[GATE]))
    c.put_ds(make_ds())
    c.model.flush()
    assert c.cell("node-0") == Cell(State.NOT_WANTED)


def test_another_readiness_taint_is_the_one_tolerated() -> None:
    """--readiness-taint names the taint: the default key is then an ordinary taint, the named one gated."""
    c = Cluster(readiness_taint=ReadinessTaint("example.com/not-ready"))
    c.put_node(make_node("node-0", taints=[GATE]))
    c.put_node(make_node("node-1", taints=[taint("example.com/not-ready", "NoSchedule")]))
    c.put_ds(make_ds())
    c.model.flush()
    assert [c.cell("node-0"), c.cell("node-1")] == [Cell(State.NOT_WANTED), Cell(State.MISSING, gated=Gate.YES)]


def test_the_gate_waits_for_a_gating_agent_until_its_pod_is_available() -> None:
    """A gating DaemonSet's cell on a tainted node is WAITING until its pod is Ready (plan_gate's own
    answer); another DaemonSet's cell there only marks the node gated."""
    c = Cluster()
    c.put_node(make_node("node-0", taints=[GATE]))
    c.put_ds(make_ds(annotations={"dsctl.io/node-readiness-gate": "true"}))
    c.put_ds(make_ds("other", uid="other-uid"))
    c.model.flush()
    assert c.cell("node-0").gated is Gate.WAITING
    assert c.cell("node-0", "default/other").gated is Gate.YES
    starting = make_pod("node-0", hash=current_hash(make_ds()), ready=False)
    c.put_pod(starting)
    c.model.flush()
    assert (c.cell("node-0").state, c.cell("node-0").gated) == (State.NOT_READY, Gate.WAITING)
    ready = make_pod("node-0", hash=current_hash(make_ds()), ready=True, ready_since=T0 - 5)
    ready["metadata"] = starting["metadata"]
    c.put_pod(ready)
    c.model.flush()
    assert (c.cell("node-0").state, c.cell("node-0").gated) == (State.READY, Gate.YES)


def test_rollout_skipped_nodes_is_in_the_header(cluster: Cluster) -> None:
    """The controller's RolloutSkippedNodes condition reaches the header with its message."""
    ds = make_ds()
    ds["status"] = {"conditions": [{"type": "RolloutSkippedNodes", "status": "True", "reason": "UnhealthyNodes",
                                    "message": "1 node is left out of the rolling update, not Ready for 60s or "
                                               "more: node-0"}]}
    cluster.model.flush()
    cluster.put_ds(ds)
    update = cluster.model.flush()
    assert update is not None
    (condition,) = update.headers[0]["conditions"]
    assert condition == {"type": "RolloutSkippedNodes", "status": "True", "reason": "UnhealthyNodes",
                         "message": ds["status"]["conditions"][0]["message"]}


def test_node_joining_and_leaving_changes_the_layout(cluster: Cluster) -> None:
    """A node added or deleted changes the layout (a new snapshot), with its cells computed."""
    cluster.model.flush()
    cluster.put_node(make_node("node-10"))
    update = cluster.model.flush()
    assert update is not None and update.layout_changed and update.layout == 2
    snap = cluster.model.snapshot()
    assert snap["nodes"] == ["node-0", "node-1", "node-10", "node-2"]  # the rolling update's order
    assert snap["cells"][0][2] == Cell(State.MISSING).code
    cluster.delete_node("node-1")
    assert cluster.model.flush() is not None
    assert cluster.model.snapshot()["nodes"] == ["node-0", "node-10", "node-2"]


def test_node_heartbeat_changes_nothing(cluster: Cluster) -> None:
    """A node update that no cell depends on (a status change) costs no recomputation."""
    cluster.model.flush()
    cluster.put_node(make_node("node-0", ready=False))
    assert not cluster.model.pending


def test_zones(cluster: Cluster) -> None:
    """Every node's zone is in the snapshot; a zone change is a layout change."""
    cluster.model.flush()
    cluster.put_node(make_node("node-0", labels={ZONE_LABEL: "b"}))
    cluster.put_node(make_node("node-2", labels={ZONE_LABEL: "a"}))
    assert cluster.model.flush().layout_changed  # type: ignore[union-attr]
    snap = cluster.model.snapshot()
    assert snap["zones"] == ["", "a", "b"]
    assert snap["nodeZone"] == [2, 0, 1]


def test_daemonsets_are_rows_in_key_order(cluster: Cluster) -> None:
    """Rows are DaemonSets by namespace/name; pods of an unknown owner are ignored."""
    cluster.put_ds(make_ds("bar", uid="uid-bar", namespace="kube-system"))
    cluster.put_pod(make_pod("node-0", owner_uid="someone-else"))
    cluster.model.flush()
    snap = cluster.model.snapshot()
    assert [d["key"] for d in snap["daemonsets"]] == ["default/foo", "kube-system/bar"]
    assert snap["cells"][0][0] == Cell(State.MISSING).code


def test_plan_overlay_in_snapshot() -> None:
    """Planned waves are aligned with the layout's nodes; DaemonSets missing from the cluster are listed."""
    plan = PlanOverlay(source="plan.json", waves={"default/foo": {"node-1": 1, "node-0": 2}, "default/gone": {}})
    c = Cluster(plan=plan)
    for i in range(3):
        c.put_node(make_node(f"node-{i}"))
    c.put_ds(make_ds())
    c.model.flush()
    snap = c.model.snapshot()
    assert snap["plan"] == {"source": "plan.json", "maxWave": 2, "waves": [[2, 1, 0]], "unmatched": ["default/gone"]}
    assert c.model.details("default/foo", "node-0")["plannedWave"] == 2  # type: ignore[index]


def test_details(cluster: Cluster) -> None:
    """Details name the pod, its revision against the current one, and the node."""
    pod = make_pod("node-0", hash="old", ready=True)
    cluster.put_pod(pod)
    cluster.model.flush()
    details = cluster.model.details("default/foo", "node-0")
    assert details is not None
    assert details["cell"] == {"state": "READY", "revision": "OLD", "hold": "NONE", "gated": False, "gate": "NO",
                               "code": Cell(State.READY, Revision.OLD).code}
    assert details["readinessTaint"] == "dsctl.io/agents-not-ready:NoSchedule"
    assert [p["name"] for p in details["pods"]] == [pod["metadata"]["name"]]
    assert details["pods"][0]["current"] is False
    assert details["node"]["name"] == "node-0"
    assert cluster.model.pod_of("default/foo", "node-0") is not None
    assert cluster.model.details("default/none", "node-0") is None
