"""The invariant observer itself: it catches transient budget breaches and crowded nodes, and honours exclude."""

from __future__ import annotations

import asyncio

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.simproc import SimProcess

FLEET = {"nodes": 4, "args": ["--pod-startup-seconds", "0.2"]}


@pytest.mark.parametrize(
    ("sim", "excluded", "expected"),
    [
        pytest.param(FLEET, False, ["budget"], id="counted"),
        pytest.param(FLEET, True, [], id="excluded"),
    ],
    indirect=["sim"],
)
async def test_deleting_pods_beyond_the_budget_is_a_violation(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess, excluded: bool, expected: list[str]
) -> None:
    """3 pods deleted at once under maxUnavailable 1 breach the budget, even though they come back, unless excluded."""
    await kube.create(DAEMONSETS, daemonset("agent", strategy=rolling(max_unavailable=1)), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        victims = {node: obs.pods_on(node)[0].name for node in ("node-0", "node-1", "node-2")}
        if excluded:
            obs.exclude(*victims)
        await asyncio.gather(*(kube.delete(PODS, name, namespace="default") for name in victims.values()))
        await obs.wait_rolled_out(30)
    assert sorted({v.rule for v in obs.violations}) == expected
    assert obs.max_unavailable_seen == (0 if excluded else 3)


@pytest.mark.parametrize("sim", [FLEET], indirect=True)
async def test_a_second_pod_on_a_node_without_surge_is_a_violation(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """An extra daemon pod bound beside the existing one is reported, though the controller removes it."""
    ds = await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": ds["metadata"]["uid"],
                 "controller": True, "blockOwnerDeletion": True}
        extra = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "agent-extra", "labels": {"app": "agent"}, "ownerReferences": [owner]},
                 "spec": {"nodeName": "node-0", "containers": [{"name": "agent", "image": "registry.example/x"}]}}
        await kube.create(PODS, extra, namespace="default")
        await obs.wait_for(lambda o: bool(o.violations), timeout=10, message="a violation")
        await obs.wait_rolled_out(30)
    assert [v.rule for v in obs.violations] == ["pods-per-node"], [str(v) for v in obs.violations]
    assert "agent-extra" in obs.violations[0].detail
    with pytest.raises(AssertionError, match="pods-per-node"):
        obs.assert_clean()


@pytest.mark.parametrize("sim", [{"nodes": 8, "args": ["--pod-startup-seconds", "0.2", "--watch-drop-seconds", "1"]}],
                         indirect=True)
async def test_observer_survives_dropped_watches_and_compaction(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """Watches closed every second and an expired history mid-rollout: the observer resumes and stays accurate."""
    await kube.create(DAEMONSETS, daemonset("agent", strategy=rolling(max_unavailable=3)), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await obs.wait_for(lambda o: o.max_unavailable_seen > 0, timeout=10, message="the rollout to start")
        await sim.compact(expire_watches=True)
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    assert obs.relists >= 1, "an expired watch must be answered with a relist"
