"""The node readiness gate's event handlers: map events to the node names whose gate may change.

They only enqueue, into the gate's own queue (``dsctl.controller.nodegate``), and read the caches
synchronously; no API call, no planning. What wakes a node:

- the node itself gaining or losing the readiness taint, or (while it carries the taint) a change
  of its labels or taints, which may change which gating DaemonSets want it;
- a pod of a gating DaemonSet that appears, goes, or changes its readiness or target: its node,
  when that node carries the taint (or in continuous mode, where any node may be tainted again);
- a gating DaemonSet added, changed (not its status), deleted, or resynced: every node that
  carries the taint, from the cache's index of them (``BY_READINESS_TAINT``), never a scan of
  every node; in continuous mode also the nodes of its pods that are not Ready.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dsctl.daemonset.eligibility import eligibility_signature
from dsctl.daemonset.extensions import gates_nodes
from dsctl.daemonset.readinessgate import ReadinessTaint
from dsctl.daemonset.template import target_node
from dsctl.informer import Informer
from dsctl_api.objects import annotations_of, deletion_timestamp, name, namespace, resource_version, uid
from dsctl_api.pods import controller_ref, is_pod_ready, pod_ready_condition

__all__ = ["GateHandlers"]

Obj = Mapping[str, Any]


class GateHandlers:
    """Handlers of node, pod and DaemonSet events for the gate.

    ``get_daemonset`` and ``get_node`` read the caches by key; ``tainted_nodes`` lists the names the
    taint index holds; ``owned_pods`` the cached pods of a DaemonSet UID; ``enqueue`` adds a node
    name to the gate's queue. ``continuous`` is ``--readiness-taint-mode continuous``.
    """

    def __init__(
        self,
        *,
        ds_kind: str,
        taint: ReadinessTaint,
        continuous: bool,
        get_daemonset: Callable[[str], Obj | None],
        get_node: Callable[[str], Obj | None],
        tainted_nodes: Callable[[], Iterable[str]],
        owned_pods: Callable[[str], Iterable[Obj]],
        enqueue: Callable[[str], None],
    ) -> None:
        self._kind = ds_kind
        self._taint = taint
        self._continuous = continuous
        self._get_ds = get_daemonset
        self._get_node = get_node
        self._tainted_nodes = tainted_nodes
        self._owned_pods = owned_pods
        self._enqueue = enqueue

    def connect(self, *, daemonsets: Informer, pods: Informer, nodes: Informer) -> None:
        """Receive the events of the three informers the gate reads."""
        daemonsets.add_handler(self.on_ds_add, self.on_ds_update, self.on_ds_delete)
        pods.add_handler(self.on_pod_add, self.on_pod_update, self.on_pod_delete)
        nodes.add_handler(self.on_node_add, self.on_node_update, self.on_node_delete)

    # -- nodes --------------------------------------------------------------------------------

    def on_node_add(self, node: Obj) -> None:
        """A node that joins with the taint: its gate starts."""
        if self._taint.on(node):
            self._enqueue(name(node))

    def on_node_update(self, old: Obj, new: Obj) -> None:
        """The taint came or went, or the placement inputs of a tainted node changed."""
        before, after = self._taint.on(old), self._taint.on(new)
        if before != after or (after and eligibility_signature(old) != eligibility_signature(new)):
            self._enqueue(name(new))

    def on_node_delete(self, node: Obj) -> None:
        """A gated node left: its sync finds it gone and forgets it."""
        if self._taint.on(node):
            self._enqueue(name(node))

    # -- pods ---------------------------------------------------------------------------------

    def _concerns(self, node: str | None) -> bool:
        if not node:
            return False
        if self._continuous:
            return True
        cached = self._get_node(node)
        return cached is not None and self._taint.on(cached)

    def _gating(self, pod: Obj) -> bool:
        """Whether ``pod`` belongs to a gating DaemonSet in the cache."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != self._kind:
            return False
        ds = self._get_ds(f"{namespace(pod)}/{ref.get('name', '')}")
        return ds is not None and uid(ds) == ref.get("uid") and gates_nodes(ds)

    def on_pod_add(self, pod: Obj) -> None:
        """A gating pod appeared on a node."""
        node = target_node(pod)
        if self._concerns(node) and self._gating(pod):
            self._enqueue(str(node))

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        """Readiness, deletion or target changed: the old and the new node."""
        if resource_version(old) == resource_version(new):
            return
        moved = target_node(old) != target_node(new)
        if (not moved and pod_ready_condition(old) == pod_ready_condition(new)
                and deletion_timestamp(old) == deletion_timestamp(new)):
            return
        if not self._gating(new):
            return
        for node in {target_node(old), target_node(new)}:
            if self._concerns(node):
                self._enqueue(str(node))

    def on_pod_delete(self, pod: Obj) -> None:
        """A gating pod went: its node may be held again, or retainted."""
        self.on_pod_add(pod)

    # -- DaemonSets ---------------------------------------------------------------------------

    def _wake(self, ds: Obj) -> None:
        for node in self._tainted_nodes():
            self._enqueue(node)
        if self._continuous:
            for pod in self._owned_pods(uid(ds)):
                target = target_node(pod)
                if target and not is_pod_ready(pod):
                    self._enqueue(target)

    def on_ds_add(self, ds: Obj) -> None:
        """A new gating DaemonSet holds the tainted nodes it wants."""
        if gates_nodes(ds):
            self._wake(ds)

    def on_ds_update(self, old: Obj, new: Obj) -> None:
        """A gating DaemonSet (before or after) changed other than in its status, or was resynced."""
        if not (gates_nodes(old) or gates_nodes(new)):
            return
        resync = old is new or resource_version(old) == resource_version(new)
        if resync or _gate_inputs(old) != _gate_inputs(new):
            self._wake(new)

    def on_ds_delete(self, ds: Obj) -> None:
        """A deleted gating DaemonSet holds nothing any more."""
        if gates_nodes(ds):
            self._wake(ds)


def _gate_inputs(ds: Obj) -> tuple[Any, ...]:
    """What of a DaemonSet the gate reads: its spec (placement, minReadySeconds, the field), its
    annotations (the field in apps/v1 mode), its UID and whether it is being deleted."""
    meta = ds.get("metadata")
    deleting = isinstance(meta, Mapping) and bool(meta.get("deletionTimestamp"))
    return (uid(ds), deleting, ds.get("spec"), dict(annotations_of(ds)))
