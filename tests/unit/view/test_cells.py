"""The state of one cell of the view's grid, decided by the controller's own domain functions."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.eligibility import Eligibility, Fit
from dsctl.daemonset.extensions import rollout_controls
from dsctl.daemonset.readinessgate import DEFAULT_TAINT
from dsctl.view.cells import (
    CODEC,
    READINESS_TAINT,
    Cell,
    Gate,
    Hold,
    Revision,
    State,
    cell_of,
    gate_waits_for,
    holds,
    pick_pod,
    pod_state,
)
from tests.unit.daemonset.objects import HASH, T0, make_ds, make_node, make_pod, taint

OLD = "hash-old"
YES = Fit(True, True)
NO = Fit(False, False)
STAYS = Fit(False, True)  # NoSchedule taint: no new pod, the running one stays


@pytest.mark.parametrize(("fit", "gate", "pods", "expected"), [
    pytest.param(NO, False, [], Cell(State.NOT_WANTED), id="ineligible-no-pod"),
    pytest.param(YES, False, [], Cell(State.MISSING), id="eligible-no-pod"),
    pytest.param(YES, False, [make_pod("n", phase="Pending")], Cell(State.PENDING, Revision.NEW), id="pending"),
    pytest.param(YES, False, [make_pod("n", phase="Pending", bound=False)], Cell(State.PENDING, Revision.NEW),
                 id="unscheduled"),
    pytest.param(YES, False, [make_pod("n", ready=False)], Cell(State.NOT_READY, Revision.NEW), id="not-ready"),
    pytest.param(YES, False, [make_pod("n")], Cell(State.NOT_READY, Revision.NEW), id="running-without-condition"),
    pytest.param(YES, False, [make_pod("n", ready=True)], Cell(State.READY, Revision.NEW), id="ready-new"),
    pytest.param(YES, False, [make_pod("n", ready=True, hash=OLD)], Cell(State.READY, Revision.OLD), id="ready-old"),
    pytest.param(YES, False, [make_pod("n", phase="Failed")], Cell(State.FAILED, Revision.NEW), id="failed"),
    pytest.param(YES, False, [make_pod("n", phase="Succeeded")], Cell(State.FAILED, Revision.NEW), id="succeeded"),
    pytest.param(YES, False, [make_pod("n", phase="Unknown")], Cell(State.NOT_READY, Revision.NEW), id="unknown"),
    pytest.param(YES, False, [make_pod("n", ready=True, hash=OLD, deleting=True)],
                 Cell(State.TERMINATING, Revision.OLD), id="terminating"),
    pytest.param(STAYS, False, [make_pod("n", ready=True)], Cell(State.READY, Revision.NEW),
                 id="tainted-node-keeps-its-pod"),
    pytest.param(NO, False, [make_pod("n", ready=True)], Cell(State.READY, Revision.NEW),
                 id="misscheduled-pod-still-shown"),
    pytest.param(YES, False, [make_pod("n", ready=True, hash=OLD), make_pod("n", phase="Pending")],
                 Cell(State.PENDING, Revision.NEW), id="surge-shows-the-new-pod"),
    pytest.param(YES, False, [make_pod("n", hash=OLD, deleting=True), make_pod("n", phase="Pending")],
                 Cell(State.PENDING, Revision.NEW), id="live-pod-before-terminating"),
])
def test_cell_of(fit: Fit, gate: bool, pods: list[dict[str, Any]], expected: Cell) -> None:
    """A cell shows the pod's state and revision, or why there is no pod."""
    assert cell_of(fit=fit, pods=pods, hash=HASH, generation=None) == expected


