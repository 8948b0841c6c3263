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
graceful node shutdown (``shutdown``), as ADR 0100 and ADR 0101 describe:

- a stopped kubelet does nothing for its node: its pods keep their last status, Pending pods
  stay Pending, deleted pods stay Terminating (only a force delete removes them), and no
  heartbeat arrives, so the node lifecycle loop marks the node Unknown after its grace period.
  Started again, it posts node status (Ready True) and resumes every pod where it left off;
- a graceful shutdown posts Ready False (``node is shutting down``), rejects every new pod,
  kills the admitted pods by priority group (their status Failed, ``DisruptionTarget``), and
  then stops the kubelet.

Time-based transitions are timers on the injected clock, one heap entry per pod, never a task
per pod. The per-pod memory is one small record holding the pod's uid, when the kubelet started
it, when it saw the deletion, and the pending timer; per node, only stopped or shutting-down
kubelets hold any state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import structlog

from dsctl_api.timefmt import format_rfc3339, parse_rfc3339
from dsctl_sim.controllers.clock import Clock, TimerHandle
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.heartbeat import Heartbeats
from dsctl_sim.controllers.nodeshutdown import (
    ShutdownGroup,
    group_index,
    kill_seconds,
    plan_groups,
    rejected_status,
    terminated_status,
)
from dsctl_sim.controllers.nodestatus import kubelet_conditions
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
from dsctl_sim.errors import BadRequest, Conflict, NotFound, StorageError
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


