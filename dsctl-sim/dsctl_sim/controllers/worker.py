"""The shape every simulated control-plane loop shares: a deduplicating work set and one worker.

Storage change handlers (see ``feeds``) only record *which* object needs a look, through
``enqueue``; the worker later re-reads that object from storage and acts on its current state.
Acting on current state rather than on the event makes the loops level-triggered: a burst of
ten events for one pod costs one sync, and a missed or reordered event costs nothing.

The worker drains in slices and yields to the event loop between slices, so a burst of
thousands of pods never starves the API server that shares the loop.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import structlog

from dsctl_sim.controllers.clock import Clock, TimerHandle

__all__ = ["WorkLoop"]

log = structlog.get_logger(__name__)

K = TypeVar("K", bound=Hashable)


class WorkLoop(Generic[K]):
    """A worker over a FIFO set of keys; subclasses implement ``sync(key)``.

    Invariants: a key is in ``_queue`` if and only if it is in ``_queued``; ``sync`` runs for
    one key at a time and never awaits, so it sees and writes storage atomically with respect to
    every other loop and the API server. ``sync`` may call ``enqueue`` for any key, including
    its own (it then runs again after the current slice).
    """

    name = "loop"

    def __init__(self, *, clock: Clock, slice_size: int = 256) -> None:
        self.clock = clock
        self._slice = slice_size
        self._queue: deque[K] = deque()
        self._queued: set[K] = set()
        self._wake = asyncio.Event()
        self._timers: set[TimerHandle] = set()
        self.synced = 0

    def enqueue(self, key: K) -> None:
        """Mark ``key`` for a sync; a key already waiting is not added twice."""
        if key in self._queued:
            return
        self._queued.add(key)
        self._queue.append(key)
        self._wake.set()

    def enqueue_at(self, key: K, when: float) -> None:
        """Enqueue ``key`` once the clock reaches ``when`` (epoch seconds)."""
        self.call_at(when, lambda: self.enqueue(key))

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """A clock timer that ``close`` cancels if it has not fired yet."""
        handles: list[TimerHandle] = []

        def fire() -> None:
            self._timers.difference_update(handles)
            callback()

        handle = self.clock.call_at(when, fire)
        handles.append(handle)
        self._timers.add(handle)
        return handle

    def close(self) -> None:
        """Cancel pending timers; called once the worker task has ended."""
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()

    @property
    def idle(self) -> bool:
        """True when nothing is waiting (timers not counted)."""
        return not self._queue

    def stats(self) -> dict[str, int]:
        """Counters for the admin endpoint and logs: syncs done, keys queued, timers pending."""
        return {"synced": self.synced, "queued": len(self._queue), "timers": len(self._timers)}

    def sync(self, key: K) -> None:
        """Bring the object named by ``key`` to where this loop wants it."""
        raise NotImplementedError

    async def run(self) -> None:
        """Work until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            done = 0
            while self._queue:
                key = self._queue.popleft()
                self._queued.discard(key)
                try:
                    self.sync(key)
                except Exception:
                    # One bad object must not stop the loop; the next event for it retries.
                    log.exception("sim_loop_sync_failed", loop=self.name, key=str(key))
                self.synced += 1
                done += 1
                if done % self._slice == 0:
                    await asyncio.sleep(0)
