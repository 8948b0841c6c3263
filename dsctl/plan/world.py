"""The cluster a dry run acts on: a ``syncplan.ClusterView`` over private copies of the
snapshot's objects, which the dry run changes as the executor's writes would.

The planners read it exactly as they read the controller's caches (pods by target node, by
owner, orphans by namespace). Writes are applied at once and are visible to the next plan,
as if every watch event had arrived: that is the state in which the controller's next sync
runs once its expectations are satisfied. Every node whose pods change is remembered
(``take_changed``) so the next plan re-plans only those, as the controller's does.

Pods created here get a UID and a name of their own (``plan-<n>``) and start Pending; the
dry run decides when they become Ready (``start``/``make_ready``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dsctl.daemonset.inplace import in_place_patch
from dsctl.daemonset.podplan import PodUpdate
from dsctl.daemonset.template import copy_json, owner_reference, target_node
from dsctl_api.objects import as_list, as_map, name, namespace, uid
from dsctl_api.pods import controller_ref
from dsctl_api.timefmt import format_rfc3339

__all__ = ["World"]

Obj = Mapping[str, Any]


def _owner(obj: Obj) -> str | None:
    ref = controller_ref(obj)
    return str(ref.get("uid") or "") if ref is not None else None


class World:
    """Nodes (read-only), pods and revisions, indexed as the controller's caches are."""

    def __init__(self, nodes: Iterable[Obj], pods: Iterable[Obj], revisions: Iterable[Obj]) -> None:
        self._nodes: dict[str, Obj] = {name(n): n for n in nodes if name(n)}
        self._pods: dict[str, dict[str, Any]] = {}
        self._by_node: dict[str, dict[str, dict[str, Any]]] = {}
        self._by_owner: dict[str | None, dict[str, dict[str, Any]]] = {}
        self._revisions: dict[str, dict[str, Any]] = {}
        self._changed: set[str] = set()
        self._serial = 0
        for pod in pods:
            self.add_pod(copy_json(dict(pod)))
        for revision in revisions:
            self._revisions[name(revision)] = copy_json(dict(revision))
        self._changed.clear()

    # -- ClusterView --------------------------------------------------------------------------

    def nodes(self) -> Iterable[Obj]:
        """Every node."""
        return self._nodes.values()

    def node(self, node_name: str) -> Obj | None:
        """The node ``node_name``, if the snapshot has it."""
        return self._nodes.get(node_name)

    def pods_on_node(self, node: str) -> Iterable[Obj]:
        """Pods whose target node is ``node``."""
        return list(self._by_node.get(node, {}).values())

    def owned_pods(self, owner: str) -> Iterable[Obj]:
        """Pods whose controller is ``owner``."""
        return list(self._by_owner.get(owner, {}).values())

    def orphan_pods(self, ns: str) -> Iterable[Obj]:
        """Pods in ``ns`` without a controller."""
        return [p for p in self._by_owner.get(None, {}).values() if namespace(p) == ns]

    def owned_revisions(self, owner: str) -> Iterable[Obj]:
        """Revisions whose controller is ``owner``."""
        return [r for r in self._revisions.values() if _owner(r) == owner]

    def orphan_revisions(self, ns: str) -> Iterable[Obj]:
        """Revisions in ``ns`` without a controller."""
        return [r for r in self._revisions.values() if _owner(r) is None and namespace(r) == ns]

    # -- reads of the dry run -----------------------------------------------------------------

    def pod(self, pod_uid: str) -> dict[str, Any] | None:
        """The pod with ``pod_uid``."""
        return self._pods.get(pod_uid)

    def revision(self, revision_name: str) -> dict[str, Any] | None:
        """The revision named ``revision_name``."""
        return self._revisions.get(revision_name)

    def take_changed(self) -> frozenset[str]:
        """The nodes whose pods changed since the last call."""
        changed = frozenset(self._changed)
        self._changed.clear()
        return changed

    # -- writes -------------------------------------------------------------------------------

    def _index(self, pod: dict[str, Any], *, add: bool) -> None:
        owner = _owner(pod)
        if add:
            self._by_owner.setdefault(owner, {})[uid(pod)] = pod
        else:
            self._by_owner.get(owner, {}).pop(uid(pod), None)
        node = target_node(pod)
        if not node:
            return
        self._changed.add(node)
        if add:
            self._by_node.setdefault(node, {})[uid(pod)] = pod
        else:
            self._by_node.get(node, {}).pop(uid(pod), None)

    def add_pod(self, pod: dict[str, Any]) -> None:
        """Store ``pod`` (owned by the world from now on)."""
        meta = pod.setdefault("metadata", {})
        if not meta.get("uid"):
            self._serial += 1
            meta["uid"] = f"plan-{self._serial}"
            meta.setdefault("name", f"{meta.get('generateName') or 'pod-'}plan-{self._serial}")
            meta["resourceVersion"] = "1"
        self._pods[uid(pod)] = pod
        self._index(pod, add=True)

    def create_pod(self, pod: dict[str, Any], *, now: float) -> dict[str, Any]:
        """A pod the controller creates: Pending, bound to its target node, as the scheduler would."""
        pod["metadata"]["creationTimestamp"] = format_rfc3339(now)
        node = target_node(pod)
        if node:
            pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Pending"}
        self.add_pod(pod)
        return pod

    def delete_pod(self, pod_uid: str) -> None:
        """Remove a pod; a deleted daemon pod is gone once its grace period ends."""
        pod = self._pods.pop(pod_uid, None)
        if pod is not None:
            self._index(pod, add=False)

    def _replace(self, pod_uid: str, change: Mapping[str, Any]) -> dict[str, Any] | None:
        pod = self._pods.get(pod_uid)
        if pod is None:
            return None
        self._index(pod, add=False)
        meta = pod.setdefault("metadata", {})
        meta_change = as_map(change.get("metadata"))
        for field in ("labels", "annotations"):
            if field in meta_change:
                meta[field] = {**as_map(meta.get(field)), **as_map(meta_change[field])}
        # A new version, as every write makes one (an in-place patch is preconditioned on it).
        self._serial += 1
        meta["resourceVersion"] = f"plan-{self._serial}"
        self._index(pod, add=True)
        return pod

    def relabel_pod(self, pod_uid: str, patch: Mapping[str, Any]) -> None:
        """Merge a label patch into a pod (history's relabelling)."""
        self._replace(pod_uid, patch)

    def update_in_place(self, update: PodUpdate) -> None:
        """Patch images and revision into a pod, as ``podwrites.patch_in_place`` does."""
        patch = in_place_patch(update)
        pod = self._replace(update.pod.uid, patch)
        if pod is None:
            return
        images = {c.container: c.new for c in update.images}
        for container in as_list(as_map(pod.get("spec")).get("containers")):
            if isinstance(container, dict) and container.get("name") in images:
                container["image"] = images[container["name"]]

    def set_owner(self, kind: str, obj_name: str, obj_ns: str, ds: Obj, *, adopt: bool, api_version: str,
                  ds_kind: str) -> None:
        """Adopt (``adopt``) or release one pod or revision, as the ownership patches do."""
        if kind == "revisions":
            target: dict[str, Any] | None = self._revisions.get(obj_name)
        else:
            target = next((p for p in self._pods.values() if name(p) == obj_name and namespace(p) == obj_ns), None)
        if target is None:
            return
        if kind == "pods":
            self._index(target, add=False)
        meta = target.setdefault("metadata", {})
        refs = [r for r in as_list(meta.get("ownerReferences")) if as_map(r).get("uid") != uid(ds)]
        if adopt:
            refs = [r for r in refs if not as_map(r).get("controller")]
            refs.append(owner_reference(ds, api_version=api_version, kind=ds_kind))
        meta["ownerReferences"] = refs
        if kind == "pods":
            self._index(target, add=True)

    def put_revision(self, revision: Mapping[str, Any]) -> None:
        """Create or replace a revision."""
        body = copy_json(dict(revision))
        meta = body.setdefault("metadata", {})
        meta.setdefault("uid", f"plan-revision-{name(body)}")
        self._revisions[name(body)] = body

    def delete_revision(self, revision_name: str) -> None:
        """Remove a revision."""
        self._revisions.pop(revision_name, None)
