"""Pod lifecycle and ownership: failed pods, duplicates, adoption, release, foreign pods, status."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, EVENTS, NODES, PODS
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, ds_status, pods_per_node, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


def _bare_pod(name: str, node_name: str, labels: dict[str, str], owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name, "containers": [{"name": "agent", "image": "registry.example/agent:1.0"}]}}


async def test_failed_pods_are_replaced_with_backoff(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """A pod that keeps failing is replaced each time, with growing gaps, and FailedDaemonPod is recorded."""
    ds = daemonset("crashy", node_selector={"kubernetes.io/hostname": "node-0"},
                   annotations={"sim.dsctl.io/fail-after-seconds": "0.3"})
    await kube.create(DAEMONSETS, ds, namespace="default")
    first_seen: dict[str, float] = {}

    async def five_incarnations() -> bool:
        for pod in await daemon_pods(kube, "crashy", include_terminating=True):
            first_seen.setdefault(pod["metadata"]["uid"], time.monotonic())
        return len(first_seen) >= 5

    await eventually(five_incarnations, timeout=40, interval=0.05, message="5 successive pods on node-0")
    times = sorted(first_seen.values())
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[-1] >= 1.5, f"backoff did not grow: gaps {gaps}"
    assert gaps[-1] > gaps[0], f"backoff did not grow: gaps {gaps}"
    events = (await kube.list(EVENTS, namespace="default"))["items"]
    assert any(e.get("reason") == "FailedDaemonPod" for e in events)


async def test_duplicate_pod_newer_is_deleted(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """With two daemon pods on one node, the newer one is deleted and the older kept."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _count_is(kube, "agent", 5), message="5 pods")
    live = await kube.get(DAEMONSETS, "agent", namespace="default")
    original = next(p for p in await daemon_pods(kube, "agent") if target_of(p) == "node-0")
    await asyncio.sleep(1.1)  # creationTimestamp has second precision; make the duplicate strictly newer
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": live["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    dup = await kube.create(PODS, _bare_pod("agent-dup", "node-0", {"app": "agent"}, owner), namespace="default")

    async def dup_gone() -> bool:
        uids = {p["metadata"]["uid"] for p in await daemon_pods(kube, "agent")}
        return dup["metadata"]["uid"] not in uids and original["metadata"]["uid"] in uids

    await eventually(dup_gone, message="newer duplicate deleted, original kept")


async def test_matching_orphan_is_adopted(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """An orphan pod whose labels match is adopted instead of a new pod being created on its node.

    OnDelete keeps it as it is: under RollingUpdate it would be adopted and then replaced, since it
    does not carry the current revision's hash (upstream behaves the same).
    """
    orphan = await kube.create(PODS, _bare_pod("stray", "node-0", {"app": "agent"}), namespace="default")
    await kube.create(DAEMONSETS, daemonset("agent", strategy={"type": "OnDelete"}), namespace="default")
    await eventually(lambda: _count_is(kube, "agent", 5), message="5 pods including the adopted one")
    pod = await kube.get(PODS, "stray", namespace="default")
    refs = pod["metadata"].get("ownerReferences") or []
    assert [r["name"] for r in refs if r.get("controller")] == ["agent"]
    assert pod["metadata"]["uid"] == orphan["metadata"]["uid"]


async def test_relabelled_pod_is_released_not_deleted(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """An owned pod relabelled out of the selector is released (kept, no owner) and replaced."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _count_is(kube, "agent", 5), message="5 pods")
    victim = next(p for p in await daemon_pods(kube, "agent") if target_of(p) == "node-2")
    name = victim["metadata"]["name"]
    await kube.patch(PODS, name, {"metadata": {"labels": {"app": "debug"}}}, namespace="default")

    async def released() -> bool:
        pod = await kube.get(PODS, name, namespace="default")
        return not pod["metadata"].get("ownerReferences")

    await eventually(released, message="ownerReference removed")
    await eventually(lambda: _count_is(kube, "agent", 5), message="node-2 got a replacement")


async def test_pods_of_other_controllers_are_untouched(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """A matching pod controlled by something else is neither adopted nor deleted."""
    node_1 = await kube.get(NODES, "node-1")
    owner = {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": node_1["metadata"]["uid"],
             "controller": True}
    await kube.create(PODS, _bare_pod("foreign", "node-1", {"app": "agent"}, owner), namespace="default")
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _count_is(kube, "agent", 5), message="5 daemon pods, node-1 included")
    pod = await kube.get(PODS, "foreign", namespace="default")
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert not pod["metadata"].get("deletionTimestamp")


async def test_status_matches_hand_count(sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Status counters equal a hand count with a misscheduled node and a slow node."""
    await kube.patch(NODES, "node-1", {"metadata": {"annotations": {"sim.dsctl.io/pod-startup-seconds": "3600"}}})
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _count_is(kube, "agent", 5), message="5 pods")
    await kube.patch(NODES, "node-0", {"spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}})
    expected = {"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberMisscheduled": 1,
                "numberReady": 3, "numberAvailable": 3, "numberUnavailable": 1, "updatedNumberScheduled": 4,
                "observedGeneration": 1}

    async def matches() -> dict[str, Any] | None:
        status = await ds_status(kube, "agent")
        return status if all(status.get(k, 0) == v for k, v in expected.items()) else None

    await eventually(matches, message=f"status {expected}")
    live = await kube.get(DAEMONSETS, "agent", namespace="default")
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/agent:2.0"
    live["spec"]["updateStrategy"] = {"type": "OnDelete"}
    await kube.update(DAEMONSETS, live, namespace="default")

    async def generation_followed() -> bool:
        status = await ds_status(kube, "agent")
        return status.get("observedGeneration") == 2 and status.get("updatedNumberScheduled") == 0

    await eventually(generation_followed, message="observedGeneration 2, nothing updated under OnDelete")


async def _count_is(kube: KubeClient, ds: str, expected: int) -> bool:
    per_node = await pods_per_node(kube, ds)
    return sum(per_node.values()) == expected and all(v == 1 for v in per_node.values())
