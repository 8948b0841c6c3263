"""Departing-node signals as real clusters show them, NoSchedule for plain pods, and taint patches."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_sim import nodes
from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.testing import make_pod, pin_to_node, wait_for
from dsctl_sim.departing import (
    KARPENTER_TERMINATION_FINALIZER,
    deletion_candidate_taint,
    karpenter_disrupted_taint,
    to_be_deleted_taint,
)
from dsctl_sim.storage import Storage
from simapi import Api

NODES = "/api/v1/nodes"
READINESS_TAINT = {"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}
Sim = tuple[Storage, ControlPlane, FakeClock]


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock, orphan_pod_delay=1.0)
    storage.create("nodes", nodes.make_node("n1", index=1, now=clock.now()))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _scheduled(storage: Storage, name: str) -> dict[str, Any] | None:
    pod = storage.get("pods", "default", name)
    conditions = (pod or {}).get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


def _bound_to(storage: Storage, name: str) -> str | None:
    pod = storage.get("pods", "default", name)
    node = (pod or {}).get("spec", {}).get("nodeName")
    return str(node) if node else None


def _set_taints(storage: Storage, taints: list[dict[str, Any]]) -> None:
    node = storage.get("nodes", None, "n1")
    assert node is not None
    storage.update("nodes", {**node, "spec": {**node.get("spec", {}), "taints": taints}})


@pytest.mark.parametrize("pinned", [pytest.param(False, id="any-node"), pytest.param(True, id="pinned")])
async def test_a_noschedule_taint_keeps_a_plain_pod_pending_until_removed(sim: Sim, pinned: bool) -> None:
    """PodScheduled False (Unschedulable) with the scheduler's wording; bound once the taint goes."""
    storage, plane, clock = sim
    _set_taints(storage, [READINESS_TAINT])
    storage.create("pods", make_pod("p", affinity=pin_to_node("n1") if pinned else None))
    condition = await wait_for(lambda: _scheduled(storage, "p"), what="PodScheduled")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {dsctl.io/agents-not-ready: }.")
    clock.advance(5)
    await plane.settle()
    assert _bound_to(storage, "p") is None
    _set_taints(storage, [])
    await plane.settle()
    clock.advance(1)  # an unpinned pod is retried at most once a second after a node change
    assert await wait_for(lambda: _bound_to(storage, "p"), what="bound") == "n1"


@pytest.mark.parametrize(
    ("taint", "binds"),
    [
        pytest.param(to_be_deleted_taint(1_800_000_000), False, id="autoscaler-to-be-deleted"),
        pytest.param(karpenter_disrupted_taint(), False, id="karpenter-disrupted"),
        pytest.param(deletion_candidate_taint(1_800_000_000), True, id="autoscaler-candidate-prefer"),
    ],
)
async def test_departing_taints_stay_and_keep_plain_pods_off(sim: Sim, taint: dict[str, Any], binds: bool) -> None:
    """The autoscalers' taints are kept as written (no loop removes them); NoSchedule ones keep a
    plain pod off, PreferNoSchedule does not, and a pod tolerating everything still lands."""
    storage, plane, _ = sim
    _set_taints(storage, [taint])
    storage.create("pods", make_pod("plain"))
    storage.create("pods", make_pod("agent", tolerations=[{"operator": "Exists"}]))
    await wait_for(lambda: _bound_to(storage, "agent"), what="agent bound")
    await wait_for(lambda: _bound_to(storage, "plain") or _scheduled(storage, "plain"), what="plain decided")
    await plane.settle()
    assert (_bound_to(storage, "plain") == "n1") is binds
    node = storage.get("nodes", None, "n1")
    assert node is not None and node["spec"]["taints"] == [taint]


async def test_a_node_with_a_finalizer_stays_in_deletion(sim: Sim) -> None:
    """Karpenter's finalizer: the deleted node keeps its object (deletionTimestamp, grace 0) and its
    pods; once the finalizer goes, the node is removed and pod GC removes its pods."""
    storage, plane, clock = sim
    node = nodes.make_node("leaving", index=2, now=clock.now())
    node["metadata"]["finalizers"] = [KARPENTER_TERMINATION_FINALIZER]
    storage.create("nodes", node)
    storage.create("pods", make_pod("p", node_name="leaving"))
    await wait_for(lambda: (storage.get("pods", "default", "p") or {}).get("status", {}).get("phase") == "Running",
                   what="pod running")
    marked = storage.delete("nodes", None, "leaving")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    clock.advance(60)
    await plane.settle()
    assert storage.get("nodes", None, "leaving") is not None
    assert storage.get("pods", "default", "p") is not None
    current = storage.get("nodes", None, "leaving")
    assert current is not None
    storage.update("nodes", {**current, "metadata": {**current["metadata"], "finalizers": []}})
    assert storage.get("nodes", None, "leaving") is None
    await plane.settle()
    clock.advance(2)
    await wait_for(lambda: storage.get("pods", "default", "p") is None, what="pod GC")


# -- taint patch semantics over HTTP (no control plane) ------------------------------------


async def _tainted_node(api: Api, taints: list[dict[str, Any]]) -> dict[str, Any]:
    node: dict[str, Any] = await api.ok("GET", f"{NODES}/node-0")
    node["spec"]["taints"] = taints
    out: dict[str, Any] = await api.ok("PUT", f"{NODES}/node-0", node)
    return out


A = {"key": "a", "value": "1", "effect": "NoSchedule"}
B = {"key": "b", "effect": "NoExecute"}
C = {"key": "c", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    "content_type",
    [pytest.param("application/strategic-merge-patch+json", id="strategic"),
     pytest.param("application/merge-patch+json", id="json-merge")],
)
async def test_taints_are_an_atomic_list(api: Api, content_type: str) -> None:
    """NodeSpec.taints has no patch strategy: a strategic merge patch, like a JSON merge patch,
    replaces the whole list (a controller adding one taint must send the list it read)."""
    await _tainted_node(api, [A, B])
    out = await api.ok("PATCH", f"{NODES}/node-0", {"spec": {"taints": [C]}}, headers={"Content-Type": content_type})
    assert out["spec"]["taints"] == [C]


async def test_a_json_patch_test_guards_a_taint_removal(api: Api) -> None:
    """A ``test`` of the list read, then a ``remove``: applied when nothing changed meanwhile."""
    await _tainted_node(api, [A, B])
    ops = [{"op": "test", "path": "/spec/taints", "value": [A, B]}, {"op": "remove", "path": "/spec/taints/0"}]
    out = await api.ok("PATCH", f"{NODES}/node-0", ops, headers={"Content-Type": "application/json-patch+json"})
    assert out["spec"]["taints"] == [B]


async def test_a_failed_json_patch_test_is_422_and_changes_nothing(api: Api) -> None:
    """A concurrent change makes the ``test`` fail: 422 Invalid with kube-apiserver's generic message,
    and the concurrent change is not lost."""
    before = await _tainted_node(api, [A, B, C])
    ops = [{"op": "test", "path": "/spec/taints", "value": [A, B]}, {"op": "remove", "path": "/spec/taints/0"}]
    status, body = await api.call("PATCH", f"{NODES}/node-0", ops,
                                  headers={"Content-Type": "application/json-patch+json"})
    assert (status, body["reason"], body["code"]) == (422, "Invalid", 422)
    assert body["message"] == "the server rejected our request due to an error in our request"
    after = await api.ok("GET", f"{NODES}/node-0")
    assert after["spec"]["taints"] == [A, B, C]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
