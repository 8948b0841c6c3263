"""``GateHandlers``: which node names an event puts on the gate's queue, and that nothing else happens.

The handlers are built from injected callables over plain dicts; the queue records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from dsctl.controller.gatehandlers import GateHandlers
from dsctl.daemonset.readinessgate import ReadinessTaint
from dsctl.daemonset.template import target_node
from tests.unit.daemonset.objects import DS_UID, make_ds, make_node, make_pod, taint

TAINT = ReadinessTaint("dsctl.io/agents-not-ready")
GATE = taint("dsctl.io/agents-not-ready", "NoSchedule")


def gating_ds(*, gating: str = "true", **kwargs: Any) -> dict[str, Any]:
    return make_ds(annotations={"dsctl.io/node-readiness-gate": gating}, **kwargs)


@dataclass
class Kit:
    """The caches the handlers read, and the recorded queue."""

    continuous: bool = False
    daemonsets: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)

    def handlers(self) -> GateHandlers:
        return GateHandlers(
            ds_kind="DaemonSet", taint=TAINT, continuous=self.continuous, get_daemonset=self.daemonsets.get,
            get_node=self.nodes.get,
            tainted_nodes=lambda: sorted(n for n, node in self.nodes.items() if TAINT.on(node)),
            owned_pods=lambda uid: [p for p in self.pods
                                    if p["metadata"]["ownerReferences"][0]["uid"] == uid],
            enqueue=self.queued.append)

    def node(self, name: str, *taints: dict[str, Any]) -> dict[str, Any]:
        self.nodes[name] = make_node(name, taints=list(taints))
        return self.nodes[name]

    def ds(self, **kwargs: Any) -> dict[str, Any]:
        body = gating_ds(**kwargs)
        self.daemonsets["default/foo"] = body
        return body


def _rv(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}


@pytest.mark.parametrize(
    ("old_taints", "new_taints", "labels_change", "queued"),
    [
        pytest.param([], [GATE], False, ["n1"], id="taint-gained"),
        pytest.param([GATE], [], False, ["n1"], id="taint-lost"),
        pytest.param([GATE], [GATE], True, ["n1"], id="tainted-node-relabelled"),
        pytest.param([GATE], [GATE], False, [], id="tainted-heartbeat"),
        pytest.param([], [], True, [], id="untainted-relabelled"),
    ],
)
def test_node_updates(old_taints: list[dict[str, Any]], new_taints: list[dict[str, Any]], labels_change: bool,
                      queued: list[str]) -> None:
    """A node wakes its gate when the taint comes or goes, or a tainted node's placement inputs change."""
    kit = Kit()
    old, new = make_node("n1", taints=old_taints), make_node("n1", taints=new_taints,
                                                              labels={"pool": "gpu"} if labels_change else None)
    kit.handlers().on_node_update(old, new)
    assert kit.queued == queued


def test_node_add_and_delete() -> None:
    """Only a node carrying the taint concerns the gate when it joins or leaves."""
    kit = Kit()
    handlers = kit.handlers()
    handlers.on_node_add(make_node("plain"))
    handlers.on_node_add(make_node("tainted", taints=[GATE]))
    handlers.on_node_delete(make_node("plain"))
    handlers.on_node_delete(make_node("tainted", taints=[GATE]))
    assert kit.queued == ["tainted", "tainted"]


@pytest.mark.parametrize(
    ("continuous", "node_taints", "gating", "queued"),
    [
        pytest.param(False, [GATE], "true", ["n1"], id="gating-pod-on-tainted-node"),
        pytest.param(False, [], "true", [], id="untainted-node-bootstrap"),
        pytest.param(True, [], "true", ["n1"], id="untainted-node-continuous"),
        pytest.param(False, [GATE], "false", [], id="not-gating"),
    ],
)
def test_pod_readiness_wakes_its_node(continuous: bool, node_taints: list[dict[str, Any]], gating: str,
                                      queued: list[str]) -> None:
    """A gating pod turning Ready wakes its node when the node carries the taint (any node, in continuous mode)."""
    kit = Kit(continuous=continuous)
    kit.node("n1", *node_taints)
    kit.ds(gating=gating)
    old = _rv(make_pod("n1", ready=False), "1")
    new = _rv({**old, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}, "2")
    kit.handlers().on_pod_update(old, new)
    assert kit.queued == queued


