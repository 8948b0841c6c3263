"""Read-side helpers for integration tests: who runs where, and what the status says."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, PODS, Resource


async def daemon_pods(kube: KubeClient, ds_name: str, *, namespace: str = "default",
                      include_terminating: bool = False) -> list[dict[str, Any]]:
    """Pods controlled by the DaemonSet ``ds_name``."""
    pods = (await kube.list(PODS, namespace=namespace))["items"]
    owned = []
    for pod in pods:
        refs = pod["metadata"].get("ownerReferences") or []
        if not any(r.get("controller") and r.get("name") == ds_name for r in refs):
            continue
        if not include_terminating and pod["metadata"].get("deletionTimestamp"):
            continue
        owned.append(pod)
    return owned


def target_of(pod: Mapping[str, Any]) -> str:
    """The node a pod is bound to, or the node its matchFields affinity names."""
    name = pod["spec"].get("nodeName")
    if name:
        return str(name)
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    return str(terms[0]["matchFields"][0]["values"][0])


async def pods_per_node(kube: KubeClient, ds_name: str, *, namespace: str = "default") -> Counter[str]:
    """How many live daemon pods target each node."""
    return Counter(target_of(p) for p in await daemon_pods(kube, ds_name, namespace=namespace))


async def node_names(kube: KubeClient) -> set[str]:
    """Names of every node."""
    return {n["metadata"]["name"] for n in (await kube.list(NODES))["items"]}


async def ds_status(kube: KubeClient, name: str, *, namespace: str = "default",
                    resource: Resource = DAEMONSETS) -> dict[str, Any]:
    """The DaemonSet's status, as stored."""
    return dict((await kube.get(resource, name, namespace=namespace)).get("status") or {})


def is_ready(pod: dict[str, Any]) -> bool:
    """Ready condition True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])
