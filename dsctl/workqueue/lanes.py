"""The order in which waiting keys are handed out: a FIFO, and a priority lane ahead of it.

client-go's queue is one FIFO. dsctl adds one lane for a single purpose: when a node joins or
becomes eligible, the DaemonSets that want it are synced in the order of their pods' priority
(a CNI agent before a logging agent), ties in arrival order. Every other add stays FIFO.

- ``push(key)`` appends to the FIFO.
- ``push_priority(key, priority)`` puts the key in the priority lane, which is always served
  before the FIFO: highest priority first, then the order of pushes. A key already waiting in
  either lane moves into the priority lane, or up within it; it never moves down, so a later,
  lower-priority push cannot delay it.
- ``pop()`` takes the next key. Each key waits at most once (the queue's dedup guarantees the
  callers push a key only when it is not already waiting, except for ``push_priority``'s
  promotion, which this class handles by lazy deletion: an entry superseded by a promotion is
  skipped when reached). Operations are O(log n).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Lanes"]

K = TypeVar("K", bound=Hashable)


class Lanes(Generic[K]):
    """Waiting keys in two lanes. Invariant: ``_ticket[key]`` names the one live entry of a key."""

    def __init__(self) -> None:
        self._fifo: deque[tuple[int, K]] = deque()
        self._heap: list[tuple[int, int, K]] = []
        self._ticket: dict[K, int] = {}
        self._rank: dict[K, int] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._ticket)

    def __bool__(self) -> bool:
        return bool(self._ticket)

    def __contains__(self, key: object) -> bool:
        return key in self._ticket

    def push(self, key: K) -> None:
        """Append ``key`` to the FIFO; a key already waiting keeps its place."""
        if key in self._ticket:
            return
        ticket = next(self._seq)
        self._ticket[key] = ticket
        self._fifo.append((ticket, key))

    def push_priority(self, key: K, priority: int) -> None:
        """Put ``key`` in the priority lane (or raise it there); never lowers a waiting key."""
        current = self._rank.get(key)
        if current is not None and current >= priority:
            return
        ticket = next(self._seq)
        self._ticket[key] = ticket
        self._rank[key] = priority
        heapq.heappush(self._heap, (-priority, ticket, key))

    def peek(self) -> tuple[K, int | None] | None:
        """The key ``pop`` would return and its priority (None for the FIFO); None when empty."""
        while self._heap:
            _, ticket, key = self._heap[0]
            if self._ticket.get(key) == ticket:
                return key, self._rank[key]
            heapq.heappop(self._heap)
        while self._fifo:
            ticket, key = self._fifo[0]
            if self._ticket.get(key) == ticket:
                return key, None
            self._fifo.popleft()
        return None

    def pop(self) -> K:
        """The next key: the priority lane first, then the FIFO. Raises IndexError when empty."""
        while self._heap:
            _, ticket, key = heapq.heappop(self._heap)
            if self._ticket.get(key) == ticket:
                return self._take(key)
        while self._fifo:
            ticket, key = self._fifo.popleft()
            if self._ticket.get(key) == ticket:
                return self._take(key)
        raise IndexError("pop from empty lanes")

    def clear(self) -> None:
        """Forget every waiting key."""
        self._fifo.clear()
        self._heap.clear()
        self._ticket.clear()
        self._rank.clear()

    def _take(self, key: K) -> K:
        del self._ticket[key]
        self._rank.pop(key, None)
        return key


class PriorityGate(Generic[K]):
    """Holds lower-priority work back while a prioritized key is being worked.

    Handing keys out in priority order is not enough with several workers: the second worker
    would start the next key while the first still syncs the critical one, and their pod
    creates would race. So while a key taken from the priority lane at priority ``p`` is in
    flight, only lane keys of priority ``p`` or higher are handed out (ties run in parallel);
    lower lane keys and FIFO keys wait. A sync that hangs must not stall the controller: a
    key holds the gate for at most ``hold`` seconds.
    """

    def __init__(self, *, hold: float) -> None:
        self.hold = hold
        self._inflight: dict[K, tuple[int, float]] = {}

    def allows(self, rank: int | None, *, now: float) -> bool:
        """Whether a key of lane priority ``rank`` (None: FIFO) may start now."""
        top = self.top(now=now)
        return top is None or (rank is not None and rank >= top)

    def top(self, *, now: float) -> int | None:
        """The highest priority that holds the gate now, if any."""
        held = [rank for rank, since in self._inflight.values() if now - since < self.hold]
        return max(held) if held else None

    def next_expiry(self, *, now: float) -> float | None:
        """Seconds until the earliest hold runs out, if any key holds the gate."""
        left = [since + self.hold - now for _, since in self._inflight.values() if now - since < self.hold]
        return max(0.0, min(left)) if left else None

    def started(self, key: K, rank: int | None, *, now: float) -> None:
        """``key`` was handed out from the lane at ``rank`` (FIFO keys hold nothing)."""
        if rank is not None:
            self._inflight[key] = (rank, now)

    def finished(self, key: K) -> bool:
        """``key`` is done; True when it held the gate (waiting workers should look again)."""
        return self._inflight.pop(key, None) is not None

    def clear(self) -> None:
        """Forget every holder."""
        self._inflight.clear()
