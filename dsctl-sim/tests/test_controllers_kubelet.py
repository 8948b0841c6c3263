"""The simulated kubelet runs bound pods: Running, Ready after a delay, knobs, termination."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl_api.pods import is_pod_ready
from dsctl_sim.controllers import (
    ANN_FAIL_AFTER,
    ANN_NEVER_READY,
    ANN_NODE_STARTUP,
    ANN_STARTUP,
    ControlPlane,
    FakeClock,
    start_control_plane,
)
from dsctl_sim.controllers.testing import (
    make_node,
    make_pod,
    pin_to_node,
    set_node_ready,
    wait_for,
)
from dsctl_sim.storage import Storage

Sim = tuple[Storage, ControlPlane, FakeClock]


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    clock = FakeClock()
    storage = Storage(now=clock.now)
    plane = start_control_plane(
        storage, pod_startup_seconds=5.0, clock=clock, max_termination_seconds=1.0
    )
    storage.create("nodes", make_node("n1"))
    try:
        yield storage, plane, clock
    finally:
        await plane.stop()


def _pod(storage: Storage, name: str = "p") -> dict[str, Any]:
    pod = storage.get("pods", "default", name)
    assert pod is not None, f"pod {name} is gone"
    return pod


def _phase(storage: Storage, name: str = "p") -> str | None:
    pod = storage.get("pods", "default", name)
    return None if pod is None else pod.get("status", {}).get("phase")


async def _advance(plane: ControlPlane, clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    await plane.settle()


async def test_pinned_pod_runs_then_becomes_ready_after_the_delay(sim: Sim) -> None:
    """Bound → Running at once (IPs, start time, containers) → Ready exactly at the delay."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", affinity=pin_to_node("n1")))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    await plane.settle()
    pod = _pod(storage)
    status = pod["status"]
    assert pod["spec"]["nodeName"] == "n1"
    assert status["startTime"] and status["hostIP"]
    assert status["podIP"] == "100.64.0.1"
    assert [c["name"] for c in status["containerStatuses"]] == ["main"]
    assert status["containerStatuses"][0]["state"]["running"]["startedAt"] == status["startTime"]
    assert not is_pod_ready(pod)
    await _advance(plane, clock, 4.9)
    assert not is_pod_ready(_pod(storage))
    await _advance(plane, clock, 0.1)
    pod = _pod(storage)
    assert is_pod_ready(pod)
    assert pod["status"]["containerStatuses"][0]["ready"] is True
    types = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert types == {"PodReadyToStartContainers": "True", "Initialized": "True",
                     "Ready": "True", "ContainersReady": "True", "PodScheduled": "True"}


@pytest.mark.parametrize(
    ("pod_annotation", "node_annotation", "delay"),
    [
        pytest.param("2.5", None, 2.5, id="pod-annotation"),
        pytest.param(None, "1.5", 1.5, id="node-annotation"),
        pytest.param("0.5", "8", 0.5, id="pod-beats-node"),
        pytest.param("nonsense", None, 5.0, id="bad-value-falls-back"),
    ],
)
async def test_startup_delay_knobs(
    sim: Sim, pod_annotation: str | None, node_annotation: str | None, delay: float
) -> None:
    """The delay comes from the pod annotation, else the node annotation, else the default."""
    storage, plane, clock = sim
    node_annotations = {ANN_NODE_STARTUP: node_annotation} if node_annotation else {}
    storage.create("nodes", make_node("n2", annotations=node_annotations))
    pod_annotations = {ANN_STARTUP: pod_annotation} if pod_annotation else {}
    storage.create("pods", make_pod("p", affinity=pin_to_node("n2"), annotations=pod_annotations))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    await plane.settle()
    await _advance(plane, clock, delay - 0.01)
    assert not is_pod_ready(_pod(storage))
    await _advance(plane, clock, 0.01)
    assert is_pod_ready(_pod(storage))


async def test_zero_delay_pod_is_ready_at_once(sim: Sim) -> None:
    """With a zero startup delay the pod is Running and Ready without any time passing."""
    storage, _, _ = sim
    storage.create("pods", make_pod("p", node_name="n1", annotations={ANN_STARTUP: "0"}))
    await wait_for(lambda: is_pod_ready(_pod(storage)), what="Ready")
    assert _phase(storage) == "Running"


async def test_never_ready_pod_runs_but_never_becomes_ready(sim: Sim) -> None:
    """sim.dsctl.io/never-ready keeps a pod Running and not Ready forever."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", node_name="n1", annotations={ANN_NEVER_READY: "true"}))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    await _advance(plane, clock, 3600)
    assert _phase(storage) == "Running"
    assert not is_pod_ready(_pod(storage))


async def test_fail_after_marks_the_pod_failed(sim: Sim) -> None:
    """sim.dsctl.io/fail-after-seconds turns a running pod Failed at that time."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", node_name="n1", annotations={ANN_FAIL_AFTER: "7"}))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    await _advance(plane, clock, 5)
    assert is_pod_ready(_pod(storage))
    await _advance(plane, clock, 1.9)
    assert _phase(storage) == "Running"
    await _advance(plane, clock, 0.1)
    pod = _pod(storage)
    assert pod["status"]["phase"] == "Failed"
    assert not is_pod_ready(pod)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 1
    await _advance(plane, clock, 60)
    assert _phase(storage) == "Failed"


