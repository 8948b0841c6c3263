"""A rollout whose new pods never become Ready stalls within budget, and ``kubectl rollout undo`` heals it."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import HASH_LABEL, RolloutObserver, update_template
from tests.support.simproc import SimProcess

OLD_IMAGE = "registry.example/agent:1.0"
NEVER_READY = {"sim.dsctl.io/never-ready": "true"}


def status_of_oldest_pods(pods: list[dict[str, Any]], current_hash: str) -> dict[str, int]:
    """The status counters as upstream computes them: per node, over its oldest pod only.

    Oldest means scheduled first, then earliest creationTimestamp, then name. Timestamps have
    second precision, so a surge pod created in the same second as its old neighbour may be
    the one counted; the expectation follows the same rule rather than assuming old-first.
    """
    by_node: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_node.setdefault(target_of(pod), []).append(pod)
    oldest = [min(group, key=lambda p: (not p["spec"].get("nodeName"), p["metadata"]["creationTimestamp"],
                                        p["metadata"]["name"])) for group in by_node.values()]
    ready = sum(1 for p in oldest if is_ready(p))
    return {"desiredNumberScheduled": len(by_node), "numberReady": ready, "numberAvailable": ready,
            "numberUnavailable": len(by_node) - ready,
            "updatedNumberScheduled": sum(p["metadata"]["labels"].get(HASH_LABEL) == current_hash for p in oldest)}


FLEET = {"nodes": 20, "args": ["--pod-startup-seconds", "0.3"]}


@pytest.mark.parametrize(
    ("sim", "strategy", "unavailable", "old_left"),
    [
        pytest.param(FLEET, rolling(max_unavailable=3), 3, 17, id="max-unavailable-3"),
        pytest.param(FLEET, rolling(max_unavailable=0, max_surge=3), 0, 20, id="max-surge-3"),
    ],
    indirect=["sim"],
)
async def test_never_ready_rollout_stalls_then_undo_restores_every_node(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess, *, strategy: dict[str, Any], unavailable: int,
    old_left: int,
) -> None:
    """New pods that never turn Ready stop the rollout at 3 nodes (budget or surge); undo restores the old template."""
    await kube.create(DAEMONSETS, daemonset("agent", image=OLD_IMAGE, strategy=strategy), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        old_hash = obs.current_hash
        await update_template(kube, "agent", image="registry.example/agent:broken", annotations=NEVER_READY)

        def stalled(o: RolloutObserver) -> bool:
            return o.current_hash != old_hash and len(o.nodes_with_hash(o.current_hash)) == 3

        await obs.wait_for(stalled, timeout=20, message="3 nodes to run the broken template")
        bad_hash = obs.current_hash
        stuck_on = obs.nodes_with_hash(bad_hash)

        def still_stuck(o: RolloutObserver) -> bool:
            return o.nodes_with_hash(bad_hash) == stuck_on and len(o.nodes_with_hash(old_hash)) == old_left

        await obs.holds(still_stuck, seconds=2, message="the stalled rollout must not spread")
        pods = await daemon_pods(kube, "agent")
        expected = status_of_oldest_pods(pods, bad_hash)
        if unavailable:
            assert expected["updatedNumberScheduled"] == 3 and expected["numberUnavailable"] == 3

        def status_counts(o: RolloutObserver) -> bool:
            status = o.ds.get("status") or {}
            return {k: status.get(k, 0) for k in expected} == expected

        await obs.wait_for(status_counts, timeout=10, message=f"status {expected}")

        await sim.kubectl("rollout", "undo", "ds/agent")
        await obs.wait_rolled_out(30)
        assert obs.current_hash == old_hash, "undo must reuse the old revision's hash"
    obs.assert_clean()
    assert obs.max_unavailable_seen == unavailable
    assert {p["spec"]["containers"][0]["image"] for p in await daemon_pods(kube, "agent")} == {OLD_IMAGE}
    revisions = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
    numbers = {r["metadata"]["name"].removeprefix("agent-"): r["revision"] for r in revisions}
    assert numbers == {bad_hash: 2, old_hash: 3}, "the rolled-back revision is renumbered past the broken one"
