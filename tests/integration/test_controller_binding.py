"""Placement modes: scheduler binding through the node-name affinity, or direct binding."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, is_ready
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


async def _first_versions(kube: KubeClient, seen: dict[str, dict[str, Any]], started: asyncio.Event) -> None:
    """Record each pod as it was first created (its ADDED event), before anyone else touched it."""
    rv = (await kube.list(PODS, namespace="default"))["metadata"]["resourceVersion"]
    started.set()
    async with contextlib.aclosing(kube.watch(PODS, namespace="default", resource_version=rv)) as events:
        async for event in events:
            if event["type"] == "ADDED":
                seen.setdefault(event["object"]["metadata"]["uid"], event["object"])


async def _create_and_capture(kube: KubeClient) -> dict[str, dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    started = asyncio.Event()
    watcher = asyncio.create_task(_first_versions(kube, seen, started))
    try:
        await started.wait()
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def all_ready() -> bool:
            pods = await daemon_pods(kube, "agent")
            return len(pods) == 5 and all(is_ready(p) for p in pods) and len(seen) == 5

        await eventually(all_ready, message="5 ready pods, each seen at creation")
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    return seen


def _affinity_node(pod: dict[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    return str(terms[0]["matchFields"][0]["values"][0])


async def test_direct_binding_sets_node_name_at_creation(sim: SimProcess, kube: KubeClient) -> None:
    """With --direct-binding every pod is created already bound to its node."""
    async with ControllerProcess(str(sim.kubeconfig), args=["--direct-binding"]) as ctl:
        created = await _create_and_capture(kube)
        for pod in created.values():
            assert pod["spec"].get("nodeName") == _affinity_node(pod)
        assert not ctl.errors()


async def test_scheduler_binding_leaves_node_name_empty(sim: SimProcess, kube: KubeClient,
                                                        controller: ControllerProcess) -> None:
    """By default pods are created unbound, and the scheduler binds each to its affinity node."""
    created = await _create_and_capture(kube)
    for pod in created.values():
        assert not pod["spec"].get("nodeName")
    for pod in await daemon_pods(kube, "agent"):
        assert pod["spec"]["nodeName"] == _affinity_node(pod)
