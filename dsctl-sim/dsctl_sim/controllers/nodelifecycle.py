"""The simulated node lifecycle controller: node health from heartbeats, conditions as taints.

Kubernetes expresses node health to schedulers and controllers as taints, and the DaemonSet
controller's eligibility rules are written against those taints, so the sim keeps them in step
with the node's conditions the way kube-controller-manager does:

- Ready ``False`` → ``node.kubernetes.io/not-ready`` with effects NoSchedule and NoExecute;
- Ready ``Unknown`` → ``node.kubernetes.io/unreachable``, NoSchedule and NoExecute;
- Ready ``True`` → neither;
- MemoryPressure / DiskPressure / PIDPressure / NetworkUnavailable ``True`` → the matching
  ``node.kubernetes.io/*`` NoSchedule taint;
- ``spec.unschedulable`` (cordon) → ``node.kubernetes.io/unschedulable:NoSchedule``.

NoExecute taints get ``timeAdded``. A node with no Ready condition at all (created bare, with
no kubelet to report) keeps whatever not-ready/unreachable taints it was given: the sim treats
it as healthy but does not fight a test that tainted it by hand. Evicting pods that do not
tolerate NoExecute taints is the taint manager's job (``taintmanager``).

It also watches the kubelets' heartbeats (``heartbeat``), as kube-controller-manager's
``monitorNodeHealth`` does (ADR 0100):

- a node whose kubelet has been silent for the grace period (``--node-monitor-grace-seconds``)
  gets Ready, MemoryPressure, DiskPressure and PIDPressure set to Unknown, in
  kube-controller-manager's words (``nodestatus.unknown_conditions``); the taints follow;
- when a node's Ready condition turns from True to anything else, every pod on it gets its
  Ready condition set to False (``MarkPodsNotReady``: status and lastTransitionTime change,
  reason and message stay), with a ``NodeNotReady`` event on the node and on each pod; a pod
  that later shows up Ready on a node that is not Ready is marked the same way.

The simulator adds the NoExecute taint at once, where kube-controller-manager rate-limits it
per zone and stops it when a whole zone is down; it has no zones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from dsctl_api.fields import parse_field_selector
from dsctl_api.pods import is_pod_ready
from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.heartbeat import Heartbeats
from dsctl_sim.controllers.nodestatus import unknown_conditions
from dsctl_sim.controllers.podstatus import node_ready_status
from dsctl_sim.controllers.util import meta, pod_key, spec_update, split_pod_key, status_update
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "NOT_READY",
    "UNREACHABLE",
    "UNSCHEDULABLE",
    "NodeLifecycle",
    "desired_taints",
]

log = structlog.get_logger(__name__)

DEFAULT_GRACE_SECONDS = 3.0
"""Seconds without a heartbeat before a node is marked Unknown. kube-controller-manager's
``--node-monitor-grace-period`` is 50 s (40 s before Kubernetes 1.32); a simulator that tests
run against must not make them wait that long."""
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_PRESSURE = {
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
    "NetworkUnavailable": "node.kubernetes.io/network-unavailable",
}
_READY_TAINTS = {
    (NOT_READY, "NoSchedule"),
    (NOT_READY, "NoExecute"),
    (UNREACHABLE, "NoSchedule"),
    (UNREACHABLE, "NoExecute"),
}
_OTHER_TAINTS = {(key, "NoSchedule") for key in (*_PRESSURE.values(), UNSCHEDULABLE)}


def _conditions(node: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(c.get("type")): str(c.get("status"))
        for c in (node.get("status") or {}).get("conditions") or []
        if isinstance(c, Mapping)
    }


def desired_taints(node: Mapping[str, Any]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """``(wanted, managed)``: the (key, effect) taints the node should carry, out of the set of
    taints this controller manages on it. Taints outside ``managed`` are left alone."""
    conditions = _conditions(node)
    wanted: set[tuple[str, str]] = set()
    managed = set(_OTHER_TAINTS)
    ready = node_ready_status(node)
    if ready is not None:
        managed |= _READY_TAINTS
        if ready == "False":
            wanted |= {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}
        elif ready != "True":
            wanted |= {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    for condition, key in _PRESSURE.items():
        if conditions.get(condition) == "True":
            wanted.add((key, "NoSchedule"))
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.add((UNSCHEDULABLE, "NoSchedule"))
    return wanted, managed


class NodeLifecycle(WorkLoop[str]):
    """Node health and condition-driven taints. Keys are node names, and pod keys
    (``namespace/name``) for a pod to mark not Ready.

    Invariant: ``_unready`` holds the nodes whose Ready condition is set and not True, as the
    node feed last showed them; ``_announce`` those of them whose pods are not marked yet,
    mapped to whether they turned so in an update (a transition, worth a node event) rather
    than being first seen that way.
    """

    name = "node-lifecycle"

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock,
        heartbeats: Heartbeats | None = None,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        recorder: EventRecorder | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._heartbeats = heartbeats or Heartbeats()
        self._grace = max(0.0, grace_seconds)
        self._recorder = recorder
        self._unready: set[str] = set()
        self._announce: dict[str, bool] = {}
        self._due: dict[str, float] = {}
        self.marked_unknown = 0
        self.marked_pods = 0
        self._heartbeats.on_change(self._on_heartbeat)

    def register(self, feeds: Feeds) -> None:
        """Listen to node and pod changes."""
        feeds.on("nodes", self._on_node)
        feeds.on("pods", self._on_pod)

    def stats(self) -> dict[str, int]:
        """Work counters plus nodes marked Unknown and pods marked not Ready."""
        return {**super().stats(), "unknown": self.marked_unknown, "pods_not_ready": self.marked_pods}

    # -- handlers: bookkeeping and enqueue only -------------------------------------------

    def _on_heartbeat(self, node: str, since: float | None) -> None:
        if since is None:
            self._due.pop(node, None)
        else:
            self._arm(node, since + self._grace)

    def _arm(self, node: str, when: float) -> None:
        if self._due.get(node) != when:
            self._due[node] = when
            self.enqueue_at(node, when)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        name = str(meta(node).get("name") or "")
        if event_type == "DELETED":
            self._unready.discard(name)
            self._announce.pop(name, None)
            self._due.pop(name, None)
            return
        if node_ready_status(node) in (None, "True"):
            self._unready.discard(name)
            self._announce.pop(name, None)
        elif name not in self._unready:
            self._unready.add(name)
            self._announce[name] = event_type == "MODIFIED"
            self.enqueue(name)
        wanted, managed = desired_taints(node)
        have = {
            (t.get("key"), t.get("effect"))
            for t in (node.get("spec") or {}).get("taints") or []
            if isinstance(t, Mapping)
        }
        if (have & managed) != wanted:
            self.enqueue(name)

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        if event_type == "DELETED" or not self._unready:
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node and node in self._unready and is_pod_ready(pod):
            self.enqueue(pod_key(pod))

    # -- the sync -------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        """One node: its heartbeat, its taints, its pods' readiness; or one pod's readiness."""
        if "/" in key:
            self._sync_pod(key)
            return
        node = self._storage.get("nodes", None, key)
        if node is None:
            return
        if self._give_up_on_kubelet(key, node):
            return  # the status write comes back as a node event, which syncs the rest
        self._sync_taints(key, node)
        if key in self._announce:
            self._mark_pods(key, node, transition=self._announce.pop(key))

    def _give_up_on_kubelet(self, name: str, node: dict[str, Any]) -> bool:
        """Past the grace period without a heartbeat: the conditions go Unknown. True if written."""
        since = self._heartbeats.silent_since(name)
        if since is None:
            return False
        now = self.clock.now()
        if now < since + self._grace:
            self._arm(name, since + self._grace)
            return False
        conditions = unknown_conditions(node, now=now)
        if conditions is None:
            return False
        status = {**(node.get("status") or {}), "conditions": conditions}
        try:
            self._storage.update("nodes", status_update(node, status), subresource="status")
        except Conflict:
            self.enqueue(name)
            return True
        except NotFound:
            return True
        except StorageError as err:
            log.warning("sim_node_status_unknown_rejected", node=name, error=str(err))
            return False
        self.marked_unknown += 1
        log.info("sim_node_status_unknown", node=name, silent_seconds=round(now - since, 3))
        return True

    def _mark_pods(self, name: str, node: dict[str, Any], *, transition: bool) -> None:
        if transition and self._recorder is not None:
            self._recorder.record(node, api_version="v1", kind="Node", event_type="Normal", reason="NodeNotReady",
                                  message=f"Node {name} status is now: NodeNotReady")
        pods, _ = self._storage.list("pods", field_selector=parse_field_selector(f"spec.nodeName={name}"))
        for pod in pods:
            self._mark_pod(pod)

    def _sync_pod(self, key: str) -> None:
        pod = self._storage.get("pods", *split_pod_key(key))
        node_name = (pod.get("spec") or {}).get("nodeName") if pod is not None else None
        if pod is None or not node_name:
            return
        node = self._storage.get("nodes", None, node_name)
        if node is not None and node_ready_status(node) not in (None, "True"):
            self._mark_pod(pod)

    def _mark_pod(self, pod: dict[str, Any]) -> None:
        """MarkPodsNotReady for one pod: its Ready condition False, reason and message kept."""
        status = pod.get("status") or {}
        conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None or ready.get("status") != "True":
            return
        ready.update(status="False", lastTransitionTime=format_rfc3339(self.clock.now()))
        key = pod_key(pod)
        try:
            self._storage.update("pods", status_update(pod, {**status, "conditions": conditions}),
                                 subresource="status")
        except Conflict:
            self.enqueue(key)
            return
        except NotFound:
            return
        except StorageError as err:
            log.warning("sim_pod_not_ready_rejected", pod=key, error=str(err))
            return
        self.marked_pods += 1
        if self._recorder is not None:
            self._recorder.record(pod, api_version="v1", kind="Pod", event_type="Warning", reason="NodeNotReady",
                                  message="Node is not ready")

    def _sync_taints(self, key: str, node: dict[str, Any]) -> None:
        """Add and remove managed taints on one node so they match its conditions."""
        wanted, managed = desired_taints(node)
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
        kept = [
            t for t in taints
            if (t.get("key"), t.get("effect")) not in managed
            or (t.get("key"), t.get("effect")) in wanted
        ]
        present = {(t.get("key"), t.get("effect")) for t in kept}
        added = []
        for taint_key, effect in sorted(wanted - present):
            taint: dict[str, Any] = {"key": taint_key, "effect": effect}
            if effect == "NoExecute":
                taint["timeAdded"] = format_rfc3339(self.clock.now())
            added.append(taint)
        if not added and len(kept) == len(taints):
            return
        new = spec_update(node)
        spec = new.setdefault("spec", {})
        spec["taints"] = [dict(t) for t in kept] + added
        if not spec["taints"]:
            del spec["taints"]
        try:
            self._storage.update("nodes", new)
        except Conflict:
            self.enqueue(key)
        except NotFound:
            return
        except StorageError as err:
            log.warning("sim_node_taint_update_rejected", node=key, error=str(err))
            return
        log.info(
            "sim_node_taints_synced",
            node=key,
            added=[f"{t['key']}:{t['effect']}" for t in added],
            removed=len(taints) - len(kept),
        )
