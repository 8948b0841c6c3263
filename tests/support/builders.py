"""Small builders for the objects integration tests create; plain dicts, like the API's JSON."""

from __future__ import annotations

from typing import Any


def daemonset(
    name: str,
    *,
    namespace: str = "default",
    image: str = "registry.example/agent:1.0",
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    strategy: dict[str, Any] | None = None,
    min_ready_seconds: int = 0,
    revision_history_limit: int | None = None,
    host_network: bool = False,
    api_version: str = "apps/v1",
) -> dict[str, Any]:
    """An apps/v1 DaemonSet whose selector is its template labels."""
    pod_labels = labels or {"app": name}
    spec: dict[str, Any] = {"containers": [{"name": "agent", "image": image}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    if host_network:
        spec["hostNetwork"] = True
    ds_spec: dict[str, Any] = {
        "selector": {"matchLabels": dict(pod_labels)},
        "template": {"metadata": {"labels": dict(pod_labels), **({"annotations": annotations} if annotations else {})},
                     "spec": spec},
    }
    if strategy is not None:
        ds_spec["updateStrategy"] = strategy
    if min_ready_seconds:
        ds_spec["minReadySeconds"] = min_ready_seconds
    if revision_history_limit is not None:
        ds_spec["revisionHistoryLimit"] = revision_history_limit
    return {"apiVersion": api_version, "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace}, "spec": ds_spec}


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
         ready: bool = True, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A Ready node with the standard labels."""
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  **(labels or {})}
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": all_labels, **({"annotations": annotations} if annotations else {})},
        "spec": {"taints": taints} if taints else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                   "reason": "KubeletReady" if ready else "KubeletNotReady"}]},
    }
    return body


def rolling(*, max_unavailable: int | str | None = 1, max_surge: int | str | None = 0) -> dict[str, Any]:
    """A RollingUpdate strategy."""
    ru: dict[str, Any] = {}
    if max_unavailable is not None:
        ru["maxUnavailable"] = max_unavailable
    if max_surge is not None:
        ru["maxSurge"] = max_surge
    return {"type": "RollingUpdate", "rollingUpdate": ru}
