"""The simulated garbage collector: cascading deletion through ``ownerReferences``.

It follows kube-controller-manager's garbage collector for every resource type the sim
serves, CRD kinds included:

- **Background** (the default): once an owner is gone, each dependent whose owners are all
  gone is deleted; a dependent that still has a live owner only loses the dangling references.
- **Foreground**: an owner with ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer
  has its dependents deleted first; the finalizer is removed (and storage then removes the
  owner) once no dependent with ``blockOwnerDeletion: true`` still exists.
- **Orphan**: an owner with ``deletionTimestamp`` and the ``orphan`` finalizer has the
  references to it stripped from its dependents, then the finalizer removed.

Storage adds those finalizers when a delete asks for the Foreground or Orphan policy.

Efficiency: storage keeps an owner-uid → dependents index, so an owner's deletion touches only
its own dependents; and owners already verified alive are remembered here, so the steady
stream of pod status updates costs a set lookup each, not a storage read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.feeds import Feeds
from dsctl_sim.controllers.util import meta, spec_update
from dsctl_sim.controllers.worker import WorkLoop
from dsctl_sim.errors import Conflict, NotFound, StorageError
from dsctl_sim.registry import ResourceType
from dsctl_sim.storage import Storage

__all__ = ["FOREGROUND", "ORPHAN", "GarbageCollector"]

log = structlog.get_logger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

Location = tuple[str, str, str]
"""(resource key, namespace or "", name)."""
Item = tuple[str, str, str, str]
"""(action "dependent"|"owner", resource key, namespace or "", name)."""


def _refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        r for r in meta(obj).get("ownerReferences") or []
        if isinstance(r, Mapping) and r.get("uid")
    ]


def _location(key: str, obj: Mapping[str, Any]) -> Location:
    m = meta(obj)
    return (key, str(m.get("namespace") or ""), str(m.get("name") or ""))


class GarbageCollector(WorkLoop[Item]):
    """Deletes dependents of vanished owners and runs the foreground and orphan protocols.

    Work items name an object and what to check about it: ``"dependent"`` re-judges the
    object's owner references; ``"owner"`` advances the foreground/orphan protocol of an
    object being deleted with one of those finalizers.

    Which objects reference an owner comes from storage's own owner index
    (``Storage.dependents``), which is exact at every moment. Local invariants: ``_alive``
    holds only uids verified to exist without a deletionTimestamp;
    ``_blockers[owner_uid]`` is, for an owner in foreground deletion, the dependents with
    ``blockOwnerDeletion`` that still exist.
    """

    name = "garbage-collector"

    def __init__(self, storage: Storage, *, clock: Clock) -> None:
        super().__init__(clock=clock)
        self._storage = storage
        self._alive: set[str] = set()
        self._finalizing: dict[str, Location] = {}
        self._blockers: dict[str, set[str]] = {}
        self._kinds: dict[tuple[str, str], ResourceType] = {}
        self._kinds_generation = -1
        self.deleted = 0
        self.orphaned = 0

    def register(self, feeds: Feeds) -> None:
        """Listen to every resource type."""
        feeds.on_every_type(self._on_change)

    def stats(self) -> dict[str, int]:
        """Work counters plus what this loop has done."""
        return {**super().stats(), "deleted": self.deleted, "orphaned": self.orphaned}

    # -- handler ----------------------------------------------------------------------------

    def _on_change(self, key: str, event_type: str, obj: dict[str, Any]) -> None:
        m = meta(obj)
        uid = str(m.get("uid") or "")
        refs = _refs(obj)
        if event_type == "DELETED":
            self._alive.discard(uid)
            self._finalizing.pop(uid, None)
            self._blockers.pop(uid, None)
            for ref in refs:
                owner_uid = str(ref["uid"])
                blockers = self._blockers.get(owner_uid)
                if blockers is not None:
                    blockers.discard(uid)
                    if not blockers:
                        self.enqueue(("owner", *self._finalizing[owner_uid]))
            for dep_where in self._storage.dependents(uid):
                self.enqueue(("dependent", *dep_where))
            return
        where = _location(key, obj)
        if m.get("deletionTimestamp"):
            self._alive.discard(uid)
            finalizers = m.get("finalizers") or []
            if (FOREGROUND in finalizers or ORPHAN in finalizers) and uid not in self._blockers:
                self.enqueue(("owner", *where))
            return
        for ref in refs:
            owner = self._finalizing.get(str(ref["uid"]))
            if owner is not None:
                # A live dependent of an owner in foreground deletion: it must go too.
                self.enqueue(("owner", *owner))
        if any(str(r["uid"]) not in self._alive for r in refs):
            self.enqueue(("dependent", *where))

    # -- the sync ---------------------------------------------------------------------------

    def sync(self, item: Item) -> None:
        """Dispatch one work item."""
        action, key, namespace, name = item
        if action == "owner":
            self._sync_owner(key, namespace, name)
        else:
            self._sync_dependent(key, namespace, name)

    def _get(self, where: Location) -> dict[str, Any] | None:
        key, namespace, name = where
        return self._storage.get(key, namespace or None, name)

    def _kind(self, api_version: str, kind: str) -> ResourceType | None:
        registry = self._storage.registry
        if registry.generation != self._kinds_generation:
            self._kinds = {(rt.group, rt.kind): rt for rt in registry}
            self._kinds_generation = registry.generation
        group = api_version.rpartition("/")[0]
        return self._kinds.get((group, kind))

    def _owner_state(self, ref: Mapping[str, Any], namespace: str) -> str:
        """``solid``, ``dangling``, ``waiting`` (foreground deletion) or ``unknown`` (kind)."""
        rt = self._kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
        if rt is None or (rt.namespaced and not namespace):
            return "unknown"
        owner = self._storage.get(rt.key, namespace if rt.namespaced else None, str(ref.get("name")))
        uid = str(ref["uid"])
        if owner is None or meta(owner).get("uid") != uid:
            return "dangling"
        owner_meta = meta(owner)
        if owner_meta.get("deletionTimestamp"):
            return "waiting" if FOREGROUND in (owner_meta.get("finalizers") or []) else "solid"
        self._alive.add(uid)
        return "solid"

    def _sync_dependent(self, key: str, namespace: str, name: str) -> None:
        obj = self._get((key, namespace, name))
        if obj is None or meta(obj).get("deletionTimestamp"):
            return
        refs = _refs(obj)
        if not refs:
            return
        states = {str(r["uid"]): self._owner_state(r, namespace) for r in refs}
        keep = {"solid", "unknown"}
        if any(state in keep for state in states.values()):
            drop = {uid for uid, state in states.items() if state not in keep}
            if drop:
                self._strip_refs((key, namespace, name), str(meta(obj).get("uid")), drop)
            return
        uid = str(meta(obj).get("uid") or "")
        waiting = any(state == "waiting" for state in states.values())
        # Foreground only matters when the dependent has dependents of its own; storage adds
        # the finalizer only in that case.
        self._delete((key, namespace, name), uid, "Foreground" if waiting else "Background")

    def _sync_owner(self, key: str, namespace: str, name: str) -> None:
        where = (key, namespace, name)
        obj = self._get(where)
        if obj is None:
            return
        m = meta(obj)
        uid = str(m.get("uid") or "")
        finalizers = list(m.get("finalizers") or [])
        if not m.get("deletionTimestamp"):
            return
        if ORPHAN in finalizers:
            deps = self._storage.dependents(uid)
            if all([self._strip_refs(w, None, {uid}) for w in deps]):
                self.orphaned += len(deps)
                self._remove_finalizer(where, uid, ORPHAN)
            else:
                self.enqueue_at(("owner", *where), self.clock.now() + 0.1)
            return
        if FOREGROUND not in finalizers:
            return
        self._finalizing[uid] = where
        blockers: set[str] = set()
        for dep_where in self._storage.dependents(uid):
            dep = self._get(dep_where)
            ref = next((r for r in _refs(dep) if r["uid"] == uid), None) if dep else None
            if dep is None or ref is None:
                continue
            dep_uid = str(meta(dep).get("uid") or "")
            if ref.get("blockOwnerDeletion"):
                blockers.add(dep_uid)
            deleting = bool(meta(dep).get("deletionTimestamp"))
            if not deleting and self._delete(dep_where, dep_uid, "Foreground") == "gone":
                blockers.discard(dep_uid)
        if blockers:
            self._blockers[uid] = blockers
            return
        self._blockers.pop(uid, None)
        self._finalizing.pop(uid, None)
        self._remove_finalizer(where, uid, FOREGROUND)

    # -- writes -----------------------------------------------------------------------------

    def _delete(self, where: Location, uid: str, policy: str) -> str:
        """Delete one object; ``gone`` if it vanished at once, ``deleting`` if it lingers."""
        key, namespace, name = where
        try:
            self._storage.delete(key, namespace or None, name, uid=uid, propagation_policy=policy)
        except (NotFound, Conflict):
            return "gone"
        except StorageError as err:
            log.warning("sim_gc_delete_failed", resource=key, name=name, error=str(err))
            return "deleting"
        self.deleted += 1
        log.debug("sim_gc_deleted", resource=key, namespace=namespace, name=name, policy=policy)
        return "deleting" if self._get(where) is not None else "gone"

    def _strip_refs(self, where: Location, uid: str | None, owners: set[str]) -> bool:
        """Remove references to ``owners`` from one object (of ``uid``, when given); False if
        it must be retried."""
        obj = self._get(where)
        if obj is None or (uid is not None and meta(obj).get("uid") != uid):
            return True
        refs = meta(obj).get("ownerReferences") or []
        kept = [r for r in refs if not (isinstance(r, Mapping) and r.get("uid") in owners)]
        if len(kept) == len(refs):
            return True
        new = spec_update(obj)
        if kept:
            new["metadata"]["ownerReferences"] = kept
        else:
            new["metadata"].pop("ownerReferences", None)
        try:
            self._storage.update(where[0], new)
        except NotFound:
            return True
        except Conflict:
            return False
        except StorageError as err:
            log.warning("sim_gc_orphan_failed", resource=where[0], name=where[2], error=str(err))
            return True
        return True

    def _remove_finalizer(self, where: Location, uid: str, finalizer: str) -> None:
        obj = self._get(where)
        if obj is None or meta(obj).get("uid") != uid:
            return
        new = spec_update(obj)
        new["metadata"]["finalizers"] = [
            f for f in new["metadata"].get("finalizers") or [] if f != finalizer
        ]
        try:
            self._storage.update(where[0], new)
        except NotFound:
            return
        except Conflict:
            self.enqueue(("owner", *where))
        except StorageError as err:
            log.warning("sim_gc_finalizer_failed", resource=where[0], name=where[2], error=str(err))
