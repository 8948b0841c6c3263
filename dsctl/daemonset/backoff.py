"""Per-node backoff for replacing failed daemon pods.

A pod that the kubelet keeps rejecting (a host port in use, a bad volume) fails again right
after each replacement; without a brake the controller and the kubelet fight in a hot loop.
Each (DaemonSet, generation, node) gets a delay that starts at ``initial`` and doubles on
every replacement up to ``maximum``. While a node is inside its delay its failed pod is left
alone and the DaemonSet is requeued for when the delay ends. An entry untouched for twice
``maximum`` is forgotten, so a node that has been healthy for a while starts over at
``initial``.

The key includes ``status.observedGeneration``: a new template generation gets a fresh start.

Time is always passed in (``now``, epoch seconds); nothing here reads a clock. Planners only
read this state (``in_backoff``, ``remaining``, ``next_delay``); the executor calls ``next``
for each ``Plan.backoff_steps`` key when it applies a plan, and ``gc`` periodically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dsctl.daemonset.access import as_int, as_map, uid

__all__ = ["BackoffView", "FailedPodBackoff", "backoff_key"]

INITIAL_SECONDS = 1.0
MAX_SECONDS = 15 * 60.0


def backoff_key(ds: Mapping[str, Any], node_name: str) -> str:
    """``<ds uid>/<status.observedGeneration>/<node>``."""
    generation = as_int(as_map(as_map(ds).get("status")).get("observedGeneration"))
    return f"{uid(ds)}/{generation}/{node_name}"


class BackoffView(Protocol):
    """The read-only face of the backoff state that planners see."""

    def in_backoff(self, key: str, *, now: float) -> bool: ...

    def remaining(self, key: str, *, now: float) -> float: ...

    def next_delay(self, key: str, *, now: float) -> float: ...


@dataclass(slots=True)
class _Entry:
    delay: float
    last_update: float


class FailedPodBackoff:
    """Mutable per-key exponential backoff. Not thread-safe; one event loop owns it."""

    def __init__(self, *, initial: float = INITIAL_SECONDS, maximum: float = MAX_SECONDS) -> None:
        if initial <= 0 or maximum < initial:
            raise ValueError("backoff needs 0 < initial <= maximum")
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def _live(self, key: str, now: float) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None or now - entry.last_update > 2 * self.maximum:
            return None
        return entry

    def get(self, key: str) -> float:
        """The current delay of ``key``; 0 when it has none."""
        entry = self._entries.get(key)
        return entry.delay if entry else 0.0

    def in_backoff(self, key: str, *, now: float) -> bool:
        """Whether ``now`` is still inside the delay that started at the last ``next``."""
        entry = self._live(key, now)
        return entry is not None and now - entry.last_update < entry.delay

    def remaining(self, key: str, *, now: float) -> float:
        """Seconds until the delay of ``key`` ends; 0 when it is not in backoff."""
        entry = self._live(key, now)
        if entry is None:
            return 0.0
        return max(0.0, entry.delay - (now - entry.last_update))

    def next_delay(self, key: str, *, now: float) -> float:
        """The delay ``next(key, now=now)`` would set, without setting it."""
        entry = self._live(key, now)
        if entry is None:
            return self.initial
        return min(entry.delay * 2, self.maximum)

    def next(self, key: str, *, now: float) -> float:
        """Start (or double) the delay of ``key`` at ``now``; returns the new delay."""
        delay = self.next_delay(key, now=now)
        self._entries[key] = _Entry(delay=delay, last_update=now)
        return delay

    def gc(self, *, now: float) -> int:
        """Forget entries idle for more than twice ``maximum``; returns how many went."""
        stale = [k for k, e in self._entries.items() if now - e.last_update > 2 * self.maximum]
        for key in stale:
            del self._entries[key]
        return len(stale)

    def forget(self, ds_uid: str) -> int:
        """Drop every entry of the DaemonSet with ``ds_uid`` (it was deleted)."""
        prefix = f"{ds_uid}/"
        gone = [k for k in self._entries if k.startswith(prefix)]
        for key in gone:
            del self._entries[key]
        return len(gone)
