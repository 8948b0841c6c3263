"""The simulated node lifecycle controller: node conditions become node taints.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.podstatus import node_ready_status
from dsctl_sim.controllers.util import meta, spec_update
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["NOT_READY", "UNREACHABLE", "UNSCHEDULABLE", "NodeLifecycle", "desired_taints"]

log = structlog.get_logger(__name__)

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
    """Keeps condition-driven taints in step with each node's conditions; keys are node names."""

    name = "node-lifecycle"

    def __init__(self, storage: Storage, *, clock: Clock) -> None:
        super().__init__(clock=clock)
        self._storage = storage

    def register(self, feeds: Feeds) -> None:
        """Listen to node changes."""
        feeds.on("nodes", self._on_node)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        if event_type == "DELETED":
            return
        wanted, managed = desired_taints(node)
        have = {
            (t.get("key"), t.get("effect"))
            for t in (node.get("spec") or {}).get("taints") or []
            if isinstance(t, Mapping)
        }
        if (have & managed) != wanted:
            self.enqueue(str(meta(node).get("name") or ""))

    def sync(self, key: str) -> None:
        """Add and remove managed taints on one node so they match its conditions."""
        node = self._storage.get("nodes", None, key)
        if node is None:
            return
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
