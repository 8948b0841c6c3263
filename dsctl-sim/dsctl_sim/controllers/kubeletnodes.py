"""The kubelet of each node as a process: running, stopped, or shutting its node down.

The kubelet loop (``kubelet``) runs pods; this module owns what is per node instead: whether
that node's kubelet runs at all (ADR 0100), its node status posts, and the progress of a
graceful node shutdown through its priority groups (ADR 0101, plan in ``nodeshutdown``). A
node whose kubelet simply runs has no entry here, so the memory is per stopped or
shutting-down node, never per node.

The kubelet asks, per pod sync, whether the node is stopped (do nothing) or shutting down
(kill, or reject); it reports each kill it completes (``kill_done``), which moves the shutdown
on to the next group and, after the last, stops the kubelet. Nothing here awaits: the admin API
calls ``set_running``/``shutdown`` from the event loop, and the kubelet calls the rest from its
worker and handlers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.heartbeat import Heartbeats
from dsctl_sim.controllers.nodeshutdown import ShutdownGroup, group_index, kill_seconds, plan_groups
from dsctl_sim.controllers.nodestatus import kubelet_conditions
from dsctl_sim.controllers.util import split_pod_key, status_update
from dsctl_sim.errors import BadRequest, Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["NodeAgents", "PodHost"]

log = structlog.get_logger(__name__)


class PodHost(Protocol):
    """What ``NodeAgents`` needs from the kubelet loop that runs the pods."""

    def pods_on(self, node: str) -> Iterable[str]:
        """Keys of the pods bound to ``node``."""

    def admitted(self, key: str) -> bool:
        """Whether the kubelet has started the pod (a shutdown kills only those)."""

    def pause(self, key: str) -> None:
        """Cancel the pod's pending timer: its kubelet stopped."""

    def enqueue(self, key: str) -> None:
        """Sync the pod soon."""


@dataclass(slots=True)
class _Shutdown:
    """A graceful node shutdown under way. ``waiting[i]`` are the pods group ``i`` will kill;
    ``killing`` maps the pods of the current group to when their kill ends."""

    groups: list[ShutdownGroup]
    waiting: list[list[str]]
    started_at: float
    group: int = -1
    killing: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Agent:
    """A node whose kubelet is not simply running: stopped (``stopped_at``) or shutting down."""

    stopped_at: float | None = None
    shutdown: _Shutdown | None = None


