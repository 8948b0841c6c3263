"""Helpers for node-lifecycle tests: departing signals written as the real tools write them, and a
watch that records every pod created, by target node.

The taints and the finalizer are those of ``dsctl_sim.departing`` (checked against
cluster-autoscaler and Karpenter, ADR 0102); they go through the ordinary API, a
read-modify-write update for a taint added (cluster-autoscaler's way) and a ``test``-guarded JSON
patch for one removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import NODES, PODS
from dsctl_sim.departing import KARPENTER_TERMINATION_FINALIZER
from tests.support.clusterview import target_of

__all__ = ["PodCreates", "add_finalized_node", "add_taint", "node_ready", "remove_taint"]


async def add_taint(kube: KubeClient, node: str, taint: dict[str, Any]) -> None:
    """Add ``taint`` by a read-modify-write update, retried on conflict."""
    for _ in range(20):
        obj = await kube.get(NODES, node)
        spec = obj.setdefault("spec", {})
        spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != taint["key"]] + [dict(taint)]
        try:
            await kube.update(NODES, obj)
            return
        except errors.Conflict:
            continue
    raise RuntimeError(f"taint {taint['key']} not added to {node}")


async def remove_taint(kube: KubeClient, node: str, key: str) -> None:
    """Remove the taints with ``key`` by a JSON patch that tests the list it read first."""
    for _ in range(20):
        obj = await kube.get(NODES, node)
        taints = (obj.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != key]
        ops = [{"op": "test", "path": "/spec/taints", "value": taints},
               {"op": "replace", "path": "/spec/taints", "value": kept}]
        try:
            await kube.patch(NODES, node, ops, patch_type="json")
            return
        except errors.Invalid:
            continue
    raise RuntimeError(f"taint {key} not removed from {node}")


async def add_finalized_node(kube: KubeClient, name: str) -> None:
    """A node carrying Karpenter's termination finalizer: a delete leaves it marked, not gone."""
    await kube.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"kubernetes.io/hostname": name}, "finalizers": [KARPENTER_TERMINATION_FINALIZER]}})


async def node_ready(kube: KubeClient, node: str) -> str:
    """The node's Ready status (``True``, ``False``, ``Unknown``, or ``""``)."""
    obj = await kube.get(NODES, node)
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status"))
    return ""


@dataclass
class PodCreates:
    """``async with PodCreates(kube) as creates:`` records every pod ADDED in ``namespace`` while open.

    ``created`` holds ``(monotonic time, pod name, target node)``; a dropped watch resumes from the
    last resourceVersion, so nothing is missed.
    """

    kube: KubeClient
    namespace: str = "default"
    created: list[tuple[float, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._rv = ""

    def on(self, node: str, *, since: float = 0.0) -> list[str]:
        """Names of the pods created for ``node`` at or after ``since`` (monotonic)."""
        return [name for at, name, target in self.created if target == node and at >= since]

    async def __aenter__(self) -> PodCreates:
        listed = await self.kube.list(PODS, namespace=self.namespace)
        self._rv = str(listed["metadata"]["resourceVersion"])
        self._task = asyncio.create_task(self._watch(), name="pod-creates-watch")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            try:
                async with contextlib.aclosing(self.kube.watch(PODS, namespace=self.namespace,
                                                               resource_version=self._rv)) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if rv:
                            self._rv = str(rv)
                        if event.get("type") == "ADDED":
                            with contextlib.suppress(KeyError, IndexError, TypeError):
                                self.created.append((time.monotonic(), obj["metadata"]["name"], target_of(obj)))
            except errors.ApiError:
                await asyncio.sleep(0.05)  # backoff before re-watching from the last version
