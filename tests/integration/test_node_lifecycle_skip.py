"""unhealthyNodePolicy end to end: dead kubelets stall Count as upstream's rollout stalls; Skip finishes.

100 nodes, 10 of them with their kubelet stopped before the update (their nodes turn Unknown, their
pods not Ready, and a deleted pod of theirs stays Terminating, ADR 0100), and ``maxUnavailable: 1``.
Pods start in 50 ms and a running kubelet ends a graceful termination within 50 ms
(``--max-termination-seconds``), the node-monitor grace is 1 s and the unhealthy threshold 1 s, so
each test takes seconds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from dsctl.kube import resources
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from dsctl_api.timefmt import parse_rfc3339
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.nodelife import node_ready
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

NODES = 100
DEAD = [f"node-{i}" for i in range(0, NODES, NODES // 10)]
V1, V2 = "registry.example/agent:1", "registry.example/agent:2"
DEADLINE = 6
SIM = {"nodes": NODES, "args": ["--pod-startup-seconds", "0.05", "--node-monitor-grace-seconds", "1",
                                 "--max-termination-seconds", "0.05"]}


def _agent(policy: str, **annotations: str) -> dict[str, Any]:
    # Tolerating every taint, as node agents do: a NotReady node still should run the pod (without
    # it the not-ready NoSchedule taint takes the node out of desiredNumberScheduled).
    body = daemonset("agent", image=V1, strategy=rolling(max_unavailable=1), tolerations=[{"operator": "Exists"}])
    body["metadata"]["annotations"] = {"dsctl.io/unhealthy-node-policy": policy,
                                       "dsctl.io/unhealthy-node-seconds": "1",
                                       "dsctl.io/progress-deadline-seconds": str(DEADLINE), **annotations}
    return body


async def _images(kube: KubeClient) -> dict[str, str]:
    """Node to image of the live, Ready pods."""
    return {target_of(p): p["spec"]["containers"][0]["image"] for p in await daemon_pods(kube, "agent") if is_ready(p)}


async def _condition(kube: KubeClient, kind: str) -> dict[str, Any] | None:
    ds = await kube.get(DAEMONSETS, "agent", namespace="default")
    return next((c for c in (ds.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


async def _start_with_dead_nodes(sim: SimProcess, kube: KubeClient, policy: str) -> None:
    """Every node runs V1; then ten kubelets stop and their nodes turn Unknown; then the update."""
    await kube.create(DAEMONSETS, _agent(policy), namespace="default")

    async def all_v1() -> bool:
        return list((await _images(kube)).values()).count(V1) == NODES

    await eventually(all_v1, timeout=60, message="every node runs V1")
    for node in DEAD:
        await sim.set_kubelet(node, running=False)

    async def dead() -> bool:
        ready = [await node_ready(kube, n) for n in DEAD]
        images = await _images(kube)
        return ready == ["Unknown"] * len(DEAD) and not any(n in images for n in DEAD)

    await eventually(dead, timeout=20, message="the ten nodes Unknown, their pods not Ready")

    async def past_threshold() -> bool:
        return all([time.time() - await _unhealthy_since(kube, n) > 1.5 for n in DEAD])

    await eventually(past_threshold, message="the ten nodes unhealthy for longer than unhealthyNodeSeconds")
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": V2}]
    await kube.patch(DAEMONSETS, "agent", patch, namespace="default", patch_type="json")


@pytest.mark.parametrize("sim", [SIM], indirect=True)
async def test_count_stalls_on_dead_nodes_and_reports_the_deadline(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Count (upstream's): the dead nodes use up maxUnavailable, nothing healthy is updated, and
    Progressing turns False with ProgressDeadlineExceeded."""
    await _start_with_dead_nodes(sim, kube, "Count")
    started = time.monotonic()

    async def stuck() -> bool:
        cond = await _condition(kube, "Progressing")
        return cond is not None and cond.get("reason") == "ProgressDeadlineExceeded"

    await eventually(stuck, timeout=DEADLINE + 15, message="Progressing False after the deadline")
    assert time.monotonic() - started >= DEADLINE - 1
    assert V2 not in (await _images(kube)).values(), "no healthy node was updated"
    assert await _condition(kube, "RolloutSkippedNodes") is None


