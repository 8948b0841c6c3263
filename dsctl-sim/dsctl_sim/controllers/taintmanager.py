"""The simulated taint manager: evicts pods from nodes with NoExecute taints they do not tolerate.

This is the behaviour the DaemonSet controller leans on: when a node goes NotReady its
ordinary pods are evicted, while daemon pods (which tolerate not-ready and unreachable) stay.

Rules, as kube-controller-manager applies them:

- a bound pod on a node with a NoExecute taint that none of its tolerations tolerates is
  deleted (gracefully, with its own grace period) at once;
- if every NoExecute taint is tolerated, the smallest ``tolerationSeconds`` among the matching
  tolerations bounds how long the pod may stay, counted from when this loop first saw the
  pod under those taints; a toleration without ``tolerationSeconds`` tolerates forever;
- a pod whose node loses the taints before its deadline is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from dsctl_api.taints import tolerates
from dsctl_sim.controllers.clock import Clock, TimerHandle
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.util import PodKey, index_pod_node, meta, pod_key, split_pod_key
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["TaintManager", "toleration_deadline"]

log = structlog.get_logger(__name__)


def _no_execute(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if isinstance(t, Mapping) and t.get("effect") == "NoExecute"
    ]


def toleration_deadline(
    taints: list[Mapping[str, Any]], tolerations: list[Any] | None
) -> float | None:
    """Seconds the pod may stay under ``taints``: 0 to evict now, None to stay forever."""
    tols = [t for t in tolerations or [] if isinstance(t, Mapping)]
    shortest: float | None = None
    for taint in taints:
        matching = [t for t in tols if tolerates(t, taint)]
        if not matching:
            return 0.0
        for toleration in matching:
            seconds = toleration.get("tolerationSeconds")
            if seconds is None:
                continue
            try:
                value = max(0.0, float(seconds))
            except (TypeError, ValueError):
                continue
            shortest = value if shortest is None else min(shortest, value)
    return shortest


@dataclass(slots=True)
class _Pending:
    uid: str
    since: float
    timer: TimerHandle | None = None
    due: float | None = None


class TaintManager(WorkLoop[PodKey]):
    """Deletes pods that may no longer stay on their NoExecute-tainted node; keys are pod keys."""

    name = "taint-manager"

    def __init__(
        self, storage: Storage, *, clock: Clock, recorder: EventRecorder | None = None
    ) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._recorder = recorder
        self._by_node: dict[str, set[PodKey]] = {}
        self._tainted: dict[str, tuple[tuple[Any, Any, Any], ...]] = {}
        self._pending: dict[PodKey, _Pending] = {}
        self.evicted = 0

    def register(self, feeds: Feeds) -> None:
        """Listen to pod and node changes."""
        feeds.on("pods", self._on_pod)
        feeds.on("nodes", self._on_node)

    def stats(self) -> dict[str, int]:
        """Work counters plus what this loop has done."""
        return {**super().stats(), "evicted": self.evicted}

    def close(self) -> None:
        """Cancel every pending eviction timer."""
        super().close()
        for key in list(self._pending):
            self._drop(key)

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        key = pod_key(pod)
        deleted = event_type == "DELETED"
        node = index_pod_node(self._by_node, key, pod, deleted=deleted)
        if deleted:
            self._drop(key)
        elif node and node in self._tainted and not meta(pod).get("deletionTimestamp"):
            self.enqueue(key)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        name = str(meta(node).get("name") or "")
        taints = () if event_type == "DELETED" else tuple(
            sorted((t.get("key"), t.get("value"), t.get("effect")) for t in _no_execute(node))
        )
        before = self._tainted.get(name, ())
        if taints:
            self._tainted[name] = taints
        else:
            self._tainted.pop(name, None)
        if taints != before:
            for key in self._by_node.get(name, ()):
                self.enqueue(key)

    def sync(self, key: PodKey) -> None:
        """Evict the pod now, later, or never, according to its node's NoExecute taints."""
        namespace, name = split_pod_key(key)
        pod = self._storage.get("pods", namespace, name)
        node_name = (pod.get("spec") or {}).get("nodeName") if pod is not None else None
        if pod is None or not node_name or meta(pod).get("deletionTimestamp"):
            self._drop(key)
            return
        node = self._storage.get("nodes", None, node_name)
        taints = _no_execute(node) if node is not None else []
        if not taints:
            self._drop(key)
            return
        allowed = toleration_deadline(taints, (pod.get("spec") or {}).get("tolerations"))
        uid = str(meta(pod).get("uid") or "")
        now = self.clock.now()
        if allowed is None:
            self._drop(key)
            return
        pending = self._pending.get(key)
        if pending is None or pending.uid != uid:
            self._drop(key)
            pending = _Pending(uid=uid, since=now)
            self._pending[key] = pending
        due = pending.since + allowed
        if now < due:
            if pending.timer is None or pending.due != due:
                if pending.timer is not None:
                    pending.timer.cancel()
                record = pending
                pending.timer = self.clock.call_at(due, lambda: self._fire(key, record))
                pending.due = due
            return
        self._evict(key, pod, taints)

    def _fire(self, key: PodKey, pending: _Pending) -> None:
        pending.timer, pending.due = None, None
        self.enqueue(key)

    def _drop(self, key: PodKey) -> None:
        pending = self._pending.pop(key, None)
        if pending is not None and pending.timer is not None:
            pending.timer.cancel()

    def _evict(self, key: PodKey, pod: dict[str, Any], taints: list[Mapping[str, Any]]) -> None:
        namespace, name = split_pod_key(key)
        self._drop(key)
        try:
            self._storage.delete("pods", namespace, name, uid=str(meta(pod).get("uid") or ""))
        except (NotFound, Conflict):
            return
        except StorageError as err:
            log.warning("sim_taint_eviction_failed", pod=key, error=str(err))
            return
        self.evicted += 1
        taint_names = ", ".join(sorted({str(t.get("key")) for t in taints}))
        log.debug("sim_taint_eviction", pod=key, taints=taint_names)
        if self._recorder is not None:
            self._recorder.record(
                pod,
                api_version="v1",
                kind="Pod",
                event_type="Normal",
                reason="TaintManagerEviction",
                message=f"Marking for deletion Pod {namespace}/{name}",
            )
