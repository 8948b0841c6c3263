"""The simulated pod garbage collector: removes pods no kubelet will ever finish.

- **Orphaned pods**: a pod bound to a node that no longer exists is force-deleted (grace 0)
  once the node has stayed absent for a short quarantine (``orphan_delay``), which absorbs a
  node being deleted and re-created under the same name.
- **Unscheduled terminating pods**: a pod with a ``deletionTimestamp`` and no node has no
  kubelet to finish it, so it is force-deleted at once (storage normally removes such pods
  immediately; this covers pods that carried finalizers).

Pods per node are indexed from the pod feed, so deleting a node touches only its own pods.
"""

from __future__ import annotations

from typing import Any

import structlog

from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.util import PodKey, index_pod_node, meta, pod_key, split_pod_key
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["PodGC"]

log = structlog.get_logger(__name__)


class PodGC(WorkLoop[PodKey]):
    """Force-deletes orphaned and unscheduled terminating pods; keys are pod keys."""

    name = "pod-gc"

    def __init__(self, storage: Storage, *, clock: Clock, orphan_delay: float = 0.5) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._delay = max(0.0, orphan_delay)
        self._by_node: dict[str, set[PodKey]] = {}
        self.collected = 0

    def register(self, feeds: Feeds) -> None:
        """Listen to pod and node changes."""
        feeds.on("pods", self._on_pod)
        feeds.on("nodes", self._on_node)

    def stats(self) -> dict[str, int]:
        """Work counters plus what this loop has done."""
        return {**super().stats(), "collected": self.collected}

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        key = pod_key(pod)
        node = index_pod_node(self._by_node, key, pod, deleted=event_type == "DELETED")
        if event_type == "DELETED":
            return
        if not node:
            if meta(pod).get("deletionTimestamp"):
                self.enqueue(key)
        elif event_type == "ADDED" and self._storage.get("nodes", None, node) is None:
            self.enqueue_at(key, self.clock.now() + self._delay)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        if event_type != "DELETED":
            return
        when = self.clock.now() + self._delay
        for key in list(self._by_node.get(str(meta(node).get("name") or ""), ())):
            self.enqueue_at(key, when)

    def sync(self, key: PodKey) -> None:
        """Force-delete the pod if it is orphaned or unscheduled and terminating."""
        namespace, name = split_pod_key(key)
        pod = self._storage.get("pods", namespace, name)
        if pod is None:
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            if self._storage.get("nodes", None, node) is not None:
                return
            why = "orphaned"
        elif meta(pod).get("deletionTimestamp"):
            why = "unscheduled-terminating"
        else:
            return
        try:
            self._storage.delete(
                "pods", namespace, name, uid=str(meta(pod).get("uid") or ""), grace_period_seconds=0
            )
        except (NotFound, Conflict):
            return
        except StorageError as err:
            log.warning("sim_pod_gc_failed", pod=key, error=str(err))
            return
        self.collected += 1
        log.debug("sim_pod_gc_deleted", pod=key, node=node, why=why)
