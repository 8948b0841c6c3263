"""The simulator's state: every object of every served type, one resourceVersion counter.

The HTTP server and the control-plane loops share one ``Storage`` in one event loop. Every
method is synchronous and never awaits, so each call is atomic with respect to everything
else: no locks, and a list followed by a watch registration can never miss a change.

What it guarantees, as kube-apiserver does:

- one global, strictly increasing ``resourceVersion``; every write gets the next one;
- create fills ``uid``, ``creationTimestamp``, ``resourceVersion``, ``generation`` and
  resolves ``generateName``; update is optimistic (409 on a stale ``resourceVersion``), keeps
  spec and status apart for types with a status subresource, bumps ``generation`` on a spec
  change and is a no-op (no new version, no event) when nothing changes;
- delete is graceful for scheduled pods, waits for finalizers, and turns
  ``propagationPolicy`` Orphan/Foreground into the finalizers the GC loop works on;
- watches replay from a bounded per-type history and get ``Gone`` (410) past it.

Returned dicts are shared with storage and with every client: never mutate them. ``create``
and ``update`` take ownership of the dict passed in.
"""

from __future__ import annotations

import asyncio
import builtins
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from dsctl_api.fields import FieldSelector
from dsctl_api.labels import Selector
from dsctl_api.timefmt import format_rfc3339
from dsctl_sim import strategy
from dsctl_sim.changes import ChangeFeeds, Listener
from dsctl_sim.deletion import check_preconditions, deletion_outcome, is_finished
from dsctl_sim.errors import AlreadyExists, BadRequest, Conflict, Forbidden, Invalid, NotFound
from dsctl_sim.intern import Interner
from dsctl_sim.owners import OwnerIndex
from dsctl_sim.priorityclasses import SYSTEM_PRIORITY_CLASSES, system_class_delete_refusal
from dsctl_sim.reads import ReadView
from dsctl_sim.registry import Registry, ResourceType
from dsctl_sim.table import Table
from dsctl_sim.watch import Doc, Watcher, WatchEvent

__all__ = ["Storage", "WatchEvent", "Watcher"]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_NAMESPACES = "namespaces"