@pytest.mark.parametrize(("pod", "hold", "expected"), [
    pytest.param(make_pod("n", ready=True, hash=OLD), Hold.PAUSED, Cell(State.READY, Revision.OLD, Hold.PAUSED),
                 id="old-pod-held"),
    pytest.param(make_pod("n", ready=True), Hold.PAUSED, Cell(State.READY, Revision.NEW), id="new-pod-never-held"),
    pytest.param(None, Hold.PARTITION, Cell(State.MISSING), id="no-pod-never-held"),
])
def test_hold_shows_only_on_old_pods(pod: dict[str, Any] | None, hold: Hold, expected: Cell) -> None:
    """A hold marks an old pod; a new pod or an empty node has nothing to hold."""
    pods = [pod] if pod is not None else []
    assert cell_of(fit=YES, pods=pods, hash=HASH, generation=None, hold=hold) == expected


def test_generation_label_counts_as_current() -> None:
    """A pod of the current template generation is new even with another hash (as the controller judges)."""
    pod = make_pod("n", ready=True, hash=OLD)
    pod["metadata"]["labels"]["pod-template-generation"] = "7"
    assert cell_of(fit=YES, pods=[pod], hash=HASH, generation=7).revision is Revision.NEW


@pytest.mark.parametrize("gate", list(Gate))
def test_gate_is_carried(gate: Gate) -> None:
    """The node's readiness gate is part of every cell on it."""
    assert cell_of(fit=YES, pods=[], hash=HASH, generation=None, gated=gate).gated is gate


@pytest.mark.parametrize("cell", [
    pytest.param(Cell(), id="empty"),
    pytest.param(Cell(State.FAILED, Revision.NEW, Hold.UNHEALTHY, Gate.WAITING), id="all-high"),
    pytest.param(Cell(State.READY, Revision.OLD, Hold.SELECTOR, Gate.YES), id="held"),
])
def test_code_round_trips_through_the_codec(cell: Cell) -> None:
    """``code`` packs every axis where ``CODEC`` says, and ``decode`` reverses it."""
    code = cell.code
    assert Cell.decode(code) == cell
    for axis, value in (("state", cell.state), ("revision", cell.revision), ("hold", cell.hold),
                        ("gated", cell.gated)):
        spec = CODEC[axis]
        assert spec["names"][code >> spec["shift"] & (1 << spec["bits"]) - 1] == value.name


def test_codec_fields_do_not_overlap() -> None:
    """Every axis has its own bits, wide enough for its names."""
    used = 0
    for spec in CODEC.values():
        assert len(spec["names"]) <= 1 << spec["bits"]
        mask = ((1 << spec["bits"]) - 1) << spec["shift"]
        assert used & mask == 0
        used |= mask


@pytest.mark.parametrize(("pod", "expected"), [
    pytest.param(make_pod("n", phase="Pending"), State.PENDING, id="pending"),
    pytest.param({"metadata": {"name": "p"}}, State.PENDING, id="no-status"),
    pytest.param(make_pod("n", ready=True, deleting=True), State.TERMINATING, id="deleting-wins"),
])
def test_pod_state(pod: dict[str, Any], expected: State) -> None:
    """A pod's phase, readiness and deletion map onto one state."""
    assert pod_state(pod) == expected


def test_pick_prefers_live_current_then_controller_order() -> None:
    """Among several pods of one node: live before terminating, current before old, then oldest."""
    old = make_pod("n", ready=True, hash=OLD, created=100)
    new_later = make_pod("n", phase="Pending", created=300)
    new_earlier = make_pod("n", phase="Pending", created=200)
    dying = make_pod("n", deleting=True, created=50)
    assert pick_pod([old, dying, new_later, new_earlier], HASH, None) is new_earlier
    assert pick_pod([dying, old], HASH, None) is old
    assert pick_pod([], HASH, None) is None


GATE = taint(READINESS_TAINT, "NoSchedule")
GATING = {"dsctl.io/node-readiness-gate": "true"}