def test_pod_updates_that_change_nothing_the_gate_reads_are_dropped() -> None:
    """A pod update with the same readiness, deletion and node wakes nothing."""
    kit = Kit()
    kit.node("n1", GATE)
    kit.ds()
    old = _rv(make_pod("n1", ready=True), "1")
    kit.handlers().on_pod_update(old, _rv({**old, "status": {**old["status"], "podIP": "10.0.0.1"}}, "2"))
    kit.handlers().on_pod_update(old, old)
    assert kit.queued == []


def test_pods_of_another_owner_or_uid_are_ignored() -> None:
    """A pod whose controller is another object, or a DaemonSet of the same name re-created, wakes nothing."""
    kit = Kit()
    kit.node("n1", GATE)
    kit.ds()
    handlers = kit.handlers()
    handlers.on_pod_add(make_pod("n1", owner_uid="another-uid"))
    handlers.on_pod_add(make_pod("n1", owner_uid=None))
    handlers.on_pod_add(make_pod("n1", owner_uid=DS_UID))
    handlers.on_pod_delete(make_pod("n1", owner_uid=DS_UID))
    assert kit.queued == ["n1", "n1"]


def test_a_gating_daemonset_event_wakes_the_tainted_nodes_only() -> None:
    """Adding a gating DaemonSet wakes exactly the nodes carrying the taint; a plain one wakes none."""
    kit = Kit()
    for name, taints in (("a", [GATE]), ("b", []), ("c", [GATE])):
        kit.node(name, *taints)
    handlers = kit.handlers()
    handlers.on_ds_add(make_ds())
    handlers.on_ds_add(gating_ds())
    assert kit.queued == ["a", "c"]


@pytest.mark.parametrize(
    ("change", "queued"),
    [
        pytest.param("status", [], id="status-only"),
        pytest.param("resync", ["a"], id="resync"),
        pytest.param("spec", ["a"], id="spec"),
        pytest.param("ungate", ["a"], id="gate-turned-off"),
        pytest.param("deleting", ["a"], id="deletion-began"),
    ],
)
def test_gating_daemonset_updates(change: str, queued: list[str]) -> None:
    """Only what the gate reads wakes the tainted nodes; the DaemonSet's own status writes do not."""
    kit = Kit()
    kit.node("a", GATE)
    old = _rv(gating_ds(), "1")
    new: dict[str, Any]
    if change == "status":
        new = _rv({**old, "status": {"numberReady": 3}}, "2")
    elif change == "resync":
        new = old
    elif change == "spec":
        new = _rv({**old, "spec": {**old["spec"], "minReadySeconds": 5}}, "2")
    elif change == "ungate":
        new = _rv(gating_ds(gating="false"), "2")
    else:
        new = _rv({**old, "metadata": {**old["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}, "2")
    kit.handlers().on_ds_update(old, new)
    assert kit.queued == queued


def test_continuous_mode_also_wakes_the_nodes_of_unready_pods() -> None:
    """In continuous mode a gating DaemonSet event also wakes the nodes of its pods that are not Ready."""
    kit = Kit(continuous=True)
    kit.node("tainted", GATE)
    kit.pods = [make_pod("ok", ready=True), make_pod("bad", ready=False)]
    kit.handlers().on_ds_add(gating_ds())
    assert kit.queued == ["tainted", "bad"]
    assert {target_node(p) for p in kit.pods} == {"ok", "bad"}
