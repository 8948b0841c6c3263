"""The simulated scheduler binds pods like kube-scheduler's required filters would."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from dsctl_sim.controllers import ControlPlane, FakeClock, start_control_plane
from dsctl_sim.controllers.scheduler import prefilter_node_names
from dsctl_sim.controllers.testing import make_node, make_pod, pin_to_node, wait_for
from dsctl_sim.storage import Storage


@pytest.fixture
async def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def sim(clock: FakeClock) -> AsyncIterator[tuple[Storage, ControlPlane]]:
    storage = Storage(now=clock.now)
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock, kubelet=False)
    try:
        yield storage, plane
    finally:
        await plane.stop()


def _scheduled(storage: Storage, name: str) -> Mapping[str, Any] | None:
    pod = storage.get("pods", "default", name)
    if pod is None:
        return None
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return None


def _node_of(storage: Storage, name: str) -> str | None:
    pod = storage.get("pods", "default", name)
    return None if pod is None else pod["spec"].get("nodeName")


async def test_pinned_pod_is_bound_to_its_node(sim: tuple[Storage, ControlPlane]) -> None:
    """A pod with a matchFields metadata.name affinity lands on exactly that node."""
    storage, _ = sim
    for i in range(5):
        storage.create("nodes", make_node(f"node-{i}"))
    storage.create("pods", make_pod("p", affinity=pin_to_node("node-3")))
    await wait_for(lambda: _node_of(storage, "p"), what="binding")
    assert _node_of(storage, "p") == "node-3"
    condition = _scheduled(storage, "p")
    assert condition is not None and condition["status"] == "True"


NOT_READY_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                        "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("node_kwargs", "pod_kwargs", "fits"),
    [
        pytest.param({"labels": {"disk": "ssd"}}, {"node_selector": {"disk": "ssd"}}, True,
                     id="node-selector-match"),
        pytest.param({"labels": {"disk": "hdd"}}, {"node_selector": {"disk": "ssd"}}, False,
                     id="node-selector-mismatch"),
        pytest.param({"taints": [{"key": "a", "value": "b", "effect": "NoSchedule"}]}, {}, False,
                     id="untolerated-noschedule"),
        pytest.param({"taints": [{"key": "a", "effect": "NoExecute"}]}, {}, False,
                     id="untolerated-noexecute"),
        pytest.param({"taints": [{"key": "a", "effect": "PreferNoSchedule"}]}, {}, True,
                     id="prefer-noschedule-ignored"),
        pytest.param({"taints": [{"key": "a", "value": "b", "effect": "NoSchedule"}]},
                     {"tolerations": [{"key": "a", "operator": "Equal", "value": "b"}]}, True,
                     id="tolerated-taint"),
        pytest.param({"unschedulable": True}, {}, False, id="cordoned"),
        pytest.param({"unschedulable": True}, {"tolerations": [NOT_READY_TOLERATION]}, True,
                     id="cordoned-but-tolerated"),
    ],
)
async def test_filters(
    sim: tuple[Storage, ControlPlane],
    node_kwargs: dict[str, Any],
    pod_kwargs: dict[str, Any],
    fits: bool,
) -> None:
    """nodeSelector, taints/tolerations and cordon decide whether the only node fits."""
    storage, plane = sim
    storage.create("nodes", make_node("only", **node_kwargs))
    storage.create("pods", make_pod("p", **pod_kwargs))
    await wait_for(lambda: _scheduled(storage, "p"), what="PodScheduled")
    await plane.settle()
    condition = _scheduled(storage, "p")
    assert condition is not None
    if fits:
        assert condition["status"] == "True"
        assert _node_of(storage, "p") == "only"
    else:
        assert condition["status"] == "False"
        assert condition["reason"] == "Unschedulable"
        assert condition["message"].startswith("0/1 nodes are available: 1 node(s)")
        assert _node_of(storage, "p") is None


async def test_required_affinity_expressions_choose_the_node(
    sim: tuple[Storage, ControlPlane],
) -> None:
    """matchExpressions terms are ORed; only a node satisfying one of them is used."""
    storage, _ = sim
    storage.create("nodes", make_node("a", labels={"zone": "x", "tier": "1"}))
    storage.create("nodes", make_node("b", labels={"zone": "y", "tier": "5"}))
    storage.create("nodes", make_node("c", labels={"zone": "z"}))
    terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["y", "q"]},
                              {"key": "tier", "operator": "Gt", "values": ["3"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["nowhere"]}]},
    ]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}}
    storage.create("pods", make_pod("p", affinity=affinity))
    assert await wait_for(lambda: _node_of(storage, "p"), what="binding") == "b"


async def test_unschedulable_pod_is_retried_when_its_node_changes(
    sim: tuple[Storage, ControlPlane],
) -> None:
    """A pinned pod blocked by a taint is bound once the taint is removed."""
    storage, _ = sim
    node = storage.create("nodes", make_node("n", taints=[{"key": "k", "effect": "NoSchedule"}]))
    storage.create("pods", make_pod("p", affinity=pin_to_node("n")))
    condition = await wait_for(lambda: _scheduled(storage, "p"), what="PodScheduled")
    assert condition["status"] == "False"
    assert "untolerated taint {k: }" in condition["message"]
    untainted = {**node, "spec": {}}
    storage.update("nodes", untainted)
    assert await wait_for(lambda: _node_of(storage, "p"), what="binding") == "n"


async def test_unpinned_pod_is_retried_after_node_changes(
    sim: tuple[Storage, ControlPlane], clock: FakeClock
) -> None:
    """A pod no node fits is retried (debounced by a second) once some node changes."""
    storage, plane = sim
    node = storage.create("nodes", make_node("n", labels={"role": "db"}))
    storage.create("pods", make_pod("p", node_selector={"role": "web"}))
    condition = await wait_for(lambda: _scheduled(storage, "p"), what="PodScheduled")
    assert condition["status"] == "False"
    relabelled = {**node, "metadata": {**node["metadata"], "labels": {"role": "web"}}}
    storage.update("nodes", relabelled)
    await plane.settle()
    assert _node_of(storage, "p") is None
    clock.advance(1)
    assert await wait_for(lambda: _node_of(storage, "p"), what="binding") == "n"


async def test_pod_pinned_to_missing_node_waits_for_it(
    sim: tuple[Storage, ControlPlane],
) -> None:
    """A pod pinned to a node that does not exist yet is bound when the node appears."""
    storage, _ = sim
    storage.create("nodes", make_node("other"))
    storage.create("pods", make_pod("p", affinity=pin_to_node("late")))
    condition = await wait_for(lambda: _scheduled(storage, "p"), what="PodScheduled")
    assert condition["status"] == "False"
    assert condition["message"] == (
        "0/1 nodes are available: 1 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
    storage.create("nodes", make_node("late"))
    assert await wait_for(lambda: _node_of(storage, "p"), what="binding") == "late"


async def test_other_schedulers_pods_are_left_alone(sim: tuple[Storage, ControlPlane]) -> None:
    """Pods naming another schedulerName are neither bound nor marked."""
    storage, plane = sim
    storage.create("nodes", make_node("n"))
    pod = make_pod("p")
    pod["spec"]["schedulerName"] = "someone-else"
    storage.create("pods", pod)
    await plane.settle()
    assert _node_of(storage, "p") is None
    assert _scheduled(storage, "p") is None


async def test_failed_scheduling_is_reported_once(sim: tuple[Storage, ControlPlane]) -> None:
    """An unschedulable pod gets one FailedScheduling event, a bound pod a Scheduled event."""
    storage, plane = sim
    storage.create("nodes", make_node("n", labels={"role": "db"}))
    storage.create("pods", make_pod("stuck", node_selector={"role": "web"}))
    storage.create("pods", make_pod("fine", node_selector={"role": "db"}))
    await wait_for(lambda: _node_of(storage, "fine"), what="binding")
    await wait_for(lambda: _scheduled(storage, "stuck"), what="PodScheduled")
    await plane.settle()
    events, _ = storage.list("events", namespace="default")
    reasons = sorted((e["involvedObject"]["name"], e["reason"]) for e in events)
    assert reasons == [("fine", "Scheduled"), ("stuck", "FailedScheduling")]


async def test_pinned_pod_filters_only_its_node(sim: tuple[Storage, ControlPlane]) -> None:
    """A pod pinned by matchFields is filtered against its one node, never the other 999."""
    storage, _ = sim
    for i in range(1000):
        storage.create("nodes", make_node(f"node-{i}"))
    storage.create("pods", make_pod("p", affinity=pin_to_node("node-500")))
    assert await wait_for(lambda: _node_of(storage, "p"), what="binding") == "node-500"
    scheduler = sim[1].scheduler
    assert scheduler is not None and scheduler.stats()["nodes_filtered"] == 1


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        pytest.param([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
                      {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}],
                     frozenset({"a", "b", "c"}), id="terms-united"),
        pytest.param([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
                                       {"key": "metadata.name", "operator": "In", "values": ["b", "c"]}]}],
                     frozenset({"b"}), id="requirements-intersected"),
        pytest.param([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
                      {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}],
                     None, id="a-term-without-names-allows-all"),
        pytest.param([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a"]}]}],
                     None, id="not-in-names-nothing"),
        pytest.param([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                                       {"key": "metadata.name", "operator": "In", "values": ["b"]}]}],
                     frozenset(), id="conflict"),
    ],
)
def test_prefilter_node_names(terms: list[dict[str, Any]], expected: frozenset[str] | None) -> None:
    """The NodeAffinity PreFilter: names intersect within a term and unite across terms."""
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}}}
    assert prefilter_node_names(spec) == expected


async def test_conflicting_terms_are_reported_like_kube_scheduler(sim: tuple[Storage, ControlPlane]) -> None:
    """Terms that together name no node give kube-scheduler's PreFilter message for every node."""
    storage, _ = sim
    storage.create("nodes", make_node("a"))
    storage.create("nodes", make_node("b"))
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                              {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    storage.create("pods", make_pod("p", affinity=affinity))
    condition = await wait_for(lambda: _scheduled(storage, "p"), what="PodScheduled")
    assert condition["message"] == "0/2 nodes are available: pod affinity terms conflict."


async def test_burst_of_pinned_pods_on_many_nodes(sim: tuple[Storage, ControlPlane]) -> None:
    """Two thousand DaemonSet-style pods on two thousand nodes all bind quickly (fast path)."""
    storage, plane = sim
    count = 2000
    for i in range(count):
        storage.create("nodes", make_node(f"node-{i}"))
    for i in range(count):
        storage.create("pods", make_pod(f"ds-{i}", affinity=pin_to_node(f"node-{i}")))
    await wait_for(lambda: plane.scheduler is not None and plane.scheduler.bound == count,
                   timeout=30, what="all pods bound")
    pods, _ = storage.list("pods")
    assert all(p["spec"]["nodeName"] == "node-" + p["metadata"]["name"][3:] for p in pods)
