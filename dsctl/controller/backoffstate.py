"""Per-node backoff for replacing failed daemon pods: the mutable state behind ``BackoffView``.

Each key (``dsctl.daemonset.backoffview.backoff_key``: DaemonSet UID, observed generation,
node) gets a delay that starts at ``initial`` and doubles on every replacement up to
``maximum``. While a node is inside its delay its failed pod is left alone and the DaemonSet
is requeued for when the delay ends. An entry untouched for twice ``maximum`` is forgotten,
so a node that has been healthy for a while starts over at ``initial``.

Time is always passed in (``now``, epoch seconds); nothing here reads a clock. Planners only
read this state through ``BackoffView`` (``in_backoff``, ``remaining``, ``next_delay``); the
controller calls ``next`` for each ``Plan.backoff_steps`` key when it applies a plan, ``gc``
periodically, and ``RuntimeState.forget`` calls ``forget`` when a DaemonSet is gone.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INITIAL_SECONDS", "MAX_SECONDS", "FailedPodBackoff"]

INITIAL_SECONDS = 1.0
MAX_SECONDS = 15 * 60.0


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

    def forget(self, key: str, uid: str) -> None:
        """Drop every entry of the DaemonSet object ``uid`` (entries are keyed by UID, not ``key``)."""
        if not uid:
            return
        prefix = f"{uid}/"
        for entry in [k for k in self._entries if k.startswith(prefix)]:
            del self._entries[entry]

    def holds(self, key: str, uid: str) -> bool:
        """Whether an entry of the DaemonSet object ``uid`` is kept."""
        prefix = f"{uid}/"
        return bool(uid) and any(k.startswith(prefix) for k in self._entries)
