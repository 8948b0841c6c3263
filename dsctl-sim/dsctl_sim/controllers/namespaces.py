"""The simulated namespace controller: empties a terminating namespace, then removes it.

Deleting a namespace only marks it (``deletionTimestamp``, phase ``Terminating``); from then on
the API refuses creates in it with a ``NamespaceTerminating`` cause, as kube-apiserver's
NamespaceLifecycle admission does. This loop then deletes every object in the namespace,
with each one's default grace (pods terminate through the kubelet, owners through the garbage
collector), and removes the namespace once nothing is left.

A terminating namespace is checked again on every deletion inside it, and every
``recheck_seconds`` while it is not empty (an object held by a finalizer keeps it, as on a
real cluster).
"""

from __future__ import annotations

from typing import Any

import structlog

from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.util import meta
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["NamespaceController"]

log = structlog.get_logger(__name__)


class NamespaceController(WorkLoop[str]):
    """Finishes namespace deletions; keys are namespace names."""

    name = "namespace"

    def __init__(self, storage: Storage, *, clock: Clock, recheck_seconds: float = 1.0) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._recheck = recheck_seconds
        self._terminating: set[str] = set()
        self.removed = 0

    def register(self, feeds: Feeds) -> None:
        """Listen to namespaces, and to deletions of anything inside a terminating one."""
        feeds.on("namespaces", self._on_namespace)
        feeds.on_every_type(self._on_change)

    def stats(self) -> dict[str, int]:
        """Work counters plus what this loop has done."""
        return {**super().stats(), "terminating": len(self._terminating), "removed": self.removed}

    def _on_namespace(self, event_type: str, namespace: dict[str, Any]) -> None:
        name = str(meta(namespace).get("name") or "")
        if event_type == "DELETED":
            self._terminating.discard(name)
        elif meta(namespace).get("deletionTimestamp"):
            self._terminating.add(name)
            self.enqueue(name)

    def _on_change(self, _key: str, event_type: str, obj: dict[str, Any]) -> None:
        namespace = str(meta(obj).get("namespace") or "")
        if event_type == "DELETED" and namespace in self._terminating:
            self.enqueue(namespace)

    def sync(self, key: str) -> None:
        """Delete what is left in namespace ``key``, or remove it when nothing is."""
        namespace = self._storage.get("namespaces", None, key)
        if namespace is None or not meta(namespace).get("deletionTimestamp"):
            return
        contents = self._storage.namespace_contents(key)
        if not contents:
            try:
                self._storage.finalize_namespace(key)
            except (NotFound, Conflict):
                return
            self.removed += 1
            log.debug("sim_namespace_removed", namespace=key)
            return
        for resource, obj in contents:
            if meta(obj).get("deletionTimestamp"):
                continue
            try:
                self._storage.delete(resource, key, str(meta(obj).get("name")), uid=str(meta(obj).get("uid") or ""),
                                     propagation_policy="Background")
            except (NotFound, Conflict):
                continue
            except StorageError as err:
                log.warning("sim_namespace_delete_failed", namespace=key, resource=resource, error=str(err))
        self.enqueue_at(key, self.clock.now() + self._recheck)