class NodeAgents:
    """Per-node kubelet state; see the module docstring. ``max_grace`` caps every kill."""

    def __init__(
        self,
        storage: Storage,
        host: PodHost,
        *,
        clock: Clock,
        heartbeats: Heartbeats,
        recorder: EventRecorder | None,
        max_grace: float,
    ) -> None:
        self._storage = storage
        self._host = host
        self._clock = clock
        self._heartbeats = heartbeats
        self._recorder = recorder
        self._max_grace = max_grace
        self._agents: dict[str, _Agent] = {}

    # -- the admin API ----------------------------------------------------------------------

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
        if not groups:
            self._stop(node)
            return self.agent_status(node)
        waiting: list[list[str]] = [[] for _ in groups]
        for key in sorted(self._host.pods_on(node)):
            pod = self._storage.get("pods", *split_pod_key(key))
            if pod is not None and self._host.admitted(key) and not _finished(pod):
                waiting[group_index(groups, pod)].append(key)
        self._agents[node] = _Agent(shutdown=_Shutdown(groups=groups, waiting=waiting, started_at=self._clock.now()))
        self._post_node_status(node, shutting_down=True)
        if self._recorder is not None:
            node_obj = self._storage.get("nodes", None, node) or {"metadata": {"name": node}}
            self._recorder.record(node_obj, api_version="v1", kind="Node", event_type="Normal", reason="Shutdown",
                                  message="Shutdown manager detected shutdown event")
        log.info("sim_node_shutdown_started", node=node, groups=[(g.priority, g.seconds) for g in groups],
                 pods=sum(len(w) for w in waiting))
        self._advance(node)
        return self.agent_status(node)

    def agent_status(self, node: str) -> dict[str, Any]:
        """``{"node", "running", "stoppedAt", "shuttingDown"}`` for the admin API."""
        agent = self._agents.get(node)
        stopped = agent.stopped_at if agent is not None else None
        return {"node": node, "running": stopped is None,
                "stoppedAt": None if stopped is None else format_rfc3339(stopped),
                "shuttingDown": agent is not None and agent.shutdown is not None}

    # -- what the kubelet asks ----------------------------------------------------------------

    def stopped(self, node: str) -> bool:
        """Whether the kubelet of ``node`` is stopped."""
        agent = self._agents.get(node)
        return agent is not None and agent.stopped_at is not None

    def shutting_down(self, node: str) -> bool:
        """Whether ``node`` is in a graceful shutdown (new pods are rejected)."""
        agent = self._agents.get(node)
        return agent is not None and agent.shutdown is not None

    def kill_due(self, node: str, key: str) -> float | None:
        """When the shutdown's kill of pod ``key`` ends, if it is being killed."""
        agent = self._agents.get(node)
        return agent.shutdown.killing.get(key) if agent is not None and agent.shutdown is not None else None

    def kill_done(self, node: str, key: str) -> None:
        """Pod ``key`` is killed, or gone: the shutdown moves on once its group is done."""
        agent = self._agents.get(node) if node else None
        if agent is not None and agent.shutdown is not None and agent.shutdown.killing.pop(key, None) is not None:
            self._advance(node)

    def forget(self, node: str) -> None:
        """The node is deleted: a node registered again under this name has a running kubelet."""
        self._agents.pop(node, None)
        self._heartbeats.forget(node)

    def counts(self) -> tuple[int, int]:
        """``(stopped, shutting down)`` kubelets."""
        stopped = sum(1 for a in self._agents.values() if a.stopped_at is not None)
        return stopped, len(self._agents) - stopped

    # -- internals ------------------------------------------------------------------------------

    def _require_node(self, node: str) -> None:
        if self._storage.get("nodes", None, node) is None:
            raise NotFound.object(plural="nodes", group="", name=node)

    def _stop(self, node: str) -> None:
        agent = self._agents.setdefault(node, _Agent())
        if agent.stopped_at is not None:
            return
        now = self._clock.now()
        agent.stopped_at, agent.shutdown = now, None
        self._heartbeats.stop(node, at=now)
        for key in self._host.pods_on(node):
            self._host.pause(key)
        log.info("sim_kubelet_stopped", node=node)

    def _start(self, node: str) -> None:
        agent = self._agents.pop(node, None)
        if agent is None:
            return
        self._heartbeats.start(node)
        self._post_node_status(node, shutting_down=False)
        for key in self._host.pods_on(node):
            self._host.enqueue(key)
        log.info("sim_kubelet_started", node=node, shutdown_cancelled=agent.shutdown is not None)

    def _post_node_status(self, node: str, *, shutting_down: bool) -> None:
        """One node status post, as the kubelet makes it (conditions and their heartbeats)."""
        current = self._storage.get("nodes", None, node)
        if current is None:
            return
        conditions = kubelet_conditions(current, now=self._clock.now(), shutting_down=shutting_down)
        status = {**(current.get("status") or {}), "conditions": conditions}
        try:
            self._storage.update("nodes", status_update(current, status), subresource="status")
        except StorageError as err:
            log.warning("sim_kubelet_node_status_rejected", node=node, error=str(err))

    def _advance(self, node: str) -> None:
        """Next group once the current one is killed (empty groups are skipped); stop at the end."""
        agent = self._agents.get(node)
        shutdown = agent.shutdown if agent is not None else None
        if shutdown is None or shutdown.killing:
            return
        now = self._clock.now()
        while shutdown.group + 1 < len(shutdown.groups):
            shutdown.group += 1
            group = shutdown.groups[shutdown.group]
            for key in shutdown.waiting[shutdown.group]:
                pod = self._storage.get("pods", *split_pod_key(key))
                if pod is None or _finished(pod):
                    continue
                shutdown.killing[key] = now + min(kill_seconds(group, pod), self._max_grace)
                self._host.enqueue(key)
            if shutdown.killing:
                return
        log.info("sim_node_shutdown_finished", node=node, seconds=round(now - shutdown.started_at, 3))
        self._stop(node)


def _finished(pod: dict[str, Any]) -> bool:
    """Terminal, or already being deleted: nothing for a shutdown to kill."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool((pod.get("metadata") or {}).get("deletionTimestamp"))
