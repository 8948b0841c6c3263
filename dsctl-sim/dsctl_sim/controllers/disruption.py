"""The simulated disruption controller: keeps every PodDisruptionBudget's status current.

kube-controller-manager's disruption controller recomputes a PDB whenever the PDB or one of
its pods changes; the eviction subresource trusts what it wrote (``disruptionsAllowed``,
``observedGeneration``). This loop does the same, with the arithmetic in
``dsctl_sim.disruption``: keys are PDB keys (``namespace/name``), enqueued by the PDB's own
events and by events of pods it selects now or selected at its last sync (so a pod relabelled
out of a budget is noticed). An approved eviction that never turned into a deletion expires
from ``disruptedPods`` after ``DELETION_TIMEOUT``, so the PDB is synced again at that moment.
"""

from __future__ import annotations

from typing import Any

import structlog

from dsctl_api.labels import Selector
from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.util import meta, pod_key, status_update
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.disruption import PDB_KEY, budget_selector, budget_status
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["DisruptionController"]

log = structlog.get_logger(__name__)


class DisruptionController(WorkLoop[str]):
    """Writes PDB status; keys are ``namespace/name`` of PDBs.

    Invariant: ``_budgets[ns]`` maps each PDB key in ``ns`` to its compiled selector, and
    ``_members[key]`` holds the pod keys counted at that PDB's last sync.
    """

    name = "disruption"

    def __init__(self, storage: Storage, *, clock: Clock) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._budgets: dict[str, dict[str, Selector]] = {}
        self._members: dict[str, set[str]] = {}
        self.written = 0

    def register(self, feeds: Feeds) -> None:
        """Listen to PDBs and pods."""
        feeds.on(PDB_KEY, self._on_pdb)
        feeds.on("pods", self._on_pod)

    def stats(self) -> dict[str, int]:
        """Work counters plus budgets tracked and status writes made."""
        return {**super().stats(), "budgets": len(self._members), "written": self.written}

    def _on_pdb(self, event_type: str, pdb: dict[str, Any]) -> None:
        namespace = str(meta(pdb).get("namespace") or "")
        key = f"{namespace}/{meta(pdb).get('name')}"
        if event_type == "DELETED":
            self._budgets.get(namespace, {}).pop(key, None)
            self._members.pop(key, None)
            return
        self._budgets.setdefault(namespace, {})[key] = budget_selector(pdb)
        self._members.setdefault(key, set())
        self.enqueue(key)

    def _on_pod(self, _event_type: str, pod: dict[str, Any]) -> None:
        budgets = self._budgets.get(str(meta(pod).get("namespace") or ""))
        if not budgets:
            return
        key = pod_key(pod)
        labels = meta(pod).get("labels") or {}
        for pdb_key, selector in budgets.items():
            if selector.matches(labels) or key in self._members.get(pdb_key, ()):
                self.enqueue(pdb_key)

    def sync(self, key: str) -> None:
        """Recompute the PDB's status from its pods and write it if it changed."""
        namespace, _, name = key.partition("/")
        pdb = self._storage.get(PDB_KEY, namespace, name)
        if pdb is None:
            return
        pods, _ = self._storage.list("pods", namespace=namespace, label_selector=budget_selector(pdb))
        self._members[key] = {pod_key(p) for p in pods}
        computed = budget_status(pdb, pods, now=self.clock.now())
        if computed.recheck_at is not None:
            self.enqueue_at(key, computed.recheck_at)
        if computed.status == pdb.get("status"):
            return
        try:
            self._storage.update(PDB_KEY, status_update(pdb, computed.status), subresource="status")
        except Conflict:
            self.enqueue(key)  # an eviction spent the budget meanwhile: recompute from it
            return
        except NotFound:
            return
        except StorageError as err:
            log.warning("sim_disruption_status_failed", pdb=key, error=str(err))
            return
        self.written += 1