async def test_graceful_deletion_finishes_after_the_capped_grace(sim: Sim) -> None:
    """A deleted pod lingers with deletionTimestamp, then is removed after min(grace, cap)."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", node_name="n1", grace_seconds=30))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    deleted = storage.delete("pods", "default", "p")
    assert deleted["metadata"]["deletionTimestamp"]
    await plane.settle()
    await _advance(plane, clock, 0.9)
    assert storage.get("pods", "default", "p") is not None
    await _advance(plane, clock, 0.1)
    assert storage.get("pods", "default", "p") is None


async def test_short_grace_is_honoured_below_the_cap(sim: Sim) -> None:
    """A grace period shorter than the cap is used as is."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", node_name="n1"))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    storage.delete("pods", "default", "p", grace_period_seconds=0)
    assert storage.get("pods", "default", "p") is None
    storage.create("pods", make_pod("q", node_name="n1"))
    await wait_for(lambda: _phase(storage, "q") == "Running", what="Running")
    storage.delete("pods", "default", "q", grace_period_seconds=1)
    await plane.settle()
    await _advance(plane, clock, 1.0)
    assert storage.get("pods", "default", "q") is None


async def test_pods_lose_ready_while_their_node_is_not_ready(sim: Sim) -> None:
    """A NotReady node takes Ready away from its pods; Ready again gives it back."""
    storage, plane, clock = sim
    tolerate_all = [{"operator": "Exists"}]  # keep the taint manager from evicting it
    storage.create("pods", make_pod("p", node_name="n1", tolerations=tolerate_all))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    await _advance(plane, clock, 5)
    assert is_pod_ready(_pod(storage))
    node = storage.get("nodes", None, "n1")
    assert node is not None
    storage.update("nodes", set_node_ready(node, "False"), subresource="status")
    await wait_for(lambda: not is_pod_ready(_pod(storage)), what="pod not Ready")
    ready = next(c for c in _pod(storage)["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "NodeNotReady"
    node = storage.get("nodes", None, "n1")
    assert node is not None
    storage.update("nodes", set_node_ready(node, "True"), subresource="status")
    await wait_for(lambda: is_pod_ready(_pod(storage)), what="pod Ready again")


async def test_pods_of_unknown_node_are_not_started(sim: Sim) -> None:
    """A pod bound to a node name that does not exist stays Pending (pod GC removes it)."""
    storage, plane, _ = sim
    storage.create("pods", make_pod("p", node_name="ghost"))
    await plane.settle()
    assert _phase(storage) == "Pending"


async def test_pod_ips_come_from_the_node_pod_cidr(sim: Sim) -> None:
    """Pods get distinct addresses inside their node's podCIDR; hostNetwork pods the node IP."""
    storage, _, _ = sim
    node = make_node("cidr")
    node["spec"]["podCIDR"] = "10.200.7.0/24"
    node["status"]["addresses"].append({"type": "InternalIP", "address": "192.168.0.7"})
    storage.create("nodes", node)
    storage.create("pods", make_pod("a", node_name="cidr"))
    storage.create("pods", make_pod("b", node_name="cidr"))
    host = make_pod("host", node_name="cidr")
    host["spec"]["hostNetwork"] = True
    storage.create("pods", host)
    await wait_for(
        lambda: all(_phase(storage, n) == "Running" for n in ("a", "b", "host")), what="Running"
    )
    ips = {name: _pod(storage, name)["status"]["podIP"] for name in ("a", "b", "host")}
    assert ips == {"a": "10.200.7.2", "b": "10.200.7.3", "host": "192.168.0.7"}
    assert _pod(storage, "a")["status"]["hostIP"] == "192.168.0.7"


def _set_image(storage: Storage, image: str) -> None:
    pod = _pod(storage)
    spec = {**pod["spec"], "containers": [{**pod["spec"]["containers"][0], "image": image}]}
    storage.update("pods", {**pod, "spec": spec})


async def test_an_image_change_restarts_the_container_then_ready_after_the_delay(sim: Sim) -> None:
    """A new spec image restarts that container: NotReady, restartCount + 1, new image, Ready after the delay."""
    storage, plane, clock = sim
    storage.create("pods", make_pod("p", node_name="n1"))
    await wait_for(lambda: _phase(storage) == "Running", what="Running")
    await _advance(plane, clock, 5)
    pod = _pod(storage)
    assert is_pod_ready(pod)
    uid, old_image = pod["metadata"]["uid"], pod["status"]["containerStatuses"][0]["image"]
    await _advance(plane, clock, 10)

    _set_image(storage, "example/new:2")
    await plane.settle()
    pod = _pod(storage)
    container = pod["status"]["containerStatuses"][0]
    assert not is_pod_ready(pod)
    assert (container["image"], container["restartCount"]) == ("example/new:2", 1)
    assert container["lastState"]["terminated"]["reason"] == "Completed"
    assert pod["metadata"]["uid"] == uid and old_image != "example/new:2"
    await _advance(plane, clock, 4.9)
    assert not is_pod_ready(_pod(storage))
    await _advance(plane, clock, 0.1)
    pod = _pod(storage)
    assert is_pod_ready(pod)
    # The Ready write kept the count and the restart time; a second image change adds one.
    container = pod["status"]["containerStatuses"][0]
    assert (container["restartCount"], container["ready"]) == (1, True)
    assert _pod(storage)["status"]["containerStatuses"][0]["restartCount"] == 1
    _set_image(storage, "example/new:3")
    await plane.settle()
    assert _pod(storage)["status"]["containerStatuses"][0]["restartCount"] == 2