class Storage(ReadView):
    """All simulated cluster state. See the module docstring for the guarantees.

    ``now`` supplies wall time (epoch seconds) for timestamps; ``rng`` drives generated
    names and UIDs, so a seeded run is reproducible. ``decoded_cache_size`` bounds how many
    versions of each compact type (pods) stay decoded (ADR 0110).
    """

    def __init__(
        self,
        *,
        registry: Registry | None = None,
        history_size: int = 50_000,
        now: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        bootstrap_namespaces: bool = True,
        decoded_cache_size: int = 32_768,
    ) -> None:
        self.registry = registry or Registry()
        self.history_size = history_size
        self.decoded_cache_size = decoded_cache_size
        self.now = now
        self.rng = rng or random.Random()
        self._rv = 0
        self._tables: dict[str, Table] = {}
        self.feeds = ChangeFeeds()
        self.owners = OwnerIndex()
        self.interner = Interner()
        self._stamp_second = -1
        self._stamp = ""
        for rt in self.registry:
            self._tables[rt.key] = Table(rt, history_size=history_size, decoded_cache_size=decoded_cache_size)
        if bootstrap_namespaces:
            for ns in _DEFAULT_NAMESPACES:
                self.create(_NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            # kube-apiserver's post-start hook creates the built-in classes with the namespaces.
            for pc in SYSTEM_PRIORITY_CLASSES:
                if self.registry.get("scheduling.k8s.io/priorityclasses") is not None:
                    self.create("scheduling.k8s.io/priorityclasses", pc)

    def timestamp(self, offset: float = 0.0) -> str:
        """``now() + offset`` as an RFC 3339 second-precision timestamp (cached per second)."""
        second = int(self.now() + offset)
        if second != self._stamp_second:
            self._stamp_second, self._stamp = second, format_rfc3339(second)
        return self._stamp

    # -- types ----------------------------------------------------------------------------

    def register_type(self, rt: ResourceType) -> None:
        """Serve a new type (a CRD's); an existing type with the same key keeps its objects."""
        self.registry.register(rt)
        table = self._tables.get(rt.key)
        if table is None:
            self._tables[rt.key] = Table(rt, history_size=self.history_size,
                                         decoded_cache_size=self.decoded_cache_size)
        else:
            table.rt = rt

    def unregister_type(self, key: str) -> None:
        """Stop serving a type: its objects are deleted (with events) and its watches end."""
        table = self._tables.get(key)
        if table is None:
            return
        for doc in list(table.all_docs()):
            meta = doc.peek()["metadata"]
            self._remove(table, meta.get("namespace", ""), meta["name"])
        for w in list(table.watchers):
            w.close()
        self.registry.unregister(key)
        del self._tables[key]

    # -- writes ---------------------------------------------------------------------------

    def create(self, key: str, obj: Obj, *, namespace: str | None = None) -> Obj:
        """Store a new object and return it as stored (takes ownership of ``obj``)."""
        table = self.table(key)
        rt = table.rt
        meta = obj.get("metadata")
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        meta = dict(meta)
        ns = self._resolve_namespace(rt, namespace, meta, creating=True)
        name = meta.get("name") or ""
        if not name:
            prefix = meta.get("generateName") or ""
            if not prefix:
                raise Invalid.object(kind=rt.kind, group=rt.group, name="", causes=[{
                    "field": "metadata.name", "reason": "FieldValueRequired",
                    "message": "Required value: name or generateName is required"}])
            name = self._generate_name(table, ns, prefix)
        if table.get(ns, name) is not None:
            raise AlreadyExists.object(plural=rt.plural, group=rt.group, name=name)
        new = {"kind": rt.kind, "apiVersion": rt.api_version, **obj}
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        for stale in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"):
            meta.pop(stale, None)
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = self.timestamp()
        if strategy.tracks_generation(rt):
            meta["generation"] = 1
        new["metadata"] = meta
        strategy.prepare_create(rt, new)
        return self._commit(table, "ADDED", ns, name, new, None)

    def update(self, key: str, obj: Obj, *, subresource: str | None = None) -> Obj:
        """Replace an object (or only its status); returns the stored result.

        Conflict when ``metadata.resourceVersion`` is set and stale or ``metadata.uid``
        differs. An update that changes nothing returns the current object unchanged.
        """
        table = self.table(key)
        rt = table.rt
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise BadRequest("metadata.name is required for an update")
        ns = self._resolve_namespace(rt, meta.get("namespace"), meta)
        name = meta["name"]
        current = table.get(ns, name)
        if current is None:
            raise NotFound.object(plural=rt.plural, group=rt.group, name=name)
        old = current.obj
        old_meta = old["metadata"]
        want_rv = meta.get("resourceVersion")
        if want_rv not in (None, "") and str(want_rv) != old_meta["resourceVersion"]:
            raise Conflict.modified(plural=rt.plural, group=rt.group, name=name)
        if meta.get("uid") not in (None, "", old_meta["uid"]):
            raise Conflict(f"Precondition failed: UID in precondition: {meta['uid']}, "
                           f"UID in object meta: {old_meta['uid']}")
        if subresource == "status":
            if not rt.has_status:
                raise NotFound(f"the server could not find the requested resource ({rt.key}/status)")
            new = strategy.prepare_status_update(rt, obj, old)
        elif subresource is None:
            new = {"kind": rt.kind, "apiVersion": rt.api_version, **obj}
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            new_meta = dict(meta)
            for keep in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                         "generation", "namespace", "name"):
                if keep in old_meta:
                    new_meta[keep] = old_meta[keep]
                else:
                    new_meta.pop(keep, None)
            new["metadata"] = new_meta
            strategy.prepare_update(rt, new, old)
            if "generation" in old_meta and strategy.spec_changed(rt, new, old):
                new_meta["generation"] = old_meta["generation"] + 1
        else:
            raise NotFound(f"the server could not find the requested resource ({rt.key}/{subresource})")
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if new == old:
            return old
        if is_finished(new):
            return self._remove(table, ns, name, last=new)
        return self._commit(table, "MODIFIED", ns, name, new, current)

    def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> Obj:
        """The ``pods/binding`` subresource: set ``spec.nodeName`` once, mark PodScheduled.

        ``uid`` is an optional precondition (Conflict when the pod was replaced).
        """
        table = self.table("pods")
        current = table.get(namespace, name)
        if current is None:
            raise NotFound.object(plural="pods", group="", name=name)
        pod = current.obj
        if uid and uid != pod["metadata"]["uid"]:
            raise Conflict(f"Precondition failed: UID in precondition: {uid}, "
                           f"UID in object meta: {pod['metadata']['uid']}")
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            raise Conflict(f"pod {name} is already assigned to node \"{spec['nodeName']}\"")
        if pod["metadata"].get("deletionTimestamp"):
            raise Conflict(f"pod {name} is being deleted, cannot be assigned to a host")
        new = dict(pod)
        new["metadata"] = dict(pod["metadata"])
        new["spec"] = {**spec, "nodeName": node}
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True",
                           "lastProbeTime": None, "lastTransitionTime": self.timestamp()})
        status["conditions"] = conditions
        new["status"] = status
        return self._commit(table, "MODIFIED", namespace, name, new, current)

    def delete(
        self,
        key: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Obj:
        """Delete, gracefully for scheduled pods and lazily while finalizers remain.

        Returns the removed object, or the object marked with ``deletionTimestamp``.
        """
        table = self.table(key)
        rt = table.rt
        ns = (namespace or "") if rt.namespaced else ""
        current = table.get(ns, name)
        if current is None:
            raise NotFound.object(plural=rt.plural, group=rt.group, name=name)
        check_preconditions(current.obj, uid=uid, resource_version=resource_version)
        if key == _NAMESPACES:
            return self._delete_namespace(table, current)
        refusal = system_class_delete_refusal(key, name)
        if refusal is not None:
            raise Forbidden(refusal)
        outcome, obj = deletion_outcome(
            rt, current.obj, grace_period_seconds=grace_period_seconds, propagation_policy=propagation_policy,
            has_dependents=self.owners.has_dependents(current.obj["metadata"]["uid"]), timestamp=self.timestamp,
        )
        if outcome == "remove":
            return self._remove(table, ns, name)
        if outcome == "unchanged":
            return obj
        return self._commit(table, "MODIFIED", ns, name, obj, current)

    def _delete_namespace(self, table: Table, current: Doc) -> Obj:
        """Mark the namespace ``Terminating``: creates in it are refused from now on, and the
        control plane's namespace controller deletes its contents, then the namespace."""
        name = str(current.obj["metadata"]["name"])
        if name in _PROTECTED_NAMESPACES:
            raise Forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
        if current.obj["metadata"].get("deletionTimestamp"):
            return current.obj
        marked = {**current.obj, "metadata": {**current.obj["metadata"], "deletionTimestamp": self.timestamp()},
                  "status": {**(current.obj.get("status") or {}), "phase": "Terminating"}}
        return self._commit(table, "MODIFIED", "", name, marked, current)

    def namespace_contents(self, namespace: str) -> list[tuple[str, Obj]]:
        """``(resource key, object)`` for every object stored in ``namespace``."""
        return [(key, doc.peek()) for key, table in self._tables.items() if table.rt.namespaced
                for doc in list(table.by_ns.get(namespace, {}).values())]

    def finalize_namespace(self, name: str) -> Obj:
        """Remove a terminating namespace once nothing is left in it (Conflict otherwise)."""
        table = self.table(_NAMESPACES)
        current = table.get("", name)
        if current is None:
            raise NotFound.object(plural=_NAMESPACES, group="", name=name)
        if not current.obj["metadata"].get("deletionTimestamp"):
            raise Conflict(f'namespace "{name}" is not being deleted')
        if self.namespace_contents(name):
            raise Conflict(f'namespace "{name}" still has content')
        return self._remove(table, "", name)

    def _resolve_namespace(self, rt: ResourceType, namespace: str | None, meta: Obj, *, creating: bool = False) -> str:
        if not rt.namespaced:
            return ""
        in_body = meta.get("namespace") or None
        if namespace and in_body and namespace != in_body:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        ns = namespace or in_body
        if not ns:
            raise BadRequest("a namespace is required for a namespaced resource")
        space = self._tables[_NAMESPACES].get("", ns)
        if space is None:
            raise NotFound.object(plural=_NAMESPACES, group="", name=ns)
        if creating and space.obj["metadata"].get("deletionTimestamp"):
            raise Forbidden.namespace_terminating(plural=rt.plural, group=rt.group, name=str(meta.get("name") or ""),
                                                  namespace=str(ns))
        return str(ns)

    def _generate_name(self, table: Table, ns: str, prefix: str) -> str:
        for _ in range(16):
            suffix = "".join(self.rng.choice(_SUFFIX_ALPHABET) for _ in range(5))
            name = prefix[:58] + suffix
            if table.get(ns, name) is None:
                return name
        raise AlreadyExists(f"could not generate a unique name with prefix {prefix!r}")

    # -- commit and fan-out ---------------------------------------------------------------

    def _commit(self, table: Table, etype: str, ns: str, name: str, new: Obj, old: Doc | None) -> Obj:  # noqa: PLR0917
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        if table.cache is None:
            # A compact type's decoded object is short-lived: sharing its parts would not last.
            self.interner.object(new)
        doc = table.new_doc(new)
        table.put(ns, name, doc, old)
        self.owners.update(table.rt.key, ns, name, None if old is None else old.obj, new)
        self.feeds.publish(table, WatchEvent(etype, doc, self._rv, key=table.rt.key, old=old))
        if old is not None:
            old.release()
        return new

    def _remove(self, table: Table, ns: str, name: str, *, last: Obj | None = None) -> Obj:
        removed = table.remove(ns, name)
        if removed is None:
            raise NotFound.object(plural=table.rt.plural, group=table.rt.group, name=name)
        self._rv += 1
        final = dict(last if last is not None else removed.obj)
        final["metadata"] = {**final["metadata"], "resourceVersion": str(self._rv)}
        self.owners.update(table.rt.key, ns, name, removed.obj, None)
        self.feeds.publish(table, WatchEvent("DELETED", table.new_doc(final), self._rv, key=table.rt.key))
        removed.release()
        return final

    # -- watch and feeds ------------------------------------------------------------------

    def watch(
        self,
        key: str,
        *,
        namespace: str | None = None,
        since_rv: int | None,
        label_selector: Selector | None = None,
        field_selector: FieldSelector | None = None,
        max_buffer: int = 200_000,
    ) -> Watcher:
        """A watcher receiving every matching change after ``since_rv`` (None: from now).

        Raises ``Gone`` when ``since_rv`` is older than this type's retained history.
        """
        table = self.table(key)
        fields = self.check_fields(table.rt, field_selector)
        return self.feeds.open_watch(table, namespace=namespace, since_rv=since_rv, current_rv=self._rv,
                                     labels=label_selector, fields=fields, max_buffer=max_buffer)

    def subscribe(self, key: str) -> asyncio.Queue[WatchEvent]:
        """An unbounded queue receiving every change of this type, for in-process loops."""
        self.table(key)
        return self.feeds.subscribe(key)

    def unsubscribe(self, key: str, queue: asyncio.Queue[WatchEvent]) -> None:
        """Stop feeding a queue returned by ``subscribe``."""
        self.feeds.unsubscribe(key, queue)

    def add_listener(self, key: str, fn: Listener) -> Callable[[], None]:
        """Call ``fn(event)`` synchronously after every change of this type; returns a remover.

        Listeners run after the change is stored and published to watchers. They may read
        storage and write to it (a nested write publishes its own event before returning),
        and must be quick: they run inside the writer's call.
        """
        return self.feeds.add_listener(key, fn)

    def dependents(self, owner_uid: str) -> builtins.list[tuple[str, str, str]]:
        """``(key, namespace, name)`` of every object with an ownerReference to ``owner_uid``."""
        return self.owners.dependents(owner_uid)

    def compact(self) -> int:
        """Forget all watch history now: any watch from an older resourceVersion gets 410."""
        for table in self._tables.values():
            table.compact(self._rv)
        log.info("storage_compacted", rv=self._rv)
        return self._rv

    def close_watchers(self) -> None:
        """End every open watch (shutdown, or the fault injector dropping streams)."""
        for w in self.watchers():
            w.close()
