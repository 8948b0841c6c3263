"""Expectations: the writes a DaemonSet has sent and its cache does not show yet.

After the controller writes, the informer needs a moment to deliver what it wrote. A sync in
that window would plan on a cache that misses its own writes: create again on a node whose
new pod it cannot see yet (the classic duplicate-pod race), or pick more pods to replace than
``maxUnavailable`` allows. So before writing, the controller records what it expects to see;
until the cache shows it, the DaemonSet is only allowed to write status, never pods. Two kinds
of write, two records, one rule:

- ``Expectations``: counts of creates and deletes. The pod handlers count each one down as it
  is observed (and the pod writer counts down the writes that failed).
- ``PendingPatches``: in-place patches, by pod. A patch is an update, and until the pod cache
  shows it the patched pod still looks like an available pod of the old revision. No handler
  counts: the record names the pod's UID and the resourceVersion the patch is pinned to, and
  ``satisfied`` reads the cache itself, so the pod update that brings the new version (or
  shows the pod gone or replaced) releases it, and also enqueues the DaemonSet.

Every record older than ``ttl`` (5 minutes, as upstream) counts as satisfied anyway, and a
DaemonSet held back by one is requeued when it expires, so a lost watch event delays a
DaemonSet but can never wedge it. A patch the server certainly refused (any 4xx but 409) is
``cancel``led: nothing changed. A patch whose outcome is unknown (5xx, lost connection) may
have landed, so it stays expected, but only for ``UNKNOWN_OUTCOME_TTL``: if it did land the
cache shows it long before. A 409 says the pod moved past the pinned version, which the cache
will show; it is held to the same short bound, in case nothing ever shows it.

Clocks are injected (``clock() -> seconds``); tests drive them by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dsctl.tuning import UNKNOWN_OUTCOME_TTL
from dsctl_api.objects import resource_version, uid

__all__ = ["EXPECTATIONS_TTL", "Expectations", "PendingPatches", "Record"]

EXPECTATIONS_TTL = 5 * 60.0
"""Upstream's ``ExpectationsTimeout``."""


@dataclass(slots=True)
class Record:
    """Pending creates (``adds``) and deletes (``dels``) of one key, set at ``timestamp``."""

    adds: int
    dels: int
    timestamp: float

    @property
    def fulfilled(self) -> bool:
        """Everything expected has been observed (counts may go negative; that is fine)."""
        return self.adds <= 0 and self.dels <= 0


class Expectations:
    """Per-key expectation records. Keys are ``namespace/name`` of the DaemonSet.

    Caller duty: call ``set`` before issuing the writes it counts, never after, or an
    observation can arrive before the record and be lost.
    """

    def __init__(self, *, clock: Callable[[], float], ttl: float = EXPECTATIONS_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._records: dict[str, Record] = {}

    def __len__(self) -> int:
        return len(self._records)

    def get(self, key: str) -> Record | None:
        """The record of ``key`` (a live object; do not mutate), or None."""
        return self._records.get(key)

    def set(self, key: str, *, adds: int, dels: int) -> None:
        """Replace the record of ``key`` and restart its expiry."""
        self._records[key] = Record(adds=adds, dels=dels, timestamp=self._clock())

    def lower(self, key: str, *, adds: int = 0, dels: int = 0) -> None:
        """Expect ``adds`` fewer creates and ``dels`` fewer deletes. No record: nothing happens."""
        record = self._records.get(key)
        if record is not None:
            record.adds -= adds
            record.dels -= dels

    def raise_(self, key: str, *, adds: int = 0, dels: int = 0) -> None:
        """Expect ``adds`` more creates and ``dels`` more deletes. No record: nothing happens."""
        self.lower(key, adds=-adds, dels=-dels)

    def creation_observed(self, key: str) -> None:
        """One expected create arrived (or failed)."""
        self.lower(key, adds=1)

    def deletion_observed(self, key: str) -> None:
        """One expected delete arrived (or failed)."""
        self.lower(key, dels=1)

    def expires_in(self, key: str) -> float | None:
        """Seconds until the unfulfilled record of ``key`` expires (0 if it has); None if none waits."""
        record = self._records.get(key)
        if record is None or record.fulfilled:
            return None
        return max(0.0, record.timestamp + self._ttl - self._clock())

    def expired(self, key: str) -> bool:
        """Whether the record of ``key`` exists and is older than the TTL."""
        record = self._records.get(key)
        return record is not None and self._clock() - record.timestamp > self._ttl

    def satisfied(self, key: str) -> bool:
        """May ``key`` create or delete pods? No record, fulfilled, or expired."""
        record = self._records.get(key)
        if record is None or record.fulfilled:
            return True
        return self._clock() - record.timestamp > self._ttl

    def forget(self, key: str, uid: str) -> None:
        """Drop the record of ``key``."""
        self._records.pop(key, None)

    def holds(self, key: str, uid: str) -> bool:
        """Whether a record of ``key`` is kept."""
        return key in self._records


Lookup = Callable[[str], Mapping[str, Any] | None]
"""``namespace/name`` to the cached pod, or None."""


class PendingPatches:
    """Per-DaemonSet in-place patches not yet seen in the pod cache. Keys: ``namespace/name``."""

    def __init__(self, *, clock: Callable[[], float], ttl: float = EXPECTATIONS_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._records: dict[str, dict[str, tuple[str, str, float]]] = {}
        """DaemonSet key to pod key to (UID, resourceVersion patched against, deadline)."""

    def __len__(self) -> int:
        return len(self._records)

    def expect(self, key: str, *, pod: str, pod_uid: str, resource_version: str) -> None:
        """Record a patch of ``pod`` (``namespace/name``) pinned to ``resource_version``; call before sending."""
        self._records.setdefault(key, {})[pod] = (pod_uid, resource_version, self._clock() + self._ttl)

    def unknown_outcome(self, key: str, *, pod: str) -> None:
        """The patch of ``pod`` got no answer: keep expecting it, for ``UNKNOWN_OUTCOME_TTL`` at most."""
        entry = self._records.get(key, {}).get(pod)
        if entry is not None:
            deadline = min(entry[2], self._clock() + UNKNOWN_OUTCOME_TTL)
            self._records[key][pod] = (entry[0], entry[1], deadline)

    def cancel(self, key: str, *, pod: str) -> None:
        """The patch of ``pod`` was certainly not applied."""
        pods = self._records.get(key)
        if pods is not None:
            pods.pop(pod, None)
            if not pods:
                del self._records[key]

    def satisfied(self, key: str, lookup: Lookup) -> bool:
        """Whether the cache is past every patch of ``key``; observed and expired ones are forgotten."""
        pods = self._records.get(key)
        if pods is None:
            return True
        now = self._clock()
        for pod_key, (pod_uid, version, deadline) in list(pods.items()):
            cached = lookup(pod_key)
            if (now > deadline or cached is None or uid(cached) != pod_uid
                    or resource_version(cached) != version):
                del pods[pod_key]
        if pods:
            return False
        del self._records[key]
        return True

    def expires_in(self, key: str) -> float | None:
        """Seconds until the first of ``key``'s patches stops being expected; None if none is."""
        pods = self._records.get(key)
        if not pods:
            return None
        return max(0.0, min(deadline for _, _, deadline in pods.values()) - self._clock())

    def forget(self, key: str, uid: str) -> None:
        """Drop every patch recorded for ``key``."""
        self._records.pop(key, None)

    def holds(self, key: str, uid: str) -> bool:
        """Whether a patch of ``key`` is recorded."""
        return key in self._records
