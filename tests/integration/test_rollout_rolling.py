"""RollingUpdate end to end: the real controller process updates a simulated fleet within budget.

Every test runs the rollout under a ``RolloutObserver`` that watches pods, nodes, the DaemonSet
and its revisions, and fails on any moment where more nodes lacked an available pod than
``maxUnavailable`` allows (or a node held too many pods). Pods start in 0.2 s and terminate in
about 1 s (the sim's grace cap), so a no-surge wave costs ~1.2 s.
"""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES
from tests.support.builders import daemonset, node, rolling
from tests.support.clusterview import daemon_pods
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

STARTUP = ["--pod-startup-seconds", "0.2"]


def fleet(nodes: int) -> pytest.MarkDecorator:
    """Indirect parameters for the ``sim`` fixture."""
    return pytest.mark.parametrize("sim", [{"nodes": nodes, "args": STARTUP}], indirect=True)


async def settled(kube: KubeClient, ds: dict[str, Any], *, timeout: float = 30) -> None:
    """Create ``ds`` and wait until its first rollout is complete."""
    await kube.create(DAEMONSETS, ds, namespace="default")
    async with RolloutObserver(kube, ds["metadata"]["name"]) as obs:
        await obs.wait_rolled_out(timeout)


def quick_exit(ds: dict[str, Any]) -> dict[str, Any]:
    """Pods that go at once when deleted, for tests about readiness rather than termination."""
    ds["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    return ds


async def images(kube: KubeClient, name: str) -> set[str]:
    """The images the DaemonSet's pods run."""
    return {p["spec"]["containers"][0]["image"] for p in await daemon_pods(kube, name)}


@fleet(50)
async def test_max_unavailable_10_percent_over_50_nodes(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """An image update over 50 nodes with maxUnavailable 10% completes, never more than 5 nodes down."""
    await settled(kube, daemonset("agent", strategy=rolling(max_unavailable="10%")))
    async with RolloutObserver(kube, "agent") as obs:
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await obs.wait_rolled_out(60)
    obs.assert_clean()
    assert obs.budget == 5
    assert obs.max_unavailable_seen == 5, "the rollout should use its whole budget"
    assert await images(kube, "agent") == {"registry.example/agent:2.0"}


@fleet(50)
async def test_max_surge_20_percent_without_unavailability(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """maxSurge 20% with maxUnavailable 0: every node stays available, at most 2 pods on one node."""
    await settled(kube, daemonset("agent", strategy=rolling(max_unavailable=0, max_surge="20%")))
    async with RolloutObserver(kube, "agent") as obs:
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await obs.wait_rolled_out(60)
    obs.assert_clean()
    assert (obs.surge, obs.budget) == (10, 0)
    assert obs.max_unavailable_seen == 0
    assert obs.max_pods_on_node == 2, "surge should put a new pod beside the old one"
    assert await images(kube, "agent") == {"registry.example/agent:2.0"}


@fleet(6)
async def test_max_surge_waits_min_ready_seconds_before_deleting(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """With surge and minReadySeconds 1, an old pod goes only once its new neighbour has been Ready long enough."""
    strategy = rolling(max_unavailable=0, max_surge=3)
    await settled(kube, quick_exit(daemonset("agent", strategy=strategy, min_ready_seconds=1)))
    async with RolloutObserver(kube, "agent") as obs:
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    assert obs.max_unavailable_seen == 0
    assert obs.max_pods_on_node == 2


@fleet(6)
async def test_three_quick_updates_converge_to_the_last(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """Three image changes, each before the last one finished, converge on the third within budget."""
    await settled(kube, daemonset("agent", strategy=rolling(max_unavailable=2)))
    async with RolloutObserver(kube, "agent") as obs:
        seen = {obs.current_hash}
        for version in ("2.0", "3.0", "4.0"):
            await update_template(kube, "agent", image=f"registry.example/agent:{version}")

            def started(o: RolloutObserver) -> bool:
                return o.current_hash not in seen and bool(o.nodes_with_hash(o.current_hash))

            await obs.wait_for(started, timeout=20, message=f"pods of {version} to appear")
            seen.add(obs.current_hash)
        await obs.wait_rolled_out(60)
    obs.assert_clean()
    assert obs.max_unavailable_seen == 2
    assert await images(kube, "agent") == {"registry.example/agent:4.0"}


@fleet(4)
async def test_min_ready_seconds_delays_availability_and_guards_a_second_update(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """minReadySeconds 2: Ready pods are not yet available, and an update in that window stays within budget."""
    await settled(kube, quick_exit(daemonset("agent", strategy=rolling(max_unavailable=2), min_ready_seconds=2)))
    async with RolloutObserver(kube, "agent") as obs:
        await update_template(kube, "agent", image="registry.example/agent:2.0")

        def ready_not_available(o: RolloutObserver) -> bool:
            status = o.ds.get("status") or {}
            return bool(status.get("numberReady") == 4 and status.get("numberAvailable", 0) < 4)

        await obs.wait_for(ready_not_available, timeout=20, message="status: all Ready, not all available")
        # The second update lands while the first wave is Ready but inside minReadySeconds: only
        # that wave may be replaced at once, never the two old pods still serving.
        await update_template(kube, "agent", image="registry.example/agent:3.0")
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    assert obs.max_unavailable_seen == 2
    assert await images(kube, "agent") == {"registry.example/agent:3.0"}


@fleet(8)
async def test_node_joining_mid_rollout_gets_the_new_template(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """A node that joins while the rollout runs gets a pod of the new revision; the budget still holds."""
    await settled(kube, daemonset("agent", strategy=rolling(max_unavailable=2)))
    async with RolloutObserver(kube, "agent") as obs:
        old_hash = obs.current_hash
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await obs.wait_for(lambda o: o.current_hash != old_hash and bool(o.nodes_with_hash(o.current_hash)),
                           timeout=20, message="the rollout to start")
        await kube.create(NODES, node("node-late"))
        await obs.wait_rolled_out(30)
        assert "node-late" in obs.desired
    obs.assert_clean()
    assert await images(kube, "agent") == {"registry.example/agent:2.0"}


def _logged(controller: ControllerProcess, event: str, **fields: str) -> list[dict[str, Any]]:
    return [e for e in controller.logs if e.get("event") == event and all(e.get(k) == v for k, v in fields.items())]


async def _failed_deletes(controller: ControllerProcess, at_least: int) -> bool:
    return len(_logged(controller, "event", reason="FailedDelete")) >= at_least


@fleet(4)
async def test_a_failed_delete_is_planned_again_not_retried_in_place(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """A pod delete the server fails with 500 fails the sync, which plans again on a fresh cache.

    Retrying in place would carry out a decision made on a cache that may be seconds old by
    the time the retry lands (soak seed 50073: a budget that had shrunk meanwhile).
    """
    await settled(kube, quick_exit(daemonset("agent", strategy=rolling(max_unavailable=1))))
    async with RolloutObserver(kube, "agent") as obs:
        await sim.set_faults(errors=[{"verb": "delete", "resource": "pods", "code": 500, "rate": 1.0}])
        await update_template(kube, "agent", image="registry.example/agent:2.0")
        await eventually(lambda: _failed_deletes(controller, 2), timeout=20, message="two failed delete attempts")
        await sim.set_faults()
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    assert _logged(controller, "kube.request.retry", verb="delete", resource="pods") == []
    assert await images(kube, "agent") == {"registry.example/agent:2.0"}
