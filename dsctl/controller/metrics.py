"""The controller's own metrics: per-DaemonSet gauges, failed writes, and how syncs plan.

The per-DaemonSet gauges are labelled by namespace and name. The status gauges carry the
counters the controller computed on its last sync, which are exactly what it wrote (or found
already written) to ``.status``. ``dsctl_daemonset_rollout_stuck`` is 1 while the
``Progressing`` condition each sync computes says ``ProgressDeadlineExceeded`` (see
``dsctl.daemonset.progress``), so it says exactly what ``.status.conditions`` says: alert on it
as on DataDog's ``ers_rolling_update_stuck``. Names follow kube-state-metrics' style under the
``dsctl_daemonset_`` prefix; only names and counts are exported, never object contents.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from dsctl.daemonset.status import STATUS_FIELDS, Status

__all__ = ["DaemonSetGauges", "PlanMetrics", "WriteErrorMetrics"]

_GAUGES = {
    "desired_number_scheduled": "Nodes that should run the daemon pod.",
    "current_number_scheduled": "Nodes running at least one daemon pod that should.",
    "number_misscheduled": "Nodes running the daemon pod that should not.",
    "number_ready": "Nodes whose oldest daemon pod is Ready.",
    "number_available": "Nodes whose oldest daemon pod is available (Ready for minReadySeconds).",
    "number_unavailable": "Nodes that should run the daemon pod and have none available.",
    "updated_number_scheduled": "Nodes running a daemon pod of the current revision.",
}


class DaemonSetGauges:
    """The series labelled by DaemonSet: one gauge per status counter (``observe_status``),
    ``dsctl_daemonset_rollout_stuck`` (``observe_stuck``), and the node-lifecycle gauges
    ``dsctl_daemonset_skipped_nodes`` and ``dsctl_daemonset_departing_held_nodes``
    (``observe_lifecycle``), each set on every sync.

    Per-DaemonSet runtime state, owned by ``dsctl.controller.state.RuntimeState``: ``forget``
    removes a gone DaemonSet's series, so a deleted DaemonSet stops being exported.
    """

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self._gauges: dict[str, Gauge] = {}
        self._stuck: Gauge | None = None
        self._skipped: Gauge | None = None
        self._held: Gauge | None = None
        self._keys: set[str] = set()
        if registry is None:
            return
        for attr, doc in _GAUGES.items():
            assert attr in STATUS_FIELDS
            self._gauges[attr] = Gauge(f"dsctl_daemonset_status_{attr}", doc, ["namespace", "name"],
                                       registry=registry)
        self._stuck = Gauge(
            "dsctl_daemonset_rollout_stuck",
            "1 while the DaemonSet's rollout has made no progress for progressDeadlineSeconds, else 0.",
            ["namespace", "name"], registry=registry)
        self._skipped = Gauge(
            "dsctl_daemonset_skipped_nodes",
            "Nodes the rolling update leaves out as unhealthy (unhealthyNodePolicy Skip).",
            ["namespace", "name"], registry=registry)
        self._held = Gauge(
            "dsctl_daemonset_departing_held_nodes",
            "Departing nodes (shutdown, autoscaler or Karpenter taint, deletion) where a pod the DaemonSet "
            "would create or replace is held back.",
            ["namespace", "name"], registry=registry)

    def observe_status(self, key: str, status: Status) -> None:
        """Record the counters of DaemonSet ``namespace/name``."""
        if not self._gauges:
            return
        namespace, _, name = key.partition("/")
        self._keys.add(key)
        for attr, gauge in self._gauges.items():
            gauge.labels(namespace, name).set(getattr(status, attr))

    def observe_stuck(self, key: str, *, stuck: bool) -> None:
        """Record whether the rollout of DaemonSet ``namespace/name`` is past its deadline."""
        if self._stuck is not None:
            namespace, _, name = key.partition("/")
            self._keys.add(key)
            self._stuck.labels(namespace, name).set(1 if stuck else 0)

    def observe_lifecycle(self, key: str, *, skipped: int, held_departing: int) -> None:
        """Record the nodes skipped as unhealthy and the departing nodes holding a pod back."""
        if self._skipped is not None and self._held is not None:
            namespace, _, name = key.partition("/")
            self._keys.add(key)
            self._skipped.labels(namespace, name).set(skipped)
            self._held.labels(namespace, name).set(held_departing)

    def forget(self, key: str, uid: str) -> None:
        """Drop every series of ``key``."""
        if key not in self._keys:
            return
        self._keys.discard(key)
        namespace, _, name = key.partition("/")
        singles = (self._stuck, self._skipped, self._held)
        for gauge in (*self._gauges.values(), *(g for g in singles if g is not None)):
            try:
                gauge.remove(namespace, name)
            except KeyError:
                continue

    def holds(self, key: str, uid: str) -> bool:
        """Whether some series of ``key`` is exported."""
        return key in self._keys


class WriteErrorMetrics:
    """``dsctl_sync_write_errors_total{verb,resource,reason}``: every failed API write.

    ``reason`` is the API's reason (``Invalid``, ``Forbidden``, ``InternalError``...), so an
    alert can tell a refused object (which retrying will not fix) from a sick API server.
    """

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self._counter: Counter | None = None
        if registry is not None:
            self._counter = Counter("dsctl_sync_write_errors_total",
                                    "API writes that failed, by verb, resource and the API's reason.",
                                    ["verb", "resource", "reason"], registry=registry)

    def inc(self, *, verb: str, resource: str, reason: str) -> None:
        """Count one failed write."""
        if self._counter is not None:
            self._counter.labels(verb, resource, reason or "Unknown").inc()


class PlanMetrics:
    """How syncs plan: ``dsctl_sync_plans_total{mode}`` (``full`` or ``incremental``),
    ``dsctl_sync_planned_nodes_total{mode}``, and ``dsctl_sync_plan_mismatches_total``, the
    periodic recounts whose full plan disagreed with the incremental one (always 0 unless a
    change went unnoticed; the full plan is the one used)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self._plans: Counter | None = None
        self._nodes: Counter | None = None
        self._mismatches: Counter | None = None
        if registry is None:
            return
        self._plans = Counter("dsctl_sync_plans_total", "Sync plans made, by mode (full or incremental).",
                              ["mode"], registry=registry)
        self._nodes = Counter("dsctl_sync_planned_nodes_total", "Nodes planned by syncs, by mode.", ["mode"],
                              registry=registry)
        self._mismatches = Counter("dsctl_sync_plan_mismatches_total",
                                   "Periodic recounts whose full plan differed from the incremental one.",
                                   registry=registry)

    def planned(self, *, full: bool, nodes: int) -> None:
        """Count one plan that planned ``nodes`` nodes."""
        mode = "full" if full else "incremental"
        if self._plans is not None and self._nodes is not None:
            self._plans.labels(mode).inc()
            self._nodes.labels(mode).inc(nodes)

    def mismatch(self) -> None:
        """Count one recount that caught a difference."""
        if self._mismatches is not None:
            self._mismatches.inc()
