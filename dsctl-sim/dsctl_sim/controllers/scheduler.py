"""The simulated kube-scheduler: binds pending pods to nodes that admit them.

Filtering follows kube-scheduler's required rules and nothing else: ``nodeSelector`` and
required node affinity, untolerated ``NoSchedule``/``NoExecute`` taints, and
``spec.unschedulable`` unless the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``.
Resources, ports and preferred terms are ignored; among fitting nodes the choice rotates.

Scale: kube-scheduler's NodeAffinity PreFilter turns required terms that name nodes through
``matchFields metadata.name In [...]`` into the set of node names the pod can use, and only
those nodes are filtered; every other node counts as "didn't satisfy plugin(s)
[NodeAffinity]". The simulator does the same (``prefilter_node_names``), so a DaemonSet pod
costs a dict lookup for its one node whether the cluster has ten nodes or 100,000 (ADR
0111). Other pods are filtered against an in-memory node cache.

A pod that fits nowhere gets ``PodScheduled=False`` (reason ``Unschedulable``) and waits: pods
pinned to nodes wait on exactly those nodes' changes, the rest retry (at most once a second)
when any node changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import structlog

from dsctl_api.nodeaffinity import required_node_affinity_matches, required_terms
from dsctl_api.taints import find_untolerated, tolerates
from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.events import EventRecorder
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.util import PodKey, meta, pod_key, split_pod_key
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["DEFAULT_SCHEDULER", "NOT_IN_PREFILTER", "TERMS_CONFLICT", "Scheduler", "prefilter_node_names"]

log = structlog.get_logger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
_UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
_RETRY_ANY_SECONDS = 1.0
_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"

NOT_IN_PREFILTER = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
"""kube-scheduler's status for every node the NodeAffinity PreFilter result leaves out."""
TERMS_CONFLICT = "pod affinity terms conflict"
"""kube-scheduler's PreFilter rejection when every term names nodes and together they name none."""


def prefilter_node_names(spec: Mapping[str, Any]) -> frozenset[str] | None:
    """The node names the pod's required affinity limits it to; None when any node may do.

    As kube-scheduler's NodeAffinity PreFilter: within a term the ``metadata.name In``
    requirements intersect, the terms' sets are united, and one term without such a
    requirement lets every node through. An empty set means the terms conflict.
    """
    terms = required_terms(spec)
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        if not isinstance(term, Mapping):
            return None
        pinned: set[str] | None = None
        for field in term.get("matchFields") or []:
            if (
                isinstance(field, Mapping)
                and field.get("key") == "metadata.name"
                and field.get("operator") == "In"
            ):
                values = {str(v) for v in field.get("values") or []}
                pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None
        names |= pinned
    return frozenset(names)


def _reject_reason(spec: Mapping[str, Any], node: Mapping[str, Any]) -> str | None:
    """Why ``node`` cannot take the pod (kube-scheduler's wording), or None when it fits."""
    node_spec = node.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    if node_spec.get("unschedulable") and not any(
        isinstance(t, Mapping) and tolerates(t, _UNSCHEDULABLE_TAINT) for t in tolerations
    ):
        return "node(s) were unschedulable"
    if not required_node_affinity_matches(spec, node):
        return _AFFINITY_MISMATCH
    taint = find_untolerated(node_spec.get("taints"), tolerations, _BLOCKING_EFFECTS)
    if taint is not None:
        return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"
    return None


