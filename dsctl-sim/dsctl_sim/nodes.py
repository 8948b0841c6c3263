"""Simulated nodes as a kubelet would register them: labels, capacity, conditions, addresses.

``--nodes N`` creates ``node-0`` … ``node-{N-1}``, all Ready. The status is realistic
enough for kubectl (``get nodes`` shows Ready, the kubelet version and age; ``describe``
shows capacity) and for a controller that reads conditions and labels.
"""

from __future__ import annotations

from typing import Any

from dsctl_api.timefmt import format_rfc3339

__all__ = ["KUBELET_VERSION", "make_node"]

KUBELET_VERSION = "v1.36.0"


def _condition(kind: str, status: str, reason: str, message: str, stamp: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}


def make_node(name: str, *, index: int, now: float, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Ready node named ``name``; ``index`` spreads its IP and pod CIDR."""
    stamp = format_rfc3339(now)
    ip = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
    cidr = f"10.{128 + ((index >> 8) & 127)}.{index & 255}.0/24"
    capacity = {"cpu": "8", "memory": "32863248Ki", "pods": "110", "ephemeral-storage": "203056560Ki",
                "hugepages-2Mi": "0"}
    allocatable = {"cpu": "7910m", "memory": "31712272Ki", "pods": "110", "ephemeral-storage": "187136238554",
                   "hugepages-2Mi": "0"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "sim.standard-8",
                **(labels or {}),
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"dsctl-sim://{name}"},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                _condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                           "kubelet has sufficient memory available", stamp),
                _condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
                           stamp),
                _condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available",
                           stamp),
                _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", stamp),
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{index:032x}",
                "systemUUID": f"{index:08x}-0000-4000-8000-000000000000",
                "bootID": f"{index:08x}-b007-4000-8000-000000000000",
                "kernelVersion": "6.8.0-sim",
                "osImage": "dsctl simulated node",
                "containerRuntimeVersion": "containerd://2.0.0",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
