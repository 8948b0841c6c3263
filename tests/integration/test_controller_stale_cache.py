"""Expectations under stale caches: no duplicate pods while watch events lag and creates fail."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pytest

from dsctl.informer import Informer
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.support.builders import daemonset
from tests.support.clusterview import ds_status, pods_per_node, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

NODES = 200
SLOW_AND_FLAKY = {"nodes": NODES, "args": ["--watch-event-latency-ms", "300",
                                           "--fault-error-rate", "create:pods:500:0.1"]}


class PodsPerNode:
    """Watches pods and remembers the most live (not terminating) pods any node ever had."""

    def __init__(self) -> None:
        self.live: dict[str, set[str]] = defaultdict(set)
        self.worst: dict[str, int] = {}

    def _apply(self, pod: Mapping[str, Any], *, gone: bool) -> None:
        node = target_of(pod) if pod.get("spec") else ""
        uid = pod["metadata"]["uid"]
        if gone or pod["metadata"].get("deletionTimestamp"):
            self.live[node].discard(uid)
            return
        self.live[node].add(uid)
        if len(self.live[node]) > 1:
            self.worst[node] = max(self.worst.get(node, 0), len(self.live[node]))

    def on_add(self, pod: Mapping[str, Any]) -> None:
        self._apply(pod, gone=False)

    def on_update(self, _old: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        self._apply(pod, gone=False)

    def on_delete(self, pod: Mapping[str, Any]) -> None:
        self._apply(pod, gone=True)


@pytest.mark.parametrize("sim", [pytest.param(SLOW_AND_FLAKY, id="watch-300ms-creates-10pct-500")], indirect=True)
async def test_no_duplicates_with_lagging_watches_and_failing_creates(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """A 200-node DaemonSet converges to exactly 200 pods, and no node ever holds two."""
    observer = PodsPerNode()
    informer = Informer(kube, PODS, namespace="default")
    informer.add_handler(observer.on_add, observer.on_update, observer.on_delete)
    informer.run()
    try:
        await informer.wait_for_sync()
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def converged() -> bool:
            per_node = await pods_per_node(kube, "agent")
            status = await ds_status(kube, "agent")
            return (len(per_node) == NODES and all(v == 1 for v in per_node.values())
                    and status.get("numberAvailable") == NODES)

        await eventually(converged, timeout=120, interval=0.5, message=f"{NODES} pods, one per node")
        assert observer.worst == {}, f"nodes that held more than one live pod: {observer.worst}"
    finally:
        await informer.stop()
