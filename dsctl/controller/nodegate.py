"""The node readiness gate's worker side: its queue of node names, its workers, one node's sync.

The gate is keyed by node, not by DaemonSet: a node's taint depends on every gating DaemonSet at
once, and two DaemonSet workers must never patch one node's taints from two snapshots. So the
gate has its own queue (``workqueue`` label ``node_readiness_gate``), fed by
``dsctl.controller.gatehandlers``, and its own ``WorkerPool``; the controller starts and stops it
with the DaemonSet workers, so only the leader runs it.

``NodeGate.sync`` follows the DaemonSet sync's shape:

1. **Snapshot**, with no await: the node, every gating DaemonSet in the cache (the
   ``BY_READINESS_GATE`` index) with its verdict for the node and its pods there, and the gate's
   memory of the node.
2. **Plan**: ``dsctl.daemonset.readinessgate.plan_gate``, pure.
3. **Execute**: the one patch, through the controller's client, so the leader's write fence
   guards it, then the events (on the Node). The node's memory and a write's events are kept
   only once the patch went through; a refused ``test`` (422: the node's taints changed since the snapshot) or any other
   failure is retried with the queue's backoff, planned again from a fresher cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Gauge, Histogram

from dsctl.daemonset.access import min_ready_seconds
from dsctl.daemonset.readinessgate import (
    GatePlan,
    GateSettings,
    GatingDaemonSet,
    addition_patch,
    plan_gate,
    removal_patch,
)
from dsctl.informer import ReadOnlyStore, object_key
from dsctl.kube import errors
from dsctl.kube.resources import NODES
from dsctl.tuning import READINESS_GATE_WORKERS
from dsctl.workqueue import RateLimitingQueue, default_controller_rate_limiter
from dsctl_api.objects import deletion_timestamp, name, uid
from dsctl_api.pods import controller_ref

from .cacheview import BY_READINESS_GATE, BY_READINESS_TAINT, INDEXED
from .gatememory import ReadinessGateMemory
from .workers import Done, Outcome, Retry, WorkerPool
from .writes import PATCH_NODE, Recorder, SyncClient, WriteSignals

__all__ = ["NodeGate"]

log = structlog.get_logger(__name__)

Obj = Mapping[str, Any]
_GATED_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 3600.0)


class NodeGate:
    """Owns the gate's queue and worker pool; ``start`` and ``stop`` them with the DaemonSet workers."""

    def __init__(
        self,
        *,
        client: SyncClient,
        settings: GateSettings,
        nodes: ReadOnlyStore,
        daemonsets: ReadOnlyStore,
        pods_on_node: Callable[[str], Iterable[Obj]],
        memory: ReadinessGateMemory,
        recorder: Recorder,
        signals: WriteSignals,
        registry: CollectorRegistry | None = None,
        stuck_after: float = 300.0,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._client = client
        self._nodes = nodes
        self._daemonsets = daemonsets
        self._pods_on_node = pods_on_node
        self.memory = memory
        self._recorder = recorder
        self._signals = signals
        self._wall = wall
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            name="node_readiness_gate", rate_limiter=default_controller_rate_limiter(), registry=registry)
        self.workers = WorkerPool(queue=self.queue, sync=self.sync, workers=READINESS_GATE_WORKERS,
                                  registry=registry, stuck_after=stuck_after, name="gate-worker",
                                  metric_prefix="dsctl_node_readiness_gate_sync", what="node readiness gate")
        self._gated: Histogram | None = None
        if registry is not None:
            self._gated = Histogram(
                "dsctl_node_readiness_gate_duration_seconds",
                "Seconds from a node's gate beginning (its creation when it joined tainted) to the readiness "
                "taint's removal.", buckets=_GATED_BUCKETS, registry=registry)
            Gauge("dsctl_node_readiness_gated_nodes", "Nodes carrying the readiness taint.",
                  registry=registry).set_function(lambda: len(nodes.index_keys(BY_READINESS_TAINT, INDEXED)))
            Gauge("dsctl_node_readiness_timed_out_nodes",
                  "Nodes still carrying the readiness taint after --readiness-timeout.",
                  registry=registry).set_function(memory.timed_out)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the gate's workers (leader only)."""
        self.workers.start()

    async def stop(self, *, timeout: float) -> None:
        """Stop intake and drain in-flight syncs within ``timeout``."""
        await self.workers.stop(timeout=timeout)

    def stuck(self) -> str | None:
        """A reason when a gate sync is stuck or a gate worker died, else None."""
        return self.workers.stuck()

    # -- one node -----------------------------------------------------------------------------

    def _gating(self, node: Obj) -> list[GatingDaemonSet]:
        """Every gating DaemonSet in the cache that is not being deleted, as it concerns ``node``."""
        node_name = name(node)
        pods = list(self._pods_on_node(node_name))
        result: list[GatingDaemonSet] = []
        for ds in self._daemonsets.by_index(BY_READINESS_GATE, INDEXED):
            if deletion_timestamp(ds):
                continue
            key, ds_uid = object_key(ds), uid(ds)
            fit = self.memory.rules(key, ds).check(node)
            mine = tuple(p for p in pods if (controller_ref(p) or {}).get("uid") == ds_uid)
            result.append(GatingDaemonSet(key=key, wants=fit.should_run, pods=mine, min_ready=min_ready_seconds(ds)))
        return result

    def plan(self, node_name: str) -> tuple[Obj, GatePlan] | None:
        """The node and its plan, from the caches and the memory, with no await; None if the node is gone."""
        node = self._nodes.get(node_name)
        if node is None:
            return None
        plan = plan_gate(node=node, gating=self._gating(node), memory=self.memory.get(node_name),
                         now=self._wall(), settings=self.settings)
        return node, plan

    async def sync(self, node_name: str, sync_id: str = "") -> Outcome:
        """Plan and carry out the gate of one node."""
        planned = self.plan(node_name)
        if planned is None:
            self.memory.forget_node(node_name)
            return Done()
        node, plan = planned
        ref = {"apiVersion": "v1", "kind": "Node", "metadata": dict(node.get("metadata") or {})}
        if not plan.writes:
            self._record(ref, plan)
            self.memory.keep(node_name, plan.memory)
            return Done(requeue_after=plan.requeue_after)
        body = removal_patch(node, self.settings.taint) if plan.remove else addition_patch(node, self.settings.taint)
        try:
            await self._client.patch(NODES, node_name, body, patch_type="json")
        except errors.NotFound:
            self.memory.forget_node(node_name)
            return Done()
        except errors.Invalid:
            # The taints (or, with none, the node) changed since the snapshot: plan again on a fresher cache.
            log.info("readiness_taint_precondition_failed", node=node_name, sync_id=sync_id,
                     change="remove" if plan.remove else "add")
            return Retry("the node's taints changed under the patch")
        except errors.Fenced as exc:
            return Retry(str(exc))
        except errors.ApiError as exc:
            self._signals.report(ref, PATCH_NODE, exc, name=node_name, namespace="")
            return Retry(f"{exc.reason or exc.status}: {exc.message}")
        self._record(ref, plan)
        self.memory.keep(node_name, plan.memory)
        if plan.remove:
            gated = plan.gated_seconds or 0.0
            if self._gated is not None:
                self._gated.observe(gated)
            log.info("readiness_taint_removed", node=node_name, gated_seconds=round(gated, 3), sync_id=sync_id)
        else:
            log.info("readiness_taint_added", node=node_name, not_ready=list(plan.holding), sync_id=sync_id)
        return Done(requeue_after=plan.requeue_after)

    def _record(self, ref: Obj, plan: GatePlan) -> None:
        """The plan's events, on the Node; a write's only once it went through."""
        for event in plan.events:
            self._recorder.record(ref, event.type, event.reason, event.message)
