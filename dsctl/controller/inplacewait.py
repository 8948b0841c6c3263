"""Expectations for in-place patches: pods a DaemonSet has patched but its cache may not show.

Creates and deletes are counted by ``Expectations``, whose pod handlers see an add or a
delete. An in-place patch is an update, and until the pod cache shows it the patched pod
still looks like an available pod of the old revision: a sync in that window would pick it
again, and pick more pods besides, and go past ``maxUnavailable``. So before each patch the
controller records the pod (key, UID and the resourceVersion the patch is pinned to), and a
DaemonSet may plan pod writes only once its cache has moved past that version for every
recorded pod (the patch landed, or whatever made it fail with 409 did), or shows the pod gone
or replaced by another UID. No handler needs to count: the pod update that brings the new
version also enqueues the DaemonSet, and ``satisfied`` reads the cache itself.

A patch the server certainly refused (any 4xx but 409) is ``cancel``led: nothing changed. A
patch whose outcome is unknown (5xx, lost connection) may have landed, so it stays expected,
but only for ``UNKNOWN_OUTCOME_TTL``: if it did land the cache shows it long before. A 409
says the pod moved past the pinned version, which the cache will show; it is held to the same
short bound, in case nothing ever shows it (a conflict reported for a pod that did not change).
Every record expires after ``ttl`` as for ``Expectations``, and a DaemonSet held back by one is
requeued when it expires, so a lost event delays a DaemonSet but never wedges it. The clock is
injected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dsctl_api.objects import resource_version, uid

from .expectations import EXPECTATIONS_TTL

__all__ = ["UNKNOWN_OUTCOME_TTL", "PendingPatches"]

UNKNOWN_OUTCOME_TTL = 15.0
"""Seconds a patch with no answer stays expected: far above any watch delay seen in practice."""

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

    def delete(self, key: str) -> None:
        """Forget ``key`` (the DaemonSet is gone)."""
        self._records.pop(key, None)
