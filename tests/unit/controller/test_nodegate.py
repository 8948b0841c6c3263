"""``NodeGate.sync``: one node's gate planned from the caches and carried out through the client.

Real stores with the gate's indexes, a fake client that applies JSON patches as kube-apiserver
does (a failed ``test`` is 422), and a recording event recorder; the clock is injected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from dsctl.controller.cacheview import (
    BY_READINESS_GATE,
    BY_READINESS_TAINT,
    BY_TARGET_NODE,
    by_readiness_gate,
    by_readiness_taint,
    by_target_node,
)
from dsctl.controller.gatememory import ReadinessGateMemory
from dsctl.controller.nodegate import NodeGate
from dsctl.controller.workers import Done, Outcome, Retry
from dsctl.controller.writes import WriteSignals
from dsctl.daemonset.readinessgate import CONTINUOUS, GateMemory, GateSettings, ReadinessTaint
from dsctl.daemonset.reasons import FAILED_PATCH_NODE, READINESS_GATE_TIMEOUT, READINESS_TAINT_ADDED
from dsctl.informer.store import ReadOnlyStore, Store, object_key
from dsctl.kube import errors
from dsctl.kube.resources import NODES
from dsctl_api.timefmt import format_rfc3339
from tests.unit.controller.fakeclient import FakeClient
from tests.unit.daemonset.objects import DS_UID, T0, make_ds, make_node, make_pod, taint

TAINT = ReadinessTaint("dsctl.io/agents-not-ready")
GATE = taint("dsctl.io/agents-not-ready", "NoSchedule")
OTHER = taint("example.com/soft", "PreferNoSchedule")
"""Another taint of the node, one no DaemonSet needs to tolerate."""


@dataclass
class Events:
    """Records (object name, type, reason, message)."""

    recorded: list[tuple[str, str, str, str]] = field(default_factory=list)

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self.recorded.append((obj["metadata"]["name"], event_type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, _, reason, _ in self.recorded]


@dataclass
class Rig:
    """A gate over real stores and a fake client."""

    settings: GateSettings = field(default_factory=lambda: GateSettings(taint=TAINT))
    fake: FakeClient = field(default_factory=FakeClient)
    events: Events = field(default_factory=Events)
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    now: float = T0

    def __post_init__(self) -> None:
        self.nodes = Store(indexers={BY_READINESS_TAINT: by_readiness_taint(TAINT)})
        self.daemonsets = Store(indexers={BY_READINESS_GATE: by_readiness_gate})
        self.pods = Store(indexers={BY_TARGET_NODE: by_target_node})
        self.memory = ReadinessGateMemory(extra=(TAINT.toleration(),))
        self.gate = NodeGate(
            client=self.fake.as_client(), settings=self.settings, nodes=ReadOnlyStore(self.nodes),
            daemonsets=ReadOnlyStore(self.daemonsets), pods_on_node=lambda n: self.pods.by_index(BY_TARGET_NODE, n),
            memory=self.memory, recorder=self.events, signals=WriteSignals(recorder=self.events),
            registry=self.registry, wall=lambda: self.now)

    def node(self, name: str, *taints: dict[str, Any], labels: dict[str, str] | None = None,
             created: float = T0 - 5) -> None:
        """The node in the API and, as the informer would hold it, in the cache."""
        body = make_node(name, taints=list(taints), labels=labels)
        body["metadata"]["creationTimestamp"] = format_rfc3339(created)
        stored = self.fake.put(NODES, body)
        self.nodes.upsert(stored)

    def daemonset(self, name: str, *, gating: bool | str = True, uid: str = DS_UID, **kwargs: Any) -> None:
        ds = make_ds(name, uid=uid, annotations={"dsctl.io/node-readiness-gate": str(gating).lower()}, **kwargs)
        self.daemonsets.upsert(ds)

    def pod(self, node: str, *, owner: str = DS_UID, **kwargs: Any) -> dict[str, Any]:
        pod = make_pod(node, owner_uid=owner, **kwargs)
        self.pods.upsert(pod)
        return pod

    def taints(self, name: str) -> list[dict[str, Any]]:
        stored = self.fake.stored(NODES, name)
        assert stored is not None
        return list((stored.get("spec") or {}).get("taints") or [])

    def sample(self, metric: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(metric, labels)


def _requeue(outcome: Outcome) -> float | None:
    assert isinstance(outcome, Done), outcome
    return outcome.requeue_after


async def test_removes_the_taint_once_every_gating_pod_is_ready() -> None:
    """Two gating DaemonSets: held while one pod is not Ready; removed, other taints kept, once both are."""
    rig = Rig()
    rig.node("n1", OTHER, GATE)
    rig.daemonset("cni", uid="u-cni")
    rig.daemonset("csi", uid="u-csi")
    rig.pod("n1", owner="u-cni", ready=True, ready_since=T0 - 2)
    starting = rig.pod("n1", owner="u-csi", ready=False, ready_since=T0 - 2)
    assert _requeue(await rig.gate.sync("n1")) == pytest.approx(595.0)
    assert rig.fake.calls == [] and rig.memory.get("n1") == GateMemory(since=T0 - 5)
    rig.pod("n1", owner="u-csi", ready=True, ready_since=T0)
    rig.pods.delete(object_key(starting))
    rig.now = T0 + 1
    assert await rig.gate.sync("n1") == Done()
    [call] = rig.fake.calls
    assert (call.verb, call.resource, call.options["patch_type"]) == ("patch", "nodes", "json")
    assert rig.taints("n1") == [OTHER]
    assert rig.memory.get("n1") is None
    assert rig.sample("dsctl_node_readiness_gate_duration_seconds_sum") == 6.0


async def test_a_daemonset_that_does_not_want_the_node_does_not_hold_it() -> None:
    """A gating DaemonSet whose nodeSelector excludes the node: no pod there, and the taint goes."""
    rig = Rig()
    rig.node("n1", GATE, labels={"pool": "cpu"})
    rig.daemonset("gpu", pod_spec={"nodeSelector": {"pool": "gpu"}})
    assert await rig.gate.sync("n1") == Done()
    assert rig.taints("n1") == []


async def test_the_readiness_taint_itself_never_rules_a_node_out() -> None:
    """The gating DaemonSet wants the tainted node (its pods tolerate the taint): the node is held."""
    rig = Rig()
    rig.node("n1", GATE)
    rig.daemonset("cni")
    await rig.gate.sync("n1")
    assert rig.fake.calls == [] and rig.taints("n1") == [GATE]


async def test_non_gating_and_deleting_daemonsets_do_not_hold() -> None:
    """Only gating DaemonSets that are not being deleted hold a node."""
    rig = Rig()
    rig.node("n1", GATE)
    rig.daemonset("log", gating=False, uid="u-log")
    rig.daemonset("old", uid="u-old")
    deleting = rig.daemonsets.get("default/old")
    assert deleting is not None
    gone = {**deleting["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    rig.daemonsets.upsert({**deleting, "metadata": gone})
    await rig.gate.sync("n1")
    assert rig.taints("n1") == []


async def test_an_unreadable_gate_value_gates() -> None:
    """``dsctl.io/node-readiness-gate: yes`` holds the node: a typo errs on the safe side."""
    rig = Rig()
    rig.node("n1", GATE)
    rig.daemonset("cni", gating="yes")
    await rig.gate.sync("n1")
    assert rig.taints("n1") == [GATE]


async def test_a_concurrent_taint_change_fails_the_patch_and_is_kept() -> None:
    """The API's node gained a taint the cache does not show yet: 422, a retry, and the new taint survives."""
    rig = Rig()
    rig.node("n1", GATE)
    stored = rig.fake.stored(NODES, "n1")
    assert stored is not None
    stored["spec"]["taints"] = [GATE, OTHER]
    outcome = await rig.gate.sync("n1")
    assert isinstance(outcome, Retry)
    assert rig.taints("n1") == [GATE, OTHER]
    assert rig.events.recorded == [] and rig.memory.get("n1") is None, "kept only once a removal went through"