@pytest.mark.parametrize(("annotations", "node", "pods", "waits"), [
    pytest.param(GATING, make_node("n", taints=[GATE]), [], True, id="no-pod-yet"),
    pytest.param(GATING, make_node("n", taints=[GATE]), [make_pod("n", ready=False)], True, id="not-ready"),
    pytest.param(GATING, make_node("n", taints=[GATE]), [make_pod("n", ready=True, ready_since=T0 - 5)], False,
                 id="available"),
    pytest.param(GATING, make_node("n", taints=[GATE, taint("dedicated", "NoSchedule")]), [], False,
                 id="another-taint-rules-it-out"),
    pytest.param(GATING, make_node("n", labels={"pool": "b"}, taints=[GATE]), [], False, id="not-selected",),
])
def test_gate_waits_for(annotations: dict[str, str], node: dict[str, Any], pods: list[dict[str, Any]],
                        waits: bool) -> None:
    """The gate waits for a gating DaemonSet's pod exactly when the controller's plan_gate holds the node
    for it; eligibility is judged with the readiness taint's toleration, as the controller judges it."""
    selector = {"nodeSelector": {"pool": "a"}} if "pool" in node["metadata"]["labels"] else None
    ds = make_ds(annotations=annotations, pod_spec=selector)
    rules = Eligibility.of(ds, extra=(DEFAULT_TAINT.toleration(),))
    assert gate_waits_for(key="default/foo", node=node, fit=rules.check(node), pods=pods, min_ready=0,
                          taint=DEFAULT_TAINT, now=T0) is waits


def _old_pods(nodes: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {n: [make_pod(n, ready=True, hash=OLD)] for n in nodes}


NODES = [f"node-{i}" for i in range(4)]
ZONE_A = {"node-0": {"zone": "a"}, "node-1": {"zone": "a"}, "node-2": {"zone": "b"}, "node-3": {"zone": "b"}}


@pytest.mark.parametrize(("annotations", "rolling", "expected"), [
    pytest.param({}, True, {}, id="no-controls"),
    pytest.param({"dsctl.io/paused": "true"}, True, dict.fromkeys(NODES, Hold.PAUSED), id="paused"),
    pytest.param({"dsctl.io/paused": "true"}, False, {}, id="on-delete-holds-nothing"),
    pytest.param({"dsctl.io/partition": "1"}, True, {"node-3": Hold.PARTITION}, id="partition-keeps-the-last"),
    pytest.param({"dsctl.io/selector": "zone=a"}, True, {"node-2": Hold.SELECTOR, "node-3": Hold.SELECTOR},
                 id="selector-canary"),
    pytest.param({"dsctl.io/selector": "zone=a", "dsctl.io/partition": "3"}, True,
                 {"node-1": Hold.PARTITION, "node-2": Hold.SELECTOR, "node-3": Hold.SELECTOR},
                 id="selector-and-partition"),
])
def test_holds(annotations: dict[str, str], rolling: bool, expected: dict[str, Hold]) -> None:
    """Which old pods the rolling update leaves alone, and which control holds each."""
    ds = make_ds(annotations=annotations)
    got = holds(controls=rollout_controls(ds), rolling=rolling, pods_by_node=_old_pods(NODES), nodes_should_run=NODES,
                hash=HASH, generation=None, node_labels=ZONE_A)
    assert got == expected


def test_holds_count_updated_nodes_against_partition() -> None:
    """With partition 2 and one node already updated, one more old pod may go: two stay held."""
    pods = _old_pods(NODES)
    pods["node-0"] = [make_pod("node-0", ready=True)]
    ds = make_ds(annotations={"dsctl.io/partition": "2"})
    got = holds(controls=rollout_controls(ds), rolling=True, pods_by_node=pods, nodes_should_run=NODES, hash=HASH,
                generation=None, node_labels=ZONE_A)
    assert got == {"node-2": Hold.PARTITION, "node-3": Hold.PARTITION}


def test_skipped_unhealthy_comes_from_the_caller() -> None:
    """Nodes the controller's planner skips as unhealthy are taken as given, never guessed."""
    got = holds(controls=rollout_controls(make_ds()), rolling=True, pods_by_node=_old_pods(NODES),
                nodes_should_run=NODES, hash=HASH, generation=None, node_labels=ZONE_A, skipped_unhealthy=["node-1"])
    assert got == {"node-1": Hold.UNHEALTHY}
