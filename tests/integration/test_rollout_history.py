"""ControllerRevision lifecycle end to end: revisionHistoryLimit cleanup, never dropping a revision in use."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, PODS
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


async def revision_numbers(kube: KubeClient) -> list[int]:
    """The ``revision`` of every ControllerRevision of ds/agent, sorted."""
    items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
    return sorted(int(r["revision"]) for r in items)


def quick_exit(ds: dict[str, Any]) -> dict[str, Any]:
    """Pods that terminate at once: these tests are about revisions, not termination."""
    ds["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    return ds


@pytest.mark.parametrize("sim", [{"nodes": 2, "args": ["--pod-startup-seconds", "0.2"]}], indirect=True)
async def test_history_limit_2_after_5_updates_keeps_3_revisions(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """revisionHistoryLimit 2 after 5 completed updates leaves the current revision and the 2 before it."""
    ds = quick_exit(daemonset("agent", strategy=rolling(max_unavailable="100%"), revision_history_limit=2))
    await kube.create(DAEMONSETS, ds, namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        for version in range(2, 7):
            await update_template(kube, "agent", image=f"registry.example/agent:{version}.0")
            await obs.wait_rolled_out(30)
    obs.assert_clean()

    async def cleaned() -> list[int] | None:
        numbers = await revision_numbers(kube)
        return numbers if numbers == [4, 5, 6] else None

    await eventually(cleaned, timeout=10, message="revisions 4, 5 and 6 only")


@pytest.mark.parametrize("sim", [{"nodes": 2, "args": ["--pod-startup-seconds", "0.2"]}], indirect=True)
async def test_history_cleanup_keeps_the_revision_pods_still_run(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """With OnDelete the pods keep revision 1: cleanup skips it, and it counts within the limit (as upstream)."""
    ds = quick_exit(daemonset("agent", strategy={"type": "OnDelete"}, revision_history_limit=2))
    await kube.create(DAEMONSETS, ds, namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        for version in range(2, 7):
            updated = await update_template(kube, "agent", image=f"registry.example/agent:{version}.0")

            def seen(o: RolloutObserver, generation: int = updated["metadata"]["generation"]) -> bool:
                return (o.ds.get("status") or {}).get("observedGeneration") == generation

            await obs.wait_for(seen, timeout=20, message=f"generation {updated['metadata']['generation']} observed")
    obs.assert_clean()

    async def cleaned() -> list[int] | None:
        numbers = await revision_numbers(kube)
        return numbers if numbers == [1, 5, 6] else None

    await eventually(cleaned, timeout=10, message="revisions 1 (in use), 5 and 6")


@pytest.mark.parametrize("sim", [{"nodes": 2, "args": ["--pod-startup-seconds", "0.2"]}], indirect=True)
async def test_pods_carry_the_template_generation(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """The API server numbers template generations; each rollout's pods carry pod-template-generation."""
    created = await kube.create(DAEMONSETS, quick_exit(daemonset("agent", strategy=rolling(max_unavailable=2))),
                                namespace="default")
    assert created["metadata"].get("annotations", {}).get(GENERATION_ANNOTATION) == "1"
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
        updated = await update_template(kube, "agent", image="registry.example/agent:2.0")
        assert updated["metadata"]["annotations"][GENERATION_ANNOTATION] == "2"
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    pods = (await kube.list(PODS, namespace="default", label_selector="app=agent"))["items"]
    assert {p["metadata"]["labels"].get("pod-template-generation") for p in pods} == {"2"}

