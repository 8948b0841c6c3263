"""Expectations: the creates and deletes a DaemonSet is still waiting to see in its cache.

After the controller creates N pods, the informer needs a moment to deliver them. A sync in
that window would see the node still empty and create again: the classic duplicate-pod
race. So before writing, the controller records how many creates and deletes it is about
to issue; the pod handlers count each one down as it is observed (and the executor counts
down the writes that failed). Until a DaemonSet's record reaches zero it is only allowed to
write status, never pods.

A record older than ``ttl`` (5 minutes) counts as satisfied anyway, so a lost watch event
delays a DaemonSet but can never wedge it.

The clock is injected (``clock() -> epoch seconds``); tests drive it by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["EXPECTATIONS_TTL", "Expectations", "Record"]

EXPECTATIONS_TTL = 5 * 60.0


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

    def delete(self, key: str) -> None:
        """Forget ``key`` (the DaemonSet is gone)."""
        self._records.pop(key, None)
