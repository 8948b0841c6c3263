"""Bugs the chaos suite found, each reduced to a small deterministic reproduction.

Each test was ``xfail(strict=True)`` until the controller was fixed (so the suite stayed green
while the bug was there); it now pins the fix.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.chaos.actions import image_of, set_image
from tests.chaos.recount import settle_problems
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


async def _ready_pod_of(client: KubeClient, version: int) -> bool:
    pods = (await client.list(PODS, namespace="default"))["items"]
    return any(p["spec"]["containers"][0]["image"] == image_of(version)
               and any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in (p.get("status") or {}).get("conditions") or [])
               for p in pods)


async def test_surge_keeps_the_available_pod_when_the_template_changes_during_a_deletion() -> None:
    """maxUnavailable 0 with surge: a template change while an old pod's deletion is in flight drops no node.

    Found by ``pytest tests/chaos -k s008-node-join --chaos-seed 1008`` (about 2 runs in 3).
    Slow deletes and creates and lagging watch events widen a race to a certainty: sync A
    deletes the rev-1 pod (its new rev-2 neighbour is available); a template change (rev 3)
    arrives meanwhile, so sync B runs right after A. B reads the pods from the cache before
    the deletion event has arrived, then awaits the creation of the rev-3 ControllerRevision;
    the event arrives during that await, the expectations look satisfied, and B plans on its
    stale snapshot: it sees two old pods (rev 1 still running, rev 2), keeps the older one,
    deletes the available rev-2 pod, and the node is left with only a terminating pod.
    """
    async with SimProcess(nodes=1, args=["--pod-startup-seconds", "0.1", "--seed", "7"]) as sim:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        try:
            body = daemonset("agent", image=image_of(1), strategy=rolling(max_unavailable=0, max_surge=1))
            body["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 1
            await client.create(DAEMONSETS, body, namespace="default")
            async with ControllerProcess(sim.kubeconfig):
                await eventually(lambda: _settled(client), timeout=30, message="rev 1 settled")
                async with RolloutObserver(client, "agent") as obs:
                    await sim.set_faults(verb_latency_ms={"delete": 1500, "create": 1500}, watch_event_latency_ms=400)
                    await set_image(client, "agent", 2)
                    await eventually(lambda: _ready_pod_of(client, 2), timeout=20, message="rev-2 pod ready")
                    # The controller sees the rev-2 pod ready 0.4 s later and sends the slow delete of the
                    # rev-1 pod; the rev-3 template lands while that delete is in flight.
                    await asyncio.sleep(0.8)  # the schedule of the reproduction, not a wait for a result
                    await set_image(client, "agent", 3)
                    await eventually(lambda: _ready_pod_of(client, 3), timeout=30, message="rev-3 pod ready")
                    await sim.set_faults()
                    await eventually(lambda: _settled(client), timeout=30, message="rev 3 settled")
                obs.assert_clean()
        finally:
            await client.close()


async def test_no_second_pod_on_a_node_when_the_template_changes_during_a_create() -> None:
    """Without surge, a template change while the first pod's create is in flight never yields two pods on a node.

    The same stale-snapshot race as above (fixed with it), seen as duplicate pods by the soak
    (``s064-taint-flap`` seed 50064: three live pods of ds-b on node-10, two of the same
    revision, created 5 ms apart by consecutive syncs). Here sync A creates the first pod
    slowly; the template changes meanwhile; sync B reads an empty node from the cache, awaits
    the new ControllerRevision, sees the first pod's ADDED event satisfy the expectations
    during that await, and creates a second pod on the node from its stale snapshot.
    """
    async with SimProcess(nodes=1, args=["--pod-startup-seconds", "0.1", "--seed", "11"]) as sim:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        try:
            async with ControllerProcess(sim.kubeconfig):
                await sim.set_faults(verb_latency_ms={"create": 1500}, watch_event_latency_ms=400)
                body = daemonset("agent", image=image_of(1), strategy=rolling(max_unavailable=1))
                await client.create(DAEMONSETS, body, namespace="default")
                async with RolloutObserver(client, "agent") as obs:
                    # The controller sees the DaemonSet 0.4 s after its creation and spends 1.5 s or more
                    # creating the first pod; the new template lands inside that window.
                    await asyncio.sleep(1.0)  # the schedule of the reproduction, not a wait for a result
                    await set_image(client, "agent", 2)
                    await eventually(lambda: _ready_pod_of(client, 2), timeout=30, message="rev-2 pod ready")
                    await sim.set_faults()
                    await eventually(lambda: _settled(client), timeout=30, message="rev 2 settled")
                obs.assert_clean()
        finally:
            await client.close()


async def _settled(client: KubeClient) -> bool:
    return not await settle_problems(client, ["agent"])


def _old_pod(name: str, template_hash: str, *, startup: float) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"app": "agent", "controller-revision-hash": template_hash},
                     "annotations": {"sim.dsctl.io/startup-seconds": str(startup)}},
        "spec": {"nodeName": "node-0", "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "agent", "image": image_of(0)}]},
    }


async def _in_first_half_of_a_second() -> bool:
    return time.time() % 1.0 < 0.5


async def test_surge_keeps_the_available_one_of_two_old_pods_created_in_the_same_second() -> None:
    """maxUnavailable 0 with surge: of two old pods on a node, the available one is never the one deleted.

    Found by the soak on the fixed controller (``s008-node-join`` seed 1008, about 1 run in
    5): three template changes within a second leave a node with a Ready rev-1 pod and a
    starting rev-2 surge pod, both created in the same second; the first sync of rev 3 keeps
    the one whose *name* sorts first and deletes the other, which was the node's only
    available pod (pod trace: ds-a-qst4m rev 1 Ready and ds-a-d6wdr rev 2 starting on node-1;
    sync 0-9 of rev 3 deleted qst4m). Here two orphans of two old revisions are created in the
    same second on one node, the Ready one named to sort last, and the DaemonSet adopts them.
    """
    async with SimProcess(nodes=1, args=["--pod-startup-seconds", "0.1", "--seed", "13"]) as sim:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        try:
            await eventually(_in_first_half_of_a_second, timeout=5, interval=0.02, message="start of a second")
            await client.create(PODS, _old_pod("agent-zz-ready", "rev-one", startup=0.1), namespace="default")
            await client.create(PODS, _old_pod("agent-aa-starting", "rev-two", startup=3600), namespace="default")
            await eventually(lambda: _ready_pod_of(client, 0), timeout=20, message="the rev-one pod ready")
            body = daemonset("agent", image=image_of(3), strategy=rolling(max_unavailable=0, max_surge=1))
            await client.create(DAEMONSETS, body, namespace="default")
            async with RolloutObserver(client, "agent") as obs, ControllerProcess(sim.kubeconfig):
                await eventually(lambda: _settled(client), timeout=30, message="rev 3 settled")
            obs.assert_clean()
        finally:
            await client.close()

