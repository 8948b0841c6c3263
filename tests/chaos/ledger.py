"""Invariant (d): no pod is ever created for a DaemonSet that was already deleted.

The ledger watches every DaemonSet and every pod of the namespace for the whole scenario. It
notes, per DaemonSet UID, the first resourceVersion at which the object was seen deleted
(a ``deletionTimestamp`` or a DELETED event), and, per pod ADDED event, the owner UID and the
pod's resourceVersion at creation. The simulator has one resourceVersion counter for all
types, so "created after the deletion" is a comparison of two numbers, made when asked,
whatever order the two watch streams delivered them in.

A create already in flight when the deletion lands (the controller's sync started before its
watch delivered the deletion) is a race no client can close: the API server accepts a pod
whose owner is gone and the garbage collector removes it. Such pods, seen less than
``IN_FLIGHT`` seconds after the deletion, are listed by ``raced()`` (the engine then demands
that they are garbage-collected) instead of ``violations()``; a pod created later than that
comes from a controller acting on a DaemonSet it should know is gone.

A watch that expires (410) is resumed by a re-list. Pods first seen in a re-list have no
creation resourceVersion, so for them the check falls back to ``creationTimestamp`` (whole
seconds), counting only pods created more than a full second after the deletion was seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.errors import ApiError, Gone
from dsctl.kube.resources import DAEMONSETS, PODS, Resource
from dsctl_api.pods import controller_ref
from dsctl_api.timefmt import parse_rfc3339

__all__ = ["IN_FLIGHT", "DeletionLedger"]

IN_FLIGHT = 1.0
"""Seconds after a deletion during which a new pod can still come from a request already sent."""


@dataclass
class _Birth:
    pod: str
    owner: str
    rv: int | None
    created: float
    seen: float


@dataclass
class DeletionLedger:
    """``async with DeletionLedger(client) as ledger:`` then ``ledger.violations()``."""

    client: KubeClient
    namespace: str = "default"
    resource: Resource = DAEMONSETS
    deleted_rv: dict[str, int] = field(default_factory=dict)
    deleted_at: dict[str, float] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    births: list[_Birth] = field(default_factory=list)
    relists: int = 0

    def __post_init__(self) -> None:
        self._seen_pods: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> DeletionLedger:
        for res, on_event in ((self.resource, self._on_ds), (PODS, self._on_pod)):
            rv = await self._list(res, on_event)
            self._tasks.append(asyncio.create_task(self._follow(res, on_event, rv), name=f"ledger-{res.plural}"))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _list(self, res: Resource, on_event: Callable[[str, dict[str, Any], bool], None]) -> str:
        listed = await self.client.list(res, namespace=self.namespace)
        for obj in listed.get("items") or []:
            on_event("ADDED", obj, True)
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    async def _follow(self, res: Resource, on_event: Callable[[str, dict[str, Any], bool], None], rv: str) -> None:
        while True:
            try:
                if not rv:
                    rv = await self._list(res, on_event)
                    self.relists += 1
                async for event in self.client.watch(res, namespace=self.namespace, resource_version=rv):
                    obj = event["object"]
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if event["type"] != "BOOKMARK":
                        on_event(str(event["type"]), obj, False)
            except Gone:
                rv = ""
            except ApiError:
                await asyncio.sleep(0.1)  # backoff before re-watching, not a wait for a result

    def _on_ds(self, kind: str, obj: dict[str, Any], listed: bool) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid"))
        self.names[uid] = str(meta.get("name"))
        if (kind == "DELETED" or meta.get("deletionTimestamp")) and uid not in self.deleted_rv:
            self.deleted_rv[uid] = int(meta.get("resourceVersion") or 0)
            self.deleted_at[uid] = time.time()

    def _on_pod(self, kind: str, obj: dict[str, Any], listed: bool) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid"))
        if kind == "DELETED" or uid in self._seen_pods:
            return
        self._seen_pods.add(uid)
        owner = controller_ref(obj)
        if owner is None or owner.get("kind") != self.resource.kind:
            return
        created = 0.0
        with contextlib.suppress(ValueError, TypeError):
            created = parse_rfc3339(str(meta.get("creationTimestamp")))
        rv = None if listed or kind != "ADDED" else int(meta.get("resourceVersion") or 0)
        self.births.append(_Birth(str(meta.get("name")), str(owner.get("uid")), rv, created, time.time()))

    def _late(self) -> list[tuple[_Birth, int, bool]]:
        """Births after their owner's deletion: (birth, deletion rv, within the in-flight window)."""
        found = []
        for birth in self.births:
            deleted = self.deleted_rv.get(birth.owner)
            if deleted is None:
                continue
            gone_at = self.deleted_at[birth.owner]
            if birth.rv is not None:
                if birth.rv > deleted:
                    found.append((birth, deleted, birth.seen - gone_at <= IN_FLIGHT))
            elif birth.created > gone_at + IN_FLIGHT:
                found.append((birth, deleted, False))
        return found

    def violations(self) -> list[str]:
        """Pods created for a DaemonSet seen deleted more than ``IN_FLIGHT`` seconds before."""
        return [f"pod {b.pod} created (rv {b.rv}) for ds/{self.names.get(b.owner)} uid {b.owner} deleted at rv {rv}, "
                f"{b.seen - self.deleted_at[b.owner]:.2f}s after the deletion"
                for b, rv, in_flight in self._late() if not in_flight]

    def raced(self) -> list[str]:
        """Names of pods whose create was in flight when their DaemonSet was deleted."""
        return [b.pod for b, _, in_flight in self._late() if in_flight]
