"""The simulated kubelet: one loop standing in for the kubelet of every node.

For each pod bound to an existing node it moves the pod Pending → Running (container statuses,
start time, IPs) and, after the startup delay, to Ready. It honours the ``sim.dsctl.io/*``
knobs (startup delay per pod or per node, never-ready, fail-after), takes Ready away while the
node's own Ready condition is not True, restarts a container whose spec image changed (an
in-place update: the pod goes NotReady, the container's ``restartCount`` goes up and its status
shows the new image, and the pod is Ready again one startup delay after the restart), and
finishes graceful deletion: once a deleted pod's grace period (capped sim-wide so tests stay
quick) has passed it is removed with grace 0.

Each node's kubelet can be stopped and started again (``set_running``) and can go through a
graceful node shutdown (``shutdown``), as ADR 0100 and ADR 0101 describe; ``kubeletnodes``
keeps that per-node state, and this loop consults it for every pod:

- a stopped kubelet does nothing for its node: its pods keep their last status, Pending pods
  stay Pending, deleted pods stay Terminating (only a force delete removes them), and no
  heartbeat arrives, so the node lifecycle loop marks the node Unknown after its grace period.
  Started again, it posts node status (Ready True) and resumes every pod where it left off;
- a graceful shutdown posts Ready False (``node is shutting down``), rejects every new pod,
  kills the admitted pods by priority group (their status Failed, ``DisruptionTarget``), and
  then stops the kubelet.

Time-based transitions are timers on the injected clock, one heap entry per pod, never a task
per pod. The per-pod memory is one small record holding the pod's uid, when the kubelet started
it, when it saw the deletion, and the pending timer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from dsctl_api.timefmt import parse_rfc3339
from dsctl_sim.controllers.clock import Clock, TimerHandle
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.heartbeat import Heartbeats
from dsctl_sim.controllers.kubeletnodes import NodeAgents
from dsctl_sim.controllers.nodeshutdown import rejected_status, terminated_status
from dsctl_sim.controllers.podstatus import (
    ANN_FAIL_AFTER,
    ANN_NEVER_READY,
    ANN_NODE_STARTUP,
    ANN_STARTUP,
    annotation_float,
    changed_images,
    failed_status,
    node_ip,
    node_ready_status,
    pod_ip,
    running_status,
)
from dsctl_sim.controllers.util import (
    PodKey,
    index_pod_node,
    pod_key,
    split_pod_key,
    status_update,
)
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["Kubelet"]

log = structlog.get_logger(__name__)

_DEFAULT_GRACE = 30.0


@dataclass(slots=True)
class _Record:
    """What the kubelet remembers about one pod between syncs."""

    uid: str
    started_at: float | None = None
    restarted_at: float | None = None
    deleting_since: float | None = None
    timer: TimerHandle | None = None
    timer_at: float | None = None
    written_rv: str | None = None


class Kubelet(WorkLoop[PodKey]):
    """Runs pods on every node. See the module docstring for the lifecycle it drives.

    Keys are pod keys (``namespace/name``); ``sync`` re-reads the pod and its node each time.
    ``nodes`` is the per-node kubelet state the admin API drives (``set_running``, ``shutdown``,
    ``agent_status``, which never await).
    """

    name = "kubelet"

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock,
        pod_startup_seconds: float,
        max_termination_seconds: float,
        heartbeats: Heartbeats | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._recorder = recorder
        self._default_startup = max(0.0, pod_startup_seconds)
        self._max_grace = max(0.0, max_termination_seconds)
        self._records: dict[PodKey, _Record] = {}
        self._by_node: dict[str, set[PodKey]] = {}
        self._node_ready: dict[str, bool] = {}
        self._node_startup: dict[str, float | None] = {}
        self._ip_serial: dict[str, int] = {}
        self.nodes = NodeAgents(storage, self, clock=clock, heartbeats=heartbeats or Heartbeats(),
                                recorder=recorder, max_grace=self._max_grace)

    def register(self, feeds: Feeds) -> None:
        """Listen to pod and node changes."""
        feeds.on("pods", self._on_pod)
        feeds.on("nodes", self._on_node)

    def stats(self) -> dict[str, int]:
        """Work counters plus how many pods the kubelet is tracking and how many nodes' kubelets
        are stopped or shutting down."""
        stopped, shutting_down = self.nodes.counts()
        return {**super().stats(), "pods": len(self._records), "stopped": stopped,
                "shutting_down": shutting_down}

    def close(self) -> None:
        """Cancel every pod's pending timer."""
        super().close()
        for record in self._records.values():
            if record.timer is not None:
                record.timer.cancel()
                record.timer, record.timer_at = None, None

    # -- handlers: bookkeeping and enqueue only -------------------------------------------

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        key = pod_key(pod)
        node = index_pod_node(self._by_node, key, pod, deleted=event_type == "DELETED")
        if event_type == "DELETED":
            record = self._records.pop(key, None)
            if record is not None and record.timer is not None:
                record.timer.cancel()
            self.nodes.kill_done(node, key)
            return
        if not node:
            return
        record = self._records.get(key)
        if record is not None and record.written_rv == (pod.get("metadata") or {}).get(
            "resourceVersion"
        ):
            return  # the echo of our own status write: nothing new to act on
        self.enqueue(key)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name") or "")
        if event_type == "DELETED":
            self._node_ready.pop(name, None)
            self._node_startup.pop(name, None)
            self._ip_serial.pop(name, None)
            self.nodes.forget(name)
            return
        # A node without a Ready condition counts as Ready: nodes created bare (by a test or
        # by kubectl) have no kubelet to report one, and the sim treats them as healthy.
        ready = node_ready_status(node) in (None, "True")
        startup = annotation_float(node, ANN_NODE_STARTUP)
        changed = self._node_ready.get(name) != ready or self._node_startup.get(name) != startup
        self._node_ready[name] = ready
        self._node_startup[name] = startup
        if changed or event_type == "ADDED":
            for key in self._by_node.get(name, ()):
                self.enqueue(key)

    # -- per-node kubelet state: the admin API's calls, and kubeletnodes.PodHost ----------

    def set_running(self, node: str, *, running: bool) -> dict[str, Any]:
        """Stop or start the kubelet of ``node`` (see ``NodeAgents.set_running``)."""
        return self.nodes.set_running(node, running=running)

    def shutdown(self, node: str, *, grace_seconds: float, critical_seconds: float) -> dict[str, Any]:
        """Begin a graceful shutdown of ``node`` (see ``NodeAgents.shutdown``)."""
        return self.nodes.shutdown(node, grace_seconds=grace_seconds, critical_seconds=critical_seconds)

    def agent_status(self, node: str) -> dict[str, Any]:
        """The kubelet state of ``node`` (see ``NodeAgents.agent_status``)."""
        return self.nodes.agent_status(node)

    def pods_on(self, node: str) -> Iterable[PodKey]:
        """Keys of the pods bound to ``node`` (a copy: callers may enqueue while iterating)."""
        return list(self._by_node.get(node, ()))

    def admitted(self, key: PodKey) -> bool:
        """Whether this kubelet has started the pod."""
        record = self._records.get(key)
        return record is not None and record.started_at is not None

    def pause(self, key: PodKey) -> None:
        """Cancel the pod's pending timer."""
        record = self._records.get(key)
        if record is not None:
            self._arm(key, record, None)

    # -- the sync -------------------------------------------------------------------------

    def sync(self, key: PodKey) -> None:
        """Drive one pod one step towards where its knobs and its node say it should be."""
        namespace, name = split_pod_key(key)
        pod = self._storage.get("pods", namespace, name)
        if pod is None:
            self._forget(key)
            return
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        if not node_name:
            return
        if self.nodes.stopped(node_name):
            return  # nobody runs this node's pods: they keep their last status
        uid = str(meta.get("uid") or "")
        record = self._records.get(key)
        if record is None or record.uid != uid:
            if record is not None and record.timer is not None:
                record.timer.cancel()
            record = _Record(uid=uid)
            self._records[key] = record
        now = self.clock.now()

        if meta.get("deletionTimestamp"):
            self.nodes.kill_done(node_name, key)
            self._terminate(key, pod, record, now)
            return
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            self.nodes.kill_done(node_name, key)
            self._forget(key)
            return
        if self.nodes.shutting_down(node_name) and self._shut_down_pod(key, pod, record, node_name, now):
            return
        node = self._storage.get("nodes", None, node_name)
        if node is None:
            return  # pod GC removes pods of vanished nodes
        if record.started_at is None:
            record.started_at = self._recover_start(status, now)
            record.restarted_at = _recover_restart(status, now)
        if status.get("phase") == "Running" and changed_images(pod):
            record.restarted_at = now  # running_status below restarts those containers
        started = record.started_at

        fail_after = annotation_float(pod, ANN_FAIL_AFTER)
        if fail_after is not None and now >= started + fail_after:
            self._write(key, pod, failed_status(pod, now=now), None)
            self._forget(key)
            return

        never_ready = str((meta.get("annotations") or {}).get(ANN_NEVER_READY, "")).lower()
        delay = self._startup_delay(pod, node)
        ready_at = None if never_ready == "true" else max(started, record.restarted_at or started) + delay
        node_ok = node_ready_status(node) in (None, "True")
        containers_ready = ready_at is not None and now >= ready_at
        host = node_ip(node)
        ip = host if spec.get("hostNetwork") else (status.get("podIP") or self._next_ip(node))
        new_status = running_status(
            pod,
            now=now,
            started_at=started,
            ready=containers_ready and node_ok,
            host_ip=host,
            ip=ip,
            not_ready_reason="ContainersNotReady" if not containers_ready else "NodeNotReady",
        )
        if new_status != status:
            self._write(key, pod, new_status, record)

        due = [t for t in (ready_at, None if fail_after is None else started + fail_after) if t]
        future = [t for t in due if t > now]
        self._arm(key, record, min(future) if future else None)

    def _shut_down_pod(self, key: PodKey, pod: dict[str, Any], record: _Record, node: str, now: float) -> bool:
        """The shutdown's part in a pod's sync: kill it, or refuse it; True when it handled the pod."""
        due = self.nodes.kill_due(node, key)
        if due is not None:
            if now < due:
                self._arm(key, record, due)
                return True
            if self._write(key, pod, terminated_status(pod, now=now), None):
                self._forget(key)
                self.nodes.kill_done(node, key)
            return True
        if record.started_at is None:
            # The node shutdown manager's admit handler refuses every pod while it runs.
            if not self._write(key, pod, rejected_status(pod, now=now), None):
                return True
            self._forget(key)
            if self._recorder is not None:
                self._recorder.record(pod, api_version="v1", kind="Pod", event_type="Warning",
                                      reason="NodeShutdown", message="Pod was rejected as the node is shutting down.")
            return True
        return False

    def _terminate(self, key: PodKey, pod: dict[str, Any], record: _Record, now: float) -> None:
        meta = pod["metadata"]
        if record.deleting_since is None:
            record.deleting_since = now
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", _DEFAULT_GRACE)
        try:
            grace_seconds = max(0.0, float(grace))
        except (TypeError, ValueError):
            grace_seconds = _DEFAULT_GRACE
        due = record.deleting_since + min(grace_seconds, self._max_grace)
        if now < due:
            self._arm(key, record, due)
            return
        namespace, name = split_pod_key(key)
        try:
            self._storage.delete("pods", namespace, name, uid=record.uid, grace_period_seconds=0)
        except NotFound:
            pass
        except Conflict:
            # A uid precondition failed: the name now belongs to a new pod; sync that one.
            self.enqueue(key)
            return
        self._forget(key)

    def _next_ip(self, node: dict[str, Any]) -> str:
        name = str((node.get("metadata") or {}).get("name") or "")
        serial = self._ip_serial.get(name, 0)
        self._ip_serial[name] = serial + 1
        return pod_ip((node.get("spec") or {}).get("podCIDR"), serial)

    def _startup_delay(self, pod: dict[str, Any], node: dict[str, Any]) -> float:
        for value in (annotation_float(pod, ANN_STARTUP), annotation_float(node, ANN_NODE_STARTUP)):
            if value is not None:
                return value
        return self._default_startup

    def _recover_start(self, status: dict[str, Any], now: float) -> float:
        """When a pod already reported Running (a restarted control plane), keep its start."""
        start = status.get("startTime")
        if status.get("phase") == "Running" and isinstance(start, str):
            try:
                return min(now, parse_rfc3339(start))
            except ValueError:
                pass
        return now

    def _arm(self, key: PodKey, record: _Record, when: float | None) -> None:
        if record.timer_at == when:
            return
        if record.timer is not None:
            record.timer.cancel()
        record.timer, record.timer_at = None, when
        if when is not None:
            record.timer = self.clock.call_at(when, lambda: self._fire(key, record))

    def _fire(self, key: PodKey, record: _Record) -> None:
        # The timer is spent: forget it, so re-arming for the same instant (a real clock may
        # fire a hair early) sets a fresh one instead of trusting this one.
        record.timer, record.timer_at = None, None
        self.enqueue(key)

    def _forget(self, key: PodKey) -> None:
        record = self._records.pop(key, None)
        if record is not None and record.timer is not None:
            record.timer.cancel()

    def _write(
        self, key: PodKey, pod: dict[str, Any], status: dict[str, Any], record: _Record | None
    ) -> bool:
        """Write the pod's status; False when it was not written (the pod is synced again)."""
        try:
            stored = self._storage.update("pods", status_update(pod, status), subresource="status")
        except Conflict:
            self.enqueue(key)
            return False
        except NotFound:
            self._forget(key)
            return False
        except StorageError as err:
            log.warning("sim_kubelet_status_rejected", pod=key, error=str(err))
            return False
        if record is not None:
            record.written_rv = stored["metadata"]["resourceVersion"]
        return True


def _recover_restart(status: dict[str, Any], now: float) -> float | None:
    """The latest start of a container that has restarted, from a status written before."""
    latest: float | None = None
    for container in status.get("containerStatuses") or []:
        if not isinstance(container, dict) or not container.get("restartCount"):
            continue
        started = ((container.get("state") or {}).get("running") or {}).get("startedAt")
        if isinstance(started, str):
            try:
                when = min(now, parse_rfc3339(started))
            except ValueError:
                continue
            latest = when if latest is None else max(latest, when)
    return latest
