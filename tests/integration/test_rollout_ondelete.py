"""OnDelete end to end: an update replaces nothing until the user deletes a pod, and then only that one."""

from __future__ import annotations

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.simproc import SimProcess


@pytest.mark.parametrize("sim", [{"nodes": 5, "args": ["--pod-startup-seconds", "0.2"]}], indirect=True)
async def test_on_delete_replaces_only_the_deleted_pod(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """After an OnDelete update no pod changes; deleting one pod brings a new-template pod on that node only."""
    await kube.create(DAEMONSETS, daemonset("agent", strategy={"type": "OnDelete"}), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        old_hash = obs.current_hash
        before = {node: [p.name for p in obs.pods_on(node)] for node in obs.desired}
        updated = await update_template(kube, "agent", image="registry.example/agent:2.0")

        def update_seen(o: RolloutObserver) -> bool:
            status = o.ds.get("status") or {}
            return o.current_hash != old_hash and status.get("observedGeneration") == updated["metadata"]["generation"]

        await obs.wait_for(update_seen, timeout=20, message="the controller to record the new revision")
        new_hash = obs.current_hash

        def untouched(o: RolloutObserver) -> bool:
            return {node: [p.name for p in o.pods_on(node)] for node in o.desired} == before

        await obs.holds(untouched, seconds=1.5, message="OnDelete must not replace pods by itself")

        victim = before["node-2"][0]
        await kube.delete(PODS, victim, namespace="default")

        def replaced(o: RolloutObserver) -> bool:
            pods = o.pods_on("node-2")
            return len(pods) == 1 and pods[0].hash == new_hash and pods[0].ready

        await obs.wait_for(replaced, timeout=20, message="node-2 to run the new template")
        others = {node: names for node, names in before.items() if node != "node-2"}
        assert {node: [p.name for p in obs.pods_on(node)] for node in others} == others

        def counted(o: RolloutObserver) -> bool:
            status = o.ds.get("status") or {}
            return status.get("updatedNumberScheduled") == 1 and status.get("numberAvailable") == 5

        await obs.wait_for(counted, timeout=20, message="status: 1 updated, 5 available")
    obs.assert_clean()
