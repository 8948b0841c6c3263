"""The informer caches as the planner reads them (``syncplan.ClusterView``), and their indexes.

Read-only and synchronous by construction: a ``CacheView`` only has plain methods, so a plan
made from it sees one state of the caches. Pods are indexed by *target* node (``spec.nodeName``,
or the node affinity of a pod not yet bound), which is what a plan groups them by.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dsctl.daemonset.template import target_node
from dsctl.informer import BY_OWNER_UID, ReadOnlyStore, index_reads
from dsctl_api.objects import namespace
from dsctl_api.pods import controller_ref

__all__ = ["BY_TARGET_NODE", "ORPHANS_BY_NAMESPACE", "CacheView", "by_target_node", "orphans_by_namespace"]

BY_TARGET_NODE = "byTargetNode"
ORPHANS_BY_NAMESPACE = "orphansByNamespace"

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