class Scheduler(WorkLoop[PodKey]):
    """Binds pods whose ``schedulerName`` is ``default-scheduler`` (or unset).

    Keys are pod keys; ``sync`` re-reads the pod, filters candidate nodes and binds or marks
    the pod unschedulable. Node objects are cached from the feed for full scans; pinned pods
    read their nodes straight from storage so a node created a moment ago is already seen.
    """

    name = "scheduler"

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock,
        recorder: EventRecorder | None = None,
        scheduler_name: str = DEFAULT_SCHEDULER,
    ) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._recorder = recorder
        self._scheduler_name = scheduler_name
        self._nodes: dict[str, dict[str, Any]] = {}
        self._waiting_on: dict[str, set[PodKey]] = {}
        self._waiting_any: set[PodKey] = set()
        self._written: dict[PodKey, str] = {}
        self._retry_armed = False
        self._turn = 0
        self.bound = 0
        self.filtered = 0

    def register(self, feeds: Feeds) -> None:
        """Listen to pod and node changes."""
        feeds.on("pods", self._on_pod)
        feeds.on("nodes", self._on_node)

    def stats(self) -> dict[str, int]:
        """Work counters plus what this loop has done."""
        return {**super().stats(), "bound": self.bound, "nodes_filtered": self.filtered}

    # -- handlers ---------------------------------------------------------------------------

    def _wants(self, pod: Mapping[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return (
            not spec.get("nodeName")
            and (spec.get("schedulerName") or DEFAULT_SCHEDULER) == self._scheduler_name
            and not meta(pod).get("deletionTimestamp")
        )

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        key = pod_key(pod)
        if event_type == "DELETED" or not self._wants(pod):
            self._written.pop(key, None)
            return
        if self._written.get(key) == meta(pod).get("resourceVersion"):
            return  # the echo of our own PodScheduled=False write; it waits for node changes
        self.enqueue(key)

    def _on_node(self, event_type: str, node: dict[str, Any]) -> None:
        name = str(meta(node).get("name") or "")
        if event_type == "DELETED":
            self._nodes.pop(name, None)
        else:
            self._nodes[name] = node
        for key in self._waiting_on.pop(name, ()):
            self.enqueue(key)
        if self._waiting_any and not self._retry_armed:
            self._retry_armed = True
            self.call_at(self.clock.now() + _RETRY_ANY_SECONDS, self._retry_any)

    def _retry_any(self) -> None:
        self._retry_armed = False
        waiting, self._waiting_any = self._waiting_any, set()
        for key in waiting:
            self.enqueue(key)

    # -- the sync ---------------------------------------------------------------------------

    def sync(self, key: PodKey) -> None:
        """Bind one pending pod, or record why it cannot be bound."""
        namespace, name = split_pod_key(key)
        pod = self._storage.get("pods", namespace, name)
        self._waiting_any.discard(key)
        if pod is None or not self._wants(pod):
            return
        spec = pod.get("spec") or {}
        names = prefilter_node_names(spec)
        reasons: Counter[str] = Counter()
        total = self._storage.count("nodes")
        if names is not None and not names:
            self._mark_unschedulable(key, pod, total, reasons, prefilter=TERMS_CONFLICT)
            return  # no node can ever fit: only a change to the pod itself retries it
        candidates: list[Mapping[str, Any]]
        if names is not None:
            found = (self._storage.get("nodes", None, n) for n in sorted(names))
            candidates = [n for n in found if n is not None]
        else:
            candidates = list(self._nodes.values())
        self.filtered += len(candidates)
        fits: list[Mapping[str, Any]] = []
        for node in candidates:
            reason = _reject_reason(spec, node)
            if reason is None:
                fits.append(node)
            else:
                reasons[reason] += 1
        if fits:
            self._turn += 1
            chosen = fits[self._turn % len(fits)]
            self._bind(key, pod, str(meta(chosen).get("name")))
            return
        if names is None:
            total = len(candidates)  # the scheduler's own snapshot of the nodes
        elif total > len(candidates):
            reasons[NOT_IN_PREFILTER] += total - len(candidates)
        self._mark_unschedulable(key, pod, total, reasons)
        if names is not None:
            for node_name in names:
                self._waiting_on.setdefault(node_name, set()).add(key)
        else:
            self._waiting_any.add(key)

    def _bind(self, key: PodKey, pod: dict[str, Any], node_name: str) -> None:
        namespace, name = split_pod_key(key)
        try:
            self._storage.bind(namespace, name, node_name, uid=str(meta(pod).get("uid") or ""))
        except (Conflict, NotFound) as err:
            log.debug("sim_bind_lost", pod=key, node=node_name, error=str(err))
            self.enqueue(key)
            return
        except StorageError as err:
            log.warning("sim_bind_rejected", pod=key, node=node_name, error=str(err))
            return
        self.bound += 1
        if self._recorder is not None:
            self._recorder.record(
                pod,
                api_version="v1",
                kind="Pod",
                event_type="Normal",
                reason="Scheduled",
                message=f"Successfully assigned {namespace}/{name} to {node_name}",
            )

    def _mark_unschedulable(
        self, key: PodKey, pod: dict[str, Any], total: int, reasons: Counter[str], *, prefilter: str = ""
    ) -> None:
        # kube-scheduler's FitError text: a PreFilter rejection speaks for every node, otherwise
        # each reason with its node count, the "<count> <reason>" strings sorted as strings.
        detail = prefilter or ", ".join(sorted(f"{count} {why}" for why, count in reasons.items()))
        message = f"0/{total} nodes are available: {detail}." if detail else (
            f"0/{total} nodes are available."
        )
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if (
                isinstance(condition, Mapping)
                and condition.get("type") == "PodScheduled"
                and condition.get("status") == "False"
                and condition.get("message") == message
            ):
                return  # already says exactly this; no write, no event
        self._set_scheduled_condition(
            key, "False", self.clock.now(), reason="Unschedulable", message=message
        )
        if self._recorder is not None:
            self._recorder.record(
                pod,
                api_version="v1",
                kind="Pod",
                event_type="Warning",
                reason="FailedScheduling",
                message=message,
            )

    def _set_scheduled_condition(
        self, key: PodKey, status: str, now: float, *, reason: str | None, message: str | None
    ) -> None:
        namespace, name = split_pod_key(key)
        pod = self._storage.get("pods", namespace, name)
        if pod is None:
            return
        old_status = pod.get("status") or {}
        conditions = []
        since = format_rfc3339(now)
        for old in old_status.get("conditions") or []:
            if isinstance(old, Mapping) and old.get("type") == "PodScheduled":
                if old.get("status") == status and old.get("lastTransitionTime"):
                    since = old["lastTransitionTime"]  # a new message is not a transition
            else:
                conditions.append(old)
        condition: dict[str, Any] = {
            "type": "PodScheduled",
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": since,
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        conditions.append(condition)
        new_status = dict(old_status)
        new_status["conditions"] = conditions
        new_status.setdefault("phase", "Pending")
        new = dict(pod)
        new["metadata"] = dict(meta(pod))
        new["status"] = new_status
        try:
            stored = self._storage.update("pods", new, subresource="status")
        except (Conflict, NotFound):
            self.enqueue(key)
        except StorageError as err:
            log.warning("sim_pod_condition_rejected", pod=key, error=str(err))
        else:
            self._written[key] = stored["metadata"]["resourceVersion"]