@dataclass(slots=True)
class _Shutdown:
    """A graceful node shutdown under way. ``waiting[i]`` are the pods group ``i`` will kill;
    ``killing`` maps the pods of the current group to when their kill ends."""

    groups: list[ShutdownGroup]
    waiting: list[list[PodKey]]
    started_at: float
    group: int = -1
    killing: dict[PodKey, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Agent:
    """A node whose kubelet is not simply running: stopped (``stopped_at``) or shutting down."""

    stopped_at: float | None = None
    shutdown: _Shutdown | None = None


class Kubelet(WorkLoop[str]):
    """Runs pods on every node. See the module docstring for the lifecycle it drives.

    Keys are pod keys (``namespace/name``), and node names (no ``/``) for the progress of a
    node's graceful shutdown; ``sync`` re-reads the object each time. ``set_running`` and
    ``shutdown`` are called from the event loop (the admin API) and never await.
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
        self._heartbeats = heartbeats or Heartbeats()
        self._recorder = recorder
        self._agents: dict[str, _Agent] = {}
        self._default_startup = max(0.0, pod_startup_seconds)
        self._max_grace = max(0.0, max_termination_seconds)
        self._records: dict[PodKey, _Record] = {}
        self._by_node: dict[str, set[PodKey]] = {}
        self._node_ready: dict[str, bool] = {}
        self._node_startup: dict[str, float | None] = {}
        self._ip_serial: dict[str, int] = {}

    def register(self, feeds: Feeds) -> None:
        """Listen to pod and node changes."""
        feeds.on("pods", self._on_pod)
        feeds.on("nodes", self._on_node)

    def stats(self) -> dict[str, int]:
        """Work counters plus how many pods the kubelet is tracking and how many nodes' kubelets
        are stopped or shutting down."""
        stopped = sum(1 for a in self._agents.values() if a.stopped_at is not None)
        return {**super().stats(), "pods": len(self._records), "stopped": stopped,
                "shutting_down": len(self._agents) - stopped}

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
            self._kill_done(node, key)
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
            # A node registered again under this name comes with a running kubelet.
            self._agents.pop(name, None)
            self._heartbeats.forget(name)
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

    # -- a node's kubelet: stop, start, graceful shutdown -----------------------------------

    def set_running(self, node: str, *, running: bool) -> dict[str, Any]:
        """Stop or start the kubelet of ``node``; returns ``agent_status``. Starting a kubelet
        that is shutting down cancels the shutdown (pods already killed stay Failed)."""
        self._require_node(node)
        if running:
            self._start(node)
        else:
            self._stop(node)
        return self.agent_status(node)

    def shutdown(self, node: str, *, grace_seconds: float, critical_seconds: float) -> dict[str, Any]:
        """Begin a graceful node shutdown with the kubelet's two settings; returns ``agent_status``.

        ``Conflict`` when the kubelet is stopped or already shutting down; ``BadRequest`` for a
        critical period longer than the whole. A zero period shuts down at once: the kubelet
        stops and its pods keep their last status, as on a node without the feature.
        """
        self._require_node(node)
        if not (0 <= critical_seconds <= grace_seconds):
            raise BadRequest("shutdownGracePeriodCriticalPodsSeconds must be between 0 and "
                             f"shutdownGracePeriodSeconds ({grace_seconds:g}), got {critical_seconds:g}")
        agent = self._agents.get(node)
        if agent is not None and agent.stopped_at is not None:
            raise Conflict(f'the kubelet of node "{node}" is stopped')
        if agent is not None and agent.shutdown is not None:
            raise Conflict(f'node "{node}" is already shutting down')
        groups = plan_groups(grace_seconds, critical_seconds)
        now = self.clock.now()
        if not groups:
            self._stop(node)
            return self.agent_status(node)
        waiting: list[list[PodKey]] = [[] for _ in groups]
        for key in sorted(self._by_node.get(node, ())):
            record = self._records.get(key)
            pod = self._storage.get("pods", *split_pod_key(key))
            if record is None or record.started_at is None or pod is None or _finished(pod):
                continue  # never admitted, or already on its way out
            waiting[group_index(groups, pod)].append(key)
        self._agents[node] = _Agent(shutdown=_Shutdown(groups=groups, waiting=waiting, started_at=now))
        self._post_node_status(node, shutting_down=True)
        if self._recorder is not None:
            node_obj = self._storage.get("nodes", None, node) or {"metadata": {"name": node}}
            self._recorder.record(node_obj, api_version="v1", kind="Node", event_type="Normal", reason="Shutdown",
                                  message="Shutdown manager detected shutdown event")
        log.info("sim_node_shutdown_started", node=node, groups=[(g.priority, g.seconds) for g in groups],
                 pods=sum(len(w) for w in waiting))
        self._sync_node(node)  # the first group's kills start now, not at the worker's next turn
        return self.agent_status(node)

    def agent_status(self, node: str) -> dict[str, Any]:
        """``{"node", "running", "stoppedAt", "shuttingDown"}`` for the admin API."""
        agent = self._agents.get(node)
        stopped = agent.stopped_at if agent is not None else None
        return {"node": node, "running": stopped is None,
                "stoppedAt": None if stopped is None else format_rfc3339(stopped),
                "shuttingDown": agent is not None and agent.shutdown is not None}

    def _require_node(self, node: str) -> None:
        if self._storage.get("nodes", None, node) is None:
            raise NotFound.object(plural="nodes", group="", name=node)

    def _stop(self, node: str) -> None:
        agent = self._agents.setdefault(node, _Agent())
        if agent.stopped_at is not None:
            return
        now = self.clock.now()
        agent.stopped_at, agent.shutdown = now, None
        self._heartbeats.stop(node, at=now)
        for key in self._by_node.get(node, ()):
            record = self._records.get(key)
            if record is not None:
                self._arm(key, record, None)
        log.info("sim_kubelet_stopped", node=node)

    def _start(self, node: str) -> None:
        agent = self._agents.pop(node, None)
        if agent is None:
            return
        self._heartbeats.start(node)
        self._post_node_status(node, shutting_down=False)
        for key in self._by_node.get(node, ()):
            self.enqueue(key)
        log.info("sim_kubelet_started", node=node, shutdown_cancelled=agent.shutdown is not None)

    def _post_node_status(self, node: str, *, shutting_down: bool) -> None:
        """One node status post, as the kubelet makes it (conditions and their heartbeats)."""
        current = self._storage.get("nodes", None, node)
        if current is None:
            return
        conditions = kubelet_conditions(current, now=self.clock.now(), shutting_down=shutting_down)
        status = {**(current.get("status") or {}), "conditions": conditions}
        try:
            self._storage.update("nodes", status_update(current, status), subresource="status")
        except StorageError as err:
            log.warning("sim_kubelet_node_status_rejected", node=node, error=str(err))

    def _sync_node(self, node: str) -> None:
        """Move a graceful shutdown on: next group once the current one is killed; stop at the end."""
        agent = self._agents.get(node)
        shutdown = agent.shutdown if agent is not None else None
        if shutdown is None or shutdown.killing:
            return
        now = self.clock.now()
        while shutdown.group + 1 < len(shutdown.groups):
            shutdown.group += 1
            group = shutdown.groups[shutdown.group]
            for key in shutdown.waiting[shutdown.group]:
                pod = self._storage.get("pods", *split_pod_key(key))
                if pod is None or _finished(pod):
                    continue
                shutdown.killing[key] = now + min(kill_seconds(group, pod), self._max_grace)
                self.enqueue(key)
            if shutdown.killing:
                return
        log.info("sim_node_shutdown_finished", node=node, seconds=round(now - shutdown.started_at, 3))
        self._stop(node)

    def _kill_done(self, node: str, key: PodKey) -> None:
        agent = self._agents.get(node) if node else None
        if agent is not None and agent.shutdown is not None and agent.shutdown.killing.pop(key, None) is not None:
            self.enqueue(node)

    # -- the sync -------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        """Drive one pod one step towards where its knobs and its node say it should be
        (or, for a node name, one step of that node's graceful shutdown)."""
        if "/" not in key:
            self._sync_node(key)
            return
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
        agent = self._agents.get(node_name)
        if agent is not None and agent.stopped_at is not None:
            return  # nobody runs this node's pods: they keep their last status
        shutdown = agent.shutdown if agent is not None else None
        uid = str(meta.get("uid") or "")
        record = self._records.get(key)
        if record is None or record.uid != uid:
            if record is not None and record.timer is not None:
                record.timer.cancel()
            record = _Record(uid=uid)
            self._records[key] = record
        now = self.clock.now()

        if meta.get("deletionTimestamp"):
            self._kill_done(node_name, key)
            self._terminate(key, pod, record, now)
            return
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            self._kill_done(node_name, key)
            self._forget(key)
            return
        if shutdown is not None and self._shut_down_pod(key, pod, record, shutdown, now):
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

    def _shut_down_pod(
        self, key: PodKey, pod: dict[str, Any], record: _Record, shutdown: _Shutdown, now: float
    ) -> bool:
        """The shutdown's part in a pod's sync; True when it handled the pod."""
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        due = shutdown.killing.get(key)
        if due is not None:
            if now < due:
                self._arm(key, record, due)
                return True
            if self._write(key, pod, terminated_status(pod, now=now), None):
                self._forget(key)
                self._kill_done(node, key)
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


def _finished(pod: dict[str, Any]) -> bool:
    """Terminal, or already being deleted: nothing for a shutdown to kill."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool((pod.get("metadata") or {}).get("deletionTimestamp"))


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
