"""The informer caches: the six informers (``Caches``), their indexes, and the view the
planner reads them through (``CacheView``, a ``syncplan.ClusterView``).

``Caches`` builds each informer with the indexes and projections its readers need: pods by
target node, by owner UID and as orphans by namespace; revisions by owner and as orphans;
nodes and pods projected to the fields the controller reads. A slow resync re-delivers every
DaemonSet: the safety net of a level-triggered controller for anything a missed event or a bug
would otherwise leave unreconciled. PriorityClasses are only read to rank the syncs a new node
triggers (``pod_priority``, see ``dsctl.daemonset.podpriority``). PodDisruptionBudgets are
read by a sync only for the budget of its own DaemonSet's name (``dsctl.daemonset.budget``).
With the node readiness gate, two more indexes let a DaemonSet event find the nodes it
concerns without scanning every node: the nodes carrying the readiness taint
(``BY_READINESS_TAINT``) and the gating DaemonSets (``BY_READINESS_GATE``).

The view is read-only and synchronous by construction: a ``CacheView`` only has plain methods, so a plan
made from it sees one state of the caches. Pods are indexed by *target* node (``spec.nodeName``,
or the node affinity of a pod not yet bound), which is what a plan groups them by.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from dsctl.daemonset.access import pod_spec
from dsctl.daemonset.extensions import gates_nodes
from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
from dsctl.daemonset.podpriority import global_default_priority, pod_priority
from dsctl.daemonset.readinessgate import ReadinessTaint
from dsctl.daemonset.template import target_node
from dsctl.informer import BY_OWNER_UID, IndexFunc, Informer, ReadOnlyStore, by_owner_uid, index_reads
from dsctl.informer.projections import make_pod_projection, project_node
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import (
    CONTROLLER_REVISIONS,
    NODES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    PRIORITY_CLASSES,
    Resource,
)
from dsctl.tuning import DAEMONSET_RESYNC_SECONDS
from dsctl_api.objects import namespace
from dsctl_api.pods import controller_ref

__all__ = [
    "BY_READINESS_GATE",
    "BY_READINESS_TAINT",
    "BY_TARGET_NODE",
    "INDEXED",
    "ORPHANS_BY_NAMESPACE",
    "CacheView",
    "Caches",
    "EventHandlers",
    "by_readiness_gate",
    "by_readiness_taint",
    "by_target_node",
    "orphans_by_namespace",
]

BY_TARGET_NODE = "byTargetNode"
ORPHANS_BY_NAMESPACE = "orphansByNamespace"
BY_READINESS_TAINT = "byReadinessTaint"
BY_READINESS_GATE = "byReadinessGate"
INDEXED = "yes"
"""The one value the two readiness-gate indexes file an object under."""

Obj = Mapping[str, Any]


@index_reads("spec.nodeName", "spec.affinity")
def by_target_node(obj: Obj) -> list[str]:
    """Index function: the node a pod is for (``template.target_node``), if it names one."""
    node = target_node(obj)
    return [node] if node else []


@index_reads("metadata.ownerReferences", "metadata.namespace")
def orphans_by_namespace(obj: Obj) -> list[str]:
    """Index function: the namespace of an object without a controller, for adoption."""
    if controller_ref(obj) is not None:
        return []
    return [namespace(obj)]


@index_reads("spec.nodeReadinessGate", "metadata.annotations")
def by_readiness_gate(obj: Obj) -> list[str]:
    """Index function: a DaemonSet that gates its nodes (an unreadable value gates too)."""
    return [INDEXED] if gates_nodes(obj) else []


def by_readiness_taint(taint: ReadinessTaint) -> IndexFunc:
    """Index function: a node that carries ``taint``."""

    @index_reads("spec.taints")
    def index(obj: Obj) -> list[str]:
        return [INDEXED] if taint.on(obj) else []

    return index


class CacheView:
    """``ClusterView`` over the node, pod and revision caches."""

    def __init__(self, *, nodes: ReadOnlyStore, pods: ReadOnlyStore, revisions: ReadOnlyStore) -> None:
        self._nodes = nodes
        self._pods = pods
        self._revisions = revisions

    def nodes(self) -> Iterable[Obj]:
        """Every cached node."""
        return self._nodes.list()

    def node(self, name: str) -> Obj | None:
        """The cached node ``name`` (nodes are cluster-scoped: the key is the name)."""
        return self._nodes.get(name)

    def pods_on_node(self, node: str) -> Iterable[Obj]:
        """Cached pods for ``node``, any owner."""
        return self._pods.by_index(BY_TARGET_NODE, node)

    def owned_pods(self, uid: str) -> Iterable[Obj]:
        """Cached pods whose controller is ``uid``."""
        return self._pods.by_index(BY_OWNER_UID, uid)

    def orphan_pods(self, namespace: str) -> Iterable[Obj]:
        """Cached pods in ``namespace`` without a controller."""
        return self._pods.by_index(ORPHANS_BY_NAMESPACE, namespace)

    def owned_revisions(self, uid: str) -> Iterable[Obj]:
        """Cached revisions whose controller is ``uid``."""
        return self._revisions.by_index(BY_OWNER_UID, uid)

    def orphan_revisions(self, namespace: str) -> Iterable[Obj]:
        """Cached revisions in ``namespace`` without a controller."""
        return self._revisions.by_index(ORPHANS_BY_NAMESPACE, namespace)


class EventHandlers(Protocol):
    """What ``Caches.connect`` hands events to (``handlers.Handlers``)."""

    def on_ds_add(self, ds: Obj) -> None: ...
    def on_ds_update(self, old: Obj, new: Obj) -> None: ...
    def on_ds_delete(self, ds: Obj) -> None: ...
    def on_pod_add(self, pod: Obj) -> None: ...
    def on_pod_update(self, old: Obj, new: Obj) -> None: ...
    def on_pod_delete(self, pod: Obj) -> None: ...
    def on_node_add(self, node: Obj) -> None: ...
    def on_node_update(self, old: Obj, new: Obj) -> None: ...
    def on_node_delete(self, node: Obj) -> None: ...
    def on_revision_add(self, rev: Obj) -> None: ...
    def on_revision_update(self, old: Obj, new: Obj) -> None: ...
    def on_revision_delete(self, rev: Obj) -> None: ...
    def on_budget_add(self, pdb: Obj) -> None: ...
    def on_budget_update(self, old: Obj, new: Obj) -> None: ...
    def on_budget_delete(self, pdb: Obj) -> None: ...


class Caches:
    """The controller's six informers; ``all`` in start order."""

    def __init__(self, client: KubeClient, resource: Resource, *, namespace: str | None, page_size: int,
                 registry: CollectorRegistry | None, readiness_taint: ReadinessTaint | None = None) -> None:
        gated = readiness_taint is not None
        self.daemonsets = Informer(client, resource, namespace=namespace, registry=registry,
                                   resync_period=DAEMONSET_RESYNC_SECONDS, page_size=page_size,
                                   indexers={BY_READINESS_GATE: by_readiness_gate} if gated else None)
        self.pods = Informer(
            client, PODS, namespace=namespace, registry=registry, page_size=page_size,
            indexers={BY_TARGET_NODE: by_target_node, BY_OWNER_UID: by_owner_uid,
                      ORPHANS_BY_NAMESPACE: orphans_by_namespace},
            transform=make_pod_projection(keep_annotations=(IN_PLACE_ANNOTATION,)),
        )
        self.nodes = Informer(client, NODES, registry=registry, transform=project_node, page_size=page_size,
                              indexers={BY_READINESS_TAINT: by_readiness_taint(readiness_taint)}
                              if readiness_taint is not None else None)
        self.revisions = Informer(
            client, CONTROLLER_REVISIONS, namespace=namespace, registry=registry, page_size=page_size,
            indexers={BY_OWNER_UID: by_owner_uid, ORPHANS_BY_NAMESPACE: orphans_by_namespace},
        )
        self.priority_classes = Informer(client, PRIORITY_CLASSES, registry=registry)
        self.budgets = Informer(client, POD_DISRUPTION_BUDGETS, namespace=namespace, registry=registry,
                                page_size=page_size)
        self.all = (self.daemonsets, self.pods, self.nodes, self.revisions, self.priority_classes, self.budgets)

    def on_listed(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(resource label)`` after every complete list of any cache from now on."""
        for informer in self.all:
            informer.on_listed(functools.partial(listener, informer.resource.label))

    def view(self) -> CacheView:
        """The planner's read-only view of the node, pod and revision caches."""
        return CacheView(nodes=self.nodes.store, pods=self.pods.store, revisions=self.revisions.store)

    def connect(self, handlers: EventHandlers) -> None:
        """Deliver every DaemonSet, pod, node, revision and budget event to ``handlers``."""
        h = handlers
        self.daemonsets.add_handler(h.on_ds_add, h.on_ds_update, h.on_ds_delete)
        self.pods.add_handler(h.on_pod_add, h.on_pod_update, h.on_pod_delete)
        self.nodes.add_handler(h.on_node_add, h.on_node_update, h.on_node_delete)
        self.revisions.add_handler(h.on_revision_add, h.on_revision_update, h.on_revision_delete)
        self.budgets.add_handler(h.on_budget_add, h.on_budget_update, h.on_budget_delete)

    def pods_on_node(self, node: str) -> list[Obj]:
        """The cached pods for ``node``, any owner."""
        return list(self.pods.store.by_index(BY_TARGET_NODE, node))

    def pod_priority(self, ds: Obj) -> int:
        """The priority of ``ds``'s pods, resolved through the PriorityClass cache."""
        spec = pod_spec(ds)
        default = 0
        if not spec.get("priorityClassName") and spec.get("priority") is None:
            default = global_default_priority(self.priority_classes.store.list())
        return pod_priority(ds, priority_class=self.priority_classes.store.get, global_default=default)

    def run(self) -> None:
        """Start every reflector."""
        for informer in self.all:
            informer.run()

    async def wait_for_sync(self) -> None:
        """Return once every informer has delivered its first full list."""
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.all))

    async def stop(self) -> None:
        """Stop every reflector."""
        await asyncio.gather(*(informer.stop() for informer in self.all), return_exceptions=True)
