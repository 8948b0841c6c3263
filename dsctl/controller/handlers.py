"""Informer event handlers: map every event to DaemonSet keys, and do nothing else.

No API calls and no heavy work happen here. The one judgement made is which DaemonSets a
node event concerns: a node update that leaves labels, taints, name and lifecycle unchanged (a
status heartbeat, the overwhelming majority at scale) is dropped after two tuple comparisons,
and an update that changes them enqueues only the DaemonSets whose eligibility actually flips.
A change of the node's lifecycle (``nodelifecycle.lifecycle_signature``: Ready flips, a
shutdown, a departing taint, a deletion) wakes the DaemonSets that should run a pod there or
have one there, since none of them may flip eligibility.

PodDisruptionBudget events wake the DaemonSet that owns the budget, or the one whose name it
takes; a change of the budget's status alone (the disruption controller's, on every pod
change) is dropped.

A node that joins or becomes eligible wakes its DaemonSets through the queue's priority lane,
ranked by their pods' priority (``priority_of``, see ``daemonset.podpriority``), so a
``system-node-critical`` agent's pod is created on it before any other; ties keep the order
in which the DaemonSets are listed.

Expectations are observed here, because the handlers are where the controller first sees the
effect of its own writes; so are the changes incremental planning needs (``ChangeLog``). The
handlers clear no per-DaemonSet state: a deleted or re-created DaemonSet is forgotten by its
next sync (``RuntimeState.observe``). A deleted node is forgotten here (``forget_node``), since
no sync is about a node.

Every DaemonSet update syncs it, as upstream's ``updateDaemonset`` enqueues every update: a
status written by someone else (a user with ``kubectl patch --subresource=status``, a second
controller) is corrected at once rather than at the next resync. The one update skipped is the
echo of the controller's own status write (``StatusMemory.take_echo``): it carries exactly the
status the sync just computed, so syncing it could only conclude that nothing is to be written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from dsctl.daemonset.access import min_ready_seconds
from dsctl.daemonset.eligibility import Fit, eligibility_signature
from dsctl.daemonset.nodelifecycle import lifecycle_signature
from dsctl.daemonset.podchange import same_for_planning
from dsctl.daemonset.template import target_node
from dsctl.informer import object_key
from dsctl_api.labels import SelectorError, selector_from_label_selector
from dsctl_api.objects import deletion_timestamp, labels, meta, name, namespace, resource_version, spec, uid
from dsctl_api.pods import controller_ref, is_pod_ready

from .state import RuntimeState

__all__ = ["Handlers"]

log = structlog.get_logger(__name__)

Obj = Mapping[str, Any]


_VOLATILE_META = ("resourceVersion", "managedFields")


def _only_status_changed(old: Obj, new: Obj) -> bool:
    """Whether two versions differ only in ``status`` and bookkeeping metadata."""
    if old.get("spec") != new.get("spec"):
        return False
    old_meta, new_meta = meta(old), meta(new)
    keys = (old_meta.keys() | new_meta.keys()) - set(_VOLATILE_META)
    return all(old_meta.get(k) == new_meta.get(k) for k in keys)


class Handlers:
    """Event handlers for the four informers.

    ``get_daemonset``, ``list_daemonsets`` and ``pods_on_node`` are read-only views of the
    caches: a DaemonSet by key, the DaemonSets in scope, and the pods bound to a node.
    ``enqueue`` and ``enqueue_after`` add a DaemonSet key to the work queue; with
    ``enqueue_prioritized`` and ``priority_of`` a node that joins wakes its DaemonSets in the
    priority lane and records the join in ``state.join_order``. ``state`` is where the
    handlers note what they observe (expectations, changes, the echo of a status write), and
    judge a node's eligibility through its plans' memory, with the tolerations the controller adds
    to every pod.
    """

    def __init__(
        self,
        *,
        ds_kind: str,
        get_daemonset: Callable[[str], Obj | None],
        list_daemonsets: Callable[[], list[Obj]],
        pods_on_node: Callable[[str], list[Obj]],
        state: RuntimeState,
        enqueue: Callable[[str], None],
        enqueue_after: Callable[[str, float], None],
        enqueue_prioritized: Callable[[str, int], None] | None = None,
        priority_of: Callable[[Obj], int] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kind = ds_kind
        self._get_ds = get_daemonset
        self._list_ds = list_daemonsets
        self._pods_on_node = pods_on_node
        self._state = state
        self._expectations = state.expectations
        self._changes = state.changes
        self._enqueue = enqueue
        self._enqueue_after = enqueue_after
        self._enqueue_prioritized = enqueue_prioritized
        self._priority_of = priority_of
        self._monotonic = monotonic

    # -- owners -------------------------------------------------------------------------------

    def _owner_key(self, obj: Obj) -> str | None:
        """The key of the DaemonSet that controls ``obj``, if it exists with that UID."""
        ref = controller_ref(obj)
        if ref is None or ref.get("kind") != self._kind:
            return None
        key = f"{namespace(obj)}/{ref.get('name', '')}"
        ds = self._get_ds(key)
        if ds is None or uid(ds) != ref.get("uid"):
            return None
        return key

    def _matching_daemonsets(self, obj: Obj) -> list[str]:
        """Keys of DaemonSets in the object's namespace whose selector matches its labels."""
        obj_namespace, obj_labels = namespace(obj), labels(obj)
        keys: list[str] = []
        for ds in self._list_ds():
            if namespace(ds) != obj_namespace:
                continue
            try:
                selector = selector_from_label_selector(spec(ds).get("selector"))
            except SelectorError:
                continue
            if not selector.empty and selector.matches(obj_labels):
                keys.append(object_key(ds))
        if len(keys) > 1:
            log.warning("multiple_daemonsets_select_object", object=object_key(obj), daemonsets=keys)
        return keys

    # -- DaemonSets ---------------------------------------------------------------------------

    def on_ds_add(self, ds: Obj) -> None:
        """A new DaemonSet: sync it."""
        self._enqueue(object_key(ds))

    def on_ds_update(self, old: Obj, new: Obj) -> None:
        """Every update syncs it (a resync too), including a status written by someone else;
        only the echo of the controller's own status write is skipped.

        A UID change (deleted and re-created under the same name) is planned from scratch; its
        sync forgets the old object's state.
        """
        key = object_key(new)
        if uid(old) != uid(new):
            self._changes.everything(key)
        elif old is new or resource_version(old) == resource_version(new):
            self._changes.everything(key)  # the periodic resync: a full recount
        elif self._is_own_status_echo(key, old, new):
            return
        self._enqueue(key)

    def _is_own_status_echo(self, key: str, old: Obj, new: Obj) -> bool:
        # The write was preconditioned on the cached resourceVersion, so its echo is the very
        # next version the informer sees; any other version means the echo was missed (a
        # relist folded it into a later one) and the entry is only forgotten.
        mine = self._state.status.take_echo(key)
        return mine is not None and resource_version(new) == mine and _only_status_changed(old, new)

    def on_ds_delete(self, ds: Obj) -> None:
        """Sync it: the sync finds it gone and forgets its state."""
        self._enqueue(object_key(ds))

    # -- pods ---------------------------------------------------------------------------------

    def on_pod_add(self, pod: Obj) -> None:
        """An owned pod observes one expected creation; an orphan wakes matching DaemonSets."""
        if deletion_timestamp(pod):
            self.on_pod_delete(pod)
            return
        key = self._owner_key(pod)
        if key is not None:
            self._expectations.creation_observed(key)
            self._changes.pod_changed(key, target_node(pod))
            self._enqueue(key)
            return
        if controller_ref(pod) is None:
            for match in self._matching_daemonsets(pod):
                self._changes.pod_changed(match, target_node(pod))
                self._enqueue(match)

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        """Owner changes, readiness flips and label changes all reach the right DaemonSets;
        updates that change nothing a planner reads are dropped (see ``daemonset.podchange``)."""
        if resource_version(old) == resource_version(new):
            return
        if deletion_timestamp(new) and not deletion_timestamp(old):
            self.on_pod_delete(new)
            return
        if same_for_planning(old, new):
            return  # a status detail no planner reads (Pending -> Running, restarts, IPs)
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        nodes = {target_node(old), target_node(new)}
        if old_ref is not None and old_ref != new_ref:
            old_key = self._owner_key(old)
            if old_key is not None:
                self._pod_changed(old_key, nodes)
                self._enqueue(old_key)
        key = self._owner_key(new)
        if key is not None:
            self._pod_changed(key, nodes)
            self._enqueue(key)
            self._requeue_for_min_ready(key, old, new)
            return
        if old_ref is None and new_ref is not None:
            # Adopted by someone else: a DaemonSet that saw it as an orphan must look again.
            for match in self._matching_daemonsets(old):
                self._pod_changed(match, nodes)
        if new_ref is None and (labels(old) != labels(new) or old_ref != new_ref):
            for match in self._matching_daemonsets(old):
                self._pod_changed(match, nodes)  # it may have counted the orphan; it looks again next sync
            for match in self._matching_daemonsets(new):
                self._pod_changed(match, nodes)
                self._enqueue(match)

    def _pod_changed(self, key: str, nodes: set[str | None]) -> None:
        for node in nodes:
            self._changes.pod_changed(key, node)

    def _requeue_for_min_ready(self, key: str, old: Obj, new: Obj) -> None:
        if is_pod_ready(old) or not is_pod_ready(new):
            return
        seconds = min_ready_seconds(self._get_ds(key))
        if seconds > 0:
            self._enqueue_after(key, seconds + 1.0)

    def on_pod_delete(self, pod: Obj) -> None:
        """An owned pod observes one expected deletion; an orphan leaves the DaemonSets that
        could have adopted it (their plans counted it)."""
        key = self._owner_key(pod)
        if key is None:
            if controller_ref(pod) is None:
                for match in self._matching_daemonsets(pod):
                    self._changes.pod_changed(match, target_node(pod))
                    self._enqueue(match)
            return
        self._expectations.deletion_observed(key)
        self._changes.pod_changed(key, target_node(pod))
        self._enqueue(key)

    # -- ControllerRevisions ------------------------------------------------------------------

    def on_revision_add(self, rev: Obj) -> None:
        """Owned revisions were made by us: nothing to do. Orphans may be adopted."""
        if deletion_timestamp(rev):
            self.on_revision_delete(rev)
            return
        if controller_ref(rev) is None:
            for match in self._matching_daemonsets(rev):
                self._enqueue(match)

    def on_revision_update(self, old: Obj, new: Obj) -> None:
        """Follow the pod rules: owner changes and orphan label changes."""
        if resource_version(old) == resource_version(new):
            return
        for obj in (old, new):
            key = self._owner_key(obj)
            if key is not None:
                self._enqueue(key)
        if controller_ref(new) is None:
            for match in self._matching_daemonsets(new):
                self._enqueue(match)

    def on_revision_delete(self, rev: Obj) -> None:
        """A vanished revision may have been the current one: resync its owner."""
        key = self._owner_key(rev)
        if key is not None:
            self._enqueue(key)

    # -- PodDisruptionBudgets -----------------------------------------------------------------

    def _budget_key(self, pdb: Obj) -> str | None:
        key = self._owner_key(pdb)
        if key is not None:
            return key
        same_name = object_key(pdb)
        return same_name if self._get_ds(same_name) is not None else None

    def on_budget_add(self, pdb: Obj) -> None:
        """A budget appeared: its DaemonSet (owner, or namesake) looks at it."""
        key = self._budget_key(pdb)
        if key is not None:
            self._enqueue(key)

    def on_budget_update(self, old: Obj, new: Obj) -> None:
        """Only a change beyond the status matters to the DaemonSet."""
        if resource_version(old) == resource_version(new) or _only_status_changed(old, new):
            return
        for obj in (old, new):
            key = self._budget_key(obj)
            if key is not None:
                self._enqueue(key)

    def on_budget_delete(self, pdb: Obj) -> None:
        """A budget went: its DaemonSet writes it again if it still wants one."""
        self.on_budget_add(pdb)

    # -- nodes --------------------------------------------------------------------------------

    def _fit(self, ds: Obj, node: Obj) -> Fit:
        """``ds``'s verdict for ``node``, through the plans' memory (``PlanMemory.fit``): the
        DaemonSet's rules, the controller's extra tolerations included, are built once per
        generation and the verdict kept by the node's version, so a node update (a readiness
        taint removed on every join) costs a rule check per DaemonSet, not a rebuild of its rules,
        and the sync that follows finds the verdict made."""
        return self._state.plans.fit(object_key(ds), ds)(node)

    def _wake_for_node(self, node: Obj, wanting: list[Obj]) -> None:
        """Enqueue the DaemonSets a node now wants, in the priority lane when priorities are known."""
        if self._enqueue_prioritized is None or self._priority_of is None:
            for ds in wanting:
                self._enqueue(object_key(ds))
            return
        ranked = [(object_key(ds), self._priority_of(ds)) for ds in wanting]
        if ranked:
            self._state.join_order.node_wanted(name(node), ranked, now=self._monotonic())
        for key, priority in ranked:
            self._enqueue_prioritized(key, priority)

    def on_node_add(self, node: Obj) -> None:
        """A node joined: wake every DaemonSet that should run a pod there, by pod priority."""
        self._changes.node_changed(name(node))
        self._wake_for_node(node, [ds for ds in self._list_ds() if self._fit(ds, node)[0]])

    def on_node_update(self, old: Obj, new: Obj) -> None:
        """Heartbeats are dropped cheaply; real changes wake only the DaemonSets that flip, or,
        for a lifecycle change, those with a stake in the node.

        A DaemonSet that the node becomes eligible for goes by pod priority, as on a join.
        """
        same_fit = eligibility_signature(old) == eligibility_signature(new)
        same_life = lifecycle_signature(old) == lifecycle_signature(new)
        if same_fit and same_life:
            return
        node_name = name(new)
        self._changes.node_changed(node_name)
        eligible: list[Obj] = []
        for ds in self._list_ds():
            after = self._fit(ds, new)
            if not same_fit:
                before = self._fit(ds, old)
                if before != after:
                    if after[0] and not before[0]:
                        eligible.append(ds)
                    else:
                        self._enqueue(object_key(ds))
                    continue
            if not same_life and after[0]:
                self._enqueue(object_key(ds))
        if not same_life:
            for pod in self._pods_on_node(node_name):
                key = self._owner_key(pod)
                if key is not None:
                    self._enqueue(key)
        self._wake_for_node(new, eligible)

    def on_node_delete(self, node: Obj) -> None:
        """A node left: its DaemonSets' desired counts change, and its pods must go."""
        node_name = name(node)
        self._changes.node_changed(node_name)
        keys = {k for pod in self._pods_on_node(node_name) if (k := self._owner_key(pod)) is not None}
        for ds in self._list_ds():
            if self._fit(ds, node)[0]:
                keys.add(object_key(ds))
        self._state.forget_node(node_name)  # after the verdicts above, which the plans' memory keeps
        for key in sorted(keys):
            self._enqueue(key)