@pytest.mark.parametrize("sim", [SIM], indirect=True)
async def test_skip_finishes_the_healthy_nodes_then_the_recovered_ones(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Skip: the 90 healthy nodes are updated one at a time, RolloutSkippedNodes names the ten, and
    once their kubelets run again the ten are updated too."""
    await _start_with_dead_nodes(sim, kube, "Skip")
    healthy = {f"node-{i}" for i in range(NODES)} - set(DEAD)

    async def healthy_done() -> bool:
        images = await _images(kube)
        return all(images.get(n) == V2 for n in healthy)

    await eventually(healthy_done, timeout=120, message="the 90 healthy nodes run V2")
    cond = await _condition(kube, "RolloutSkippedNodes")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "UnhealthyNodes")
    assert cond["message"].startswith("10 nodes are left out of the rolling update")
    assert all(n in cond["message"] for n in DEAD)
    progressing = await _condition(kube, "Progressing")
    assert progressing is not None and (progressing["status"], progressing["reason"]) == ("Unknown",
                                                                                          "UnhealthyNodes")
    assert await controller.daemonset_gauge("dsctl_daemonset_skipped_nodes") == 10.0
    old = [p for p in await daemon_pods(kube, "agent", include_terminating=True) if target_of(p) in DEAD]
    assert len(old) == 10 and all(p["spec"]["containers"][0]["image"] == V1 for p in old), "left alone"
    assert not any(p["metadata"].get("deletionTimestamp") for p in old), "not deleted either"

    for node in DEAD:
        await sim.set_kubelet(node, running=True)

    async def all_v2() -> bool:
        return list((await _images(kube)).values()).count(V2) == NODES

    await eventually(all_v2, timeout=60, message="the recovered nodes are updated too")

    async def condition_gone() -> bool:
        done = await _condition(kube, "Progressing")
        return await _condition(kube, "RolloutSkippedNodes") is None and done is not None and \
            done["reason"] == "NewRevisionAvailable"

    await eventually(condition_gone, message="RolloutSkippedNodes removed, rollout complete")
    assert await controller.daemonset_gauge("dsctl_daemonset_skipped_nodes") == 0.0


@pytest.mark.parametrize("sim", [{"nodes": 4, "args": SIM["args"]}], indirect=True)
async def test_a_node_that_fails_after_its_own_update_still_counts(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Skip: node-0 runs its V2 pod, then its kubelet stops; it is not skipped, it fills
    maxUnavailable, no other node is updated and the deadline is reported."""
    await kube.create(DAEMONSETS, _agent("Skip", **{"dsctl.io/partition": "3"}), namespace="default")
    nodes = [f"node-{i}" for i in range(4)]
    await eventually(lambda: _all(kube, nodes, V1), message="every node runs V1")
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": V2}]
    await kube.patch(DAEMONSETS, "agent", patch, namespace="default", patch_type="json")
    await eventually(lambda: _all(kube, ["node-0"], V2), message="the partition lets node-0 update")
    await sim.set_kubelet("node-0", running=False)

    async def node0_down() -> bool:
        return await node_ready(kube, "node-0") == "Unknown" and "node-0" not in await _images(kube)

    await eventually(node0_down, timeout=20, message="node-0 Unknown, its V2 pod not Ready")
    await kube.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {"dsctl.io/partition": "0"}}},
                     namespace="default")

    async def stuck() -> bool:
        cond = await _condition(kube, "Progressing")
        return cond is not None and cond.get("reason") == "ProgressDeadlineExceeded"

    await eventually(stuck, timeout=DEADLINE + 15, message="the deadline applies")
    assert [n for n, image in (await _images(kube)).items() if image == V2] == []
    assert await _condition(kube, "RolloutSkippedNodes") is None


async def _unhealthy_since(kube: KubeClient, node: str) -> float:
    obj = await kube.get(resources.NODES, node)
    ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    return parse_rfc3339(ready["lastTransitionTime"])


async def _all(kube: KubeClient, nodes: list[str], image: str) -> bool:
    images = await _images(kube)
    return all(images.get(n) == image for n in nodes)
