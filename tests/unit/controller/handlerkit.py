"""Test kit for ``dsctl.controller.handlers``: a queue that records, a cache of plain dicts, builders.

``Handlers`` is built from injected callables only, so these fakes are all it needs: no informer,
no queue, no loop. ``RecordingQueue`` keeps every call in order, lane by lane, so a test can say
exactly which keys went where, and which did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dsctl.controller.expectations import Expectations
from dsctl.controller.handlers import Handlers
from dsctl.controller.planmemory import ChangeLog
from dsctl.controller.state import RuntimeState

__all__ = ["NS", "Cluster", "RecordingQueue", "ds", "node", "owner_ref", "pod", "revision"]

NS = "default"

Obj = dict[str, Any]


@dataclass
class RecordingQueue:
    """Stands in for the work queue: records ``add``, ``add_after`` and ``add_prioritized`` in order."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def add(self, key: str) -> None:
        self.calls.append(("add", key))

    def add_after(self, key: str, delay: float) -> None:
        self.calls.append(("add_after", key, delay))

    def add_prioritized(self, key: str, priority: int) -> None:
        self.calls.append(("add_prioritized", key, priority))

    @property
    def keys(self) -> list[str]:
        """Every key enqueued, whatever the lane, in order."""
        return [call[1] for call in self.calls]


@dataclass
class Cluster:
    """The caches the handlers read: DaemonSets by key and pods by node, plus the runtime state.

    ``lists`` counts how often the handlers listed the DaemonSets, so a test can show that a
    cheap path (a node heartbeat) did no per-DaemonSet work at all.
    """

    daemonsets: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    queue: RecordingQueue = field(default_factory=RecordingQueue)
    state: RuntimeState = field(default_factory=lambda: RuntimeState.create(clock=lambda: 0.0))
    lists: int = 0

    @property
    def expectations(self) -> Expectations:
        return self.state.expectations

    @property
    def changes(self) -> ChangeLog:
        return self.state.changes

    def get(self, key: str) -> Obj | None:
        return next((d for d in self.daemonsets if f"{d['metadata']['namespace']}/{d['metadata']['name']}" == key),
                    None)

    def list_daemonsets(self) -> list[Mapping[str, Any]]:
        self.lists += 1
        return list(self.daemonsets)

    def on_node(self, name: str) -> list[Mapping[str, Any]]:
        return [p for p in self.pods if p.get("spec", {}).get("nodeName") == name]

    def handlers(self, *, prioritized: bool = False) -> Handlers:
        """Handlers over this cluster; ``prioritized`` wires the priority lane (priority = spec.priority)."""
        return Handlers(
            ds_kind="DaemonSet", get_daemonset=self.get, list_daemonsets=self.list_daemonsets,
            pods_on_node=self.on_node,
            state=self.state, enqueue=self.queue.add, enqueue_after=self.queue.add_after,
            enqueue_prioritized=self.queue.add_prioritized if prioritized else None,
            priority_of=(lambda d: int(d["spec"]["template"]["spec"].get("priority", 0))) if prioritized else None,
            monotonic=lambda: 0.0,
        )


def ds(name: str, *, selector: dict[str, str] | None = None, uid: str | None = None, namespace: str = NS,
       node_selector: dict[str, str] | None = None, min_ready: int = 0, priority: int | None = None,
       tolerations: list[dict[str, Any]] | None = None) -> Obj:
    """A DaemonSet selecting ``app=<name>`` by default; ``selector={}`` makes it select nothing."""
    match = {"app": name} if selector is None else selector
    pod_spec: Obj = {"containers": [{"name": "c", "image": "i:1"}]}
    if node_selector is not None:
        pod_spec["nodeSelector"] = node_selector
    if priority is not None:
        pod_spec["priority"] = priority
    if tolerations is not None:
        pod_spec["tolerations"] = tolerations
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}", "resourceVersion": "1"},
            "spec": {"selector": {"matchLabels": match}, "minReadySeconds": min_ready,
                     "template": {"metadata": {"labels": match or {"app": name}}, "spec": pod_spec}}}


def owner_ref(owner: Obj, *, kind: str = "DaemonSet", controller: bool = True) -> Obj:
    return {"apiVersion": "apps/v1", "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": controller}


def pod(name: str, *, owner: Obj | None = None, labels: dict[str, str] | None = None, node_name: str = "n1",
        rv: str = "1", ready: bool = False, deleting: bool = False, namespace: str = NS,
        ip: str | None = None) -> Obj:
    """A running pod on ``node_name``; ``owner`` is the controller reference (an ``owner_ref`` dict)."""
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": rv,
                 "labels": dict(labels or {})}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    status: Obj = {"phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                   "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
    if ip is not None:
        status["podIP"] = ip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "i:1"}]}, "status": status}


def node(name: str, *, labels: dict[str, str] | None = None, rv: str = "1",
         taints: list[dict[str, Any]] | None = None, heartbeat: str = "2026-12-01T00:00:00Z",
         ready: str = "True", since: str = "2026-11-30T00:00:00Z", message: str = "", deleting: bool = False) -> Obj:
    spec: Obj = {"taints": taints} if taints else {}
    meta: Obj = {"name": name, "labels": dict(labels or {}), "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    ready_condition: Obj = {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat,
                            "lastTransitionTime": since}
    if message:
        ready_condition["message"] = message
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec,
            "status": {"conditions": [ready_condition]}}


def revision(name: str, *, owner: Obj | None = None, labels: dict[str, str] | None = None, rv: str = "1",
             deleting: bool = False) -> Obj:
    meta: Obj = {"name": name, "namespace": NS, "uid": f"uid-{name}", "resourceVersion": rv,
                 "labels": dict(labels or {})}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta, "revision": 1, "data": {}}