async def test_a_refused_patch_speaks_on_the_node() -> None:
    """A 403 on the patch: a FailedPatchNode Warning on the Node, a retry, the memory untouched."""
    rig = Rig()
    rig.node("n1", GATE)
    rig.fake.fail("patch", NODES, errors.Forbidden(403, "Forbidden", "nodes \"n1\" is forbidden"))
    outcome = await rig.gate.sync("n1")
    assert isinstance(outcome, Retry)
    assert rig.events.reasons() == [FAILED_PATCH_NODE] and rig.events.recorded[0][0] == "n1"


async def test_timeout_warns_on_the_node_and_counts_it() -> None:
    """Past the timeout: one Warning on the Node naming the DaemonSet, the gauge at 1, the taint kept."""
    rig = Rig()
    rig.node("n1", GATE, created=T0 - 590)
    rig.daemonset("cni")
    assert _requeue(await rig.gate.sync("n1")) == pytest.approx(10.0)
    assert rig.sample("dsctl_node_readiness_timed_out_nodes") == 0.0
    rig.now = T0 + 10
    await rig.gate.sync("n1")
    await rig.gate.sync("n1")
    [(node, kind, reason, message)] = rig.events.recorded
    assert (node, kind, reason) == ("n1", "Warning", READINESS_GATE_TIMEOUT) and "default/cni" in message
    assert rig.sample("dsctl_node_readiness_timed_out_nodes") == 1.0
    assert rig.sample("dsctl_node_readiness_gated_nodes") == 1.0
    assert rig.taints("n1") == [GATE]


async def test_continuous_mode_adds_the_taint_back_after_the_retaint_time() -> None:
    """Continuous: a gating pod not Ready for the retaint time taints the node again, with an event."""
    rig = Rig(settings=GateSettings(taint=TAINT, mode=CONTINUOUS, retaint_seconds=30.0))
    rig.node("n1", OTHER)
    rig.daemonset("cni")
    rig.pod("n1", ready=False, ready_since=T0 - 10)
    assert _requeue(await rig.gate.sync("n1")) == pytest.approx(20.05)
    rig.now = T0 + 21
    assert await rig.gate.sync("n1") == Done()
    assert rig.taints("n1") == [OTHER, TAINT.body()]
    assert rig.events.reasons() == [READINESS_TAINT_ADDED]
    assert rig.memory.get("n1") == GateMemory(since=T0 + 21)


async def test_a_deleted_node_is_forgotten() -> None:
    """A node gone from the cache: nothing is written and its memory goes."""
    rig = Rig()
    rig.memory.keep("gone", GateMemory(since=T0, timed_out=True))
    assert await rig.gate.sync("gone") == Done()
    assert rig.memory.get("gone") is None and rig.memory.timed_out() == 0 and rig.fake.calls == []
