"""Expectations for in-place patches: pods a DaemonSet has patched but its cache may not show.

Creates and deletes are counted by ``Expectations``, whose pod handlers see an add or a
delete. An in-place patch is an update, and until the pod cache shows it the patched pod
still looks like an available pod of the old revision: a sync in that window would pick it
again, and pick more pods besides, and go past ``maxUnavailable``. So before each patch the
controller records the pod (key, UID and the hash it moves to), and a DaemonSet may plan pod
writes only once its cache shows every recorded pod carrying its new hash (the patch and the
``dsctl.io/in-place-update`` record land in the same write), gone, or replaced by another
UID. No handler needs to count: the pod update that brings the new hash also enqueues the
DaemonSet, and ``satisfied`` reads the cache itself.

A record older than ``ttl`` counts as satisfied, as for ``Expectations``: a lost event
delays a DaemonSet but never wedges it. The clock is injected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dsctl.daemonset.access import labels, uid
from dsctl.daemonset.expectations import EXPECTATIONS_TTL
from dsctl.daemonset.template import HASH_LABEL

__all__ = ["PendingPatches"]

Lookup = Callable[[str], Mapping[str, Any] | None]
"""``namespace/name`` to the cached pod, or None."""


@dataclass(slots=True)
class _Pending:
    pods: dict[str, tuple[str, str]] = field(default_factory=dict)
    """pod key (``namespace/name``) to (UID, hash it was patched to)."""
    timestamp: float = 0.0


class PendingPatches:
    """Per-DaemonSet in-place patches not yet seen in the pod cache. Keys: ``namespace/name``."""

    def __init__(self, *, clock: Callable[[], float], ttl: float = EXPECTATIONS_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._records: dict[str, _Pending] = {}

    def __len__(self) -> int:
        return len(self._records)

    def expect(self, key: str, *, pod: str, pod_uid: str, hash: str) -> None:
        """Record a patch of ``pod`` (``namespace/name``) to ``hash``; call before sending it."""
        record = self._records.setdefault(key, _Pending())
        record.pods[pod] = (pod_uid, hash)
        record.timestamp = self._clock()

    def cancel(self, key: str, *, pod: str) -> None:
        """The patch of ``pod`` was not applied (refused, or never sent)."""
        record = self._records.get(key)
        if record is not None:
            record.pods.pop(pod, None)
            if not record.pods:
                del self._records[key]

    def satisfied(self, key: str, lookup: Lookup) -> bool:
        """Whether the cache shows every patch of ``key``; observed ones are forgotten."""
        record = self._records.get(key)
        if record is None:
            return True
        if self._clock() - record.timestamp > self._ttl:
            del self._records[key]
            return True
        for pod_key, (pod_uid, hash_) in list(record.pods.items()):
            cached = lookup(pod_key)
            if cached is None or uid(cached) != pod_uid or labels(cached).get(HASH_LABEL) == hash_:
                del record.pods[pod_key]
        if record.pods:
            return False
        del self._records[key]
        return True

    def delete(self, key: str) -> None:
        """Forget ``key`` (the DaemonSet is gone)."""
        self._records.pop(key, None)
