"""Builders and waits for tests that drive the simulated control plane in-process.

Kept in the package (like ``FakeClock``) so the sim's own tests and the controller's
integration tests build nodes and pods the same way. Nothing here is used at run time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["make_node", "make_pod", "pin_to_node", "set_node_ready", "wait_for"]

T = TypeVar("T")


def make_node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    ready: str | None = "True",
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node as a kubelet would register it; ``ready=None`` leaves out the Ready condition."""
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: dict[str, Any] = {
        "addresses": [{"type": "Hostname", "address": name}],
        "conditions": [],
    }
    if ready is not None:
        status["conditions"].append(
            {"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else ""}
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": status,
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
    node_name: str | None = None,
    owners: list[dict[str, Any]] | None = None,
    grace_seconds: int | None = None,
) -> dict[str, Any]:
    """A Pod with one container and whatever scheduling constraints are given."""
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.local/app:1"}]}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    if grace_seconds is not None:
        spec["terminationGracePeriodSeconds"] = grace_seconds
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    if labels:
        meta["labels"] = dict(labels)
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pin_to_node(node: str) -> dict[str, Any]:
    """The affinity a DaemonSet controller gives its pods: ``matchFields metadata.name In``."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def set_node_ready(node: Mapping[str, Any], status: str) -> dict[str, Any]:
    """A copy of ``node`` whose Ready condition has ``status``, for a status update."""
    conditions = [
        dict(c)
        for c in (node.get("status") or {}).get("conditions") or []
        if c.get("type") != "Ready"
    ]
    conditions.append({"type": "Ready", "status": status})
    new = dict(node)
    new["metadata"] = dict(node["metadata"])
    new["status"] = {**(node.get("status") or {}), "conditions": conditions}
    return new


async def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 5.0, what: str = "condition"
) -> T:
    """Poll ``probe`` (yielding to the loop) until it returns a truthy value; return it.

    Raises ``AssertionError`` naming ``what`` when ``timeout`` seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)
