"""Builders for the plain-dict DaemonSets, nodes and pods the domain tests feed the planners.

Defaults describe the common case (a DaemonSet ``foo`` in ``default`` selecting
``name=simple-daemon,type=production``; a Ready-less Running pod bound to its node), so each
test states only what it is about.
"""

from __future__ import annotations

import itertools
from typing import Any

from dsctl.daemonset.template import HASH_LABEL
from dsctl_api.timefmt import format_rfc3339

DS_UID = "ds-uid-1"
HASH = "hash-new"
T0 = 1_700_000_000.0
"""A fixed 'now' for tests that need one (2023-11-14T22:13:20Z)."""

SIMPLE = {"name": "simple-daemon", "type": "production"}
SIMPLE2 = {"name": "simple-daemon", "type": "test"}
NODE_BLUE = {"color": "blue", "speed": "fast"}
NODE_RED = {"color": "red", "speed": "fast"}

_serial = itertools.count()


def make_ds(
    name: str = "foo",
    *,
    uid: str = DS_UID,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    selector: dict[str, Any] | None = None,
    pod_spec: dict[str, Any] | None = None,
    strategy: dict[str, Any] | None = None,
    min_ready_seconds: int | None = None,
    observed_generation: int = 1,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A DaemonSet dict; ``pod_spec`` entries are merged over a one-container spec."""
    template_labels = dict(SIMPLE if labels is None else labels)
    spec: dict[str, Any] = {
        "selector": selector if selector is not None else {"matchLabels": dict(template_labels)},
        "template": {
            "metadata": {"labels": template_labels},
            "spec": {"containers": [{"name": "c", "image": "img"}], **(pod_spec or {})},
        },
        "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
    }
    if min_ready_seconds is not None:
        spec["minReadySeconds"] = min_ready_seconds
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid, "generation": 1}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta,
        "spec": spec,
        "status": {"observedGeneration": observed_generation},
    }


def surge_strategy(max_surge: int | str = 1) -> dict[str, Any]:
    """RollingUpdate with surge and no unavailability, the usual surge configuration."""
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": max_surge}}


def make_node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    ready: bool | str = True,
    ready_since: float | None = None,
    ready_message: str | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    """A node dict with a Ready condition (``ready`` may be a status string, e.g. "Unknown")."""
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    condition: dict[str, Any] = {"type": "Ready",
                                 "status": ready if isinstance(ready, str) else ("True" if ready else "False")}
    if ready_since is not None:
        condition["lastTransitionTime"] = format_rfc3339(ready_since)
    if ready_message is not None:
        condition["message"] = ready_message
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if deleting:
        meta["deletionTimestamp"] = format_rfc3339(T0 - 1)
    return {"metadata": meta, "spec": spec, "status": {"conditions": [condition]}}


def make_nodes(start: int, count: int, *, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Nodes ``node-<start>`` .. ``node-<start+count-1>``."""
    return [make_node(f"node-{i}", labels=labels) for i in range(start, start + count)]


def taint(key: str, effect: str, value: str = "") -> dict[str, Any]:
    """A taint dict."""
    result = {"key": key, "effect": effect}
    if value:
        result["value"] = value
    return result


def make_pod(
    node: str,
    *,
    name: str | None = None,
    labels: dict[str, str] | None = None,
    owner_uid: str | None = DS_UID,
    hash: str | None = HASH,
    phase: str = "Running",
    created: float | None = None,
    ready: bool | None = None,
    ready_since: float | None = None,
    deleting: bool = False,
    bound: bool = True,
    namespace: str = "default",
) -> dict[str, Any]:
    """A daemon pod for ``node``; unbound pods carry the ``metadata.name`` affinity instead."""
    serial = next(_serial)
    pod_labels = dict(SIMPLE if labels is None else labels)
    if hash is not None:
        pod_labels[HASH_LABEL] = hash
    meta: dict[str, Any] = {
        "name": name or f"{node}-pod-{serial}",
        "namespace": namespace,
        "uid": f"pod-uid-{serial}",
        "labels": pod_labels,
        "creationTimestamp": format_rfc3339(created if created is not None else T0 - 1000 + serial),
    }
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "foo",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    if deleting:
        meta["deletionTimestamp"] = format_rfc3339(T0)
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "img"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                }
            }
        },
    }
    if bound:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        condition: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
        if ready_since is not None:
            condition["lastTransitionTime"] = format_rfc3339(ready_since)
        status["conditions"] = [condition]
    return {"metadata": meta, "spec": spec, "status": status}


def make_pods(node: str, count: int, **kwargs: Any) -> list[dict[str, Any]]:
    """``count`` pods for ``node``, each created one second after the previous."""
    return [make_pod(node, **kwargs) for _ in range(count)]
