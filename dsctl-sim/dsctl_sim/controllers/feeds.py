"""Storage change feeds for the control-plane loops: one subscription per resource type.

Each loop registers small synchronous handlers here instead of subscribing itself, so a pod
change is pulled off one queue and fanned out to the scheduler, kubelet, taint manager,
garbage collector and pod GC in one pass. Handlers update in-memory indexes and enqueue keys;
they never write to storage (the loops' workers do that).

On start every subscribed type is listed and replayed as ``ADDED`` in the same synchronous step
that subscribes, so no change can fall between the list and the first queued event.

Types registered later (CustomResourceDefinitions) are picked up by a periodic registry check
when any handler asked for every type (the garbage collector does).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import structlog

from dsctl_sim.storage import Storage

__all__ = ["AnyHandler", "Feeds", "Handler"]

log = structlog.get_logger(__name__)

Handler = Callable[[str, dict[str, Any]], None]
"""``handler(event_type, obj)``; ``obj`` is the stored object and must not be mutated."""

AnyHandler = Callable[[str, str, dict[str, Any]], None]
"""``handler(resource_key, event_type, obj)`` for handlers that see every resource type."""


class Feeds:
    """Fan-out of storage changes to handlers, one pump task per resource type.

    Register with ``on`` / ``on_every_type`` before ``start``; ``start`` must run inside the
    event loop and returns nothing to await: the pump tasks are owned here and ended by
    ``stop``.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        slice_size: int = 512,
        registry_poll_seconds: float = 1.0,
    ) -> None:
        self._storage = storage
        self._slice = slice_size
        self._poll = registry_poll_seconds
        self._handlers: dict[str, list[Handler]] = {}
        self._any: list[AnyHandler] = []
        self._queues: dict[str, asyncio.Queue[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._registry_seen = -1

    def on(self, key: str, handler: Handler) -> None:
        """Call ``handler`` for every change of resource type ``key`` (e.g. ``"pods"``)."""
        self._handlers.setdefault(key, []).append(handler)

    def on_every_type(self, handler: AnyHandler) -> None:
        """Call ``handler`` for every change of every type, CRD kinds included."""
        self._any.append(handler)

    def start(self) -> None:
        """Subscribe, replay current state as ADDED, and start the pump tasks."""
        keys = set(self._handlers)
        if self._any:
            keys |= set(self._all_type_keys())
            self._registry_seen = self._storage.registry.generation
        for key in sorted(keys):
            self._subscribe(key)
        if self._any:
            self._tasks.append(
                asyncio.create_task(self._watch_registry(), name="sim-feeds:registry")
            )

    async def stop(self) -> None:
        """Cancel the pumps, wait for them, and drop the subscriptions."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for key, queue in self._queues.items():
            self._storage.unsubscribe(key, queue)
        self._queues.clear()

    @property
    def keys(self) -> frozenset[str]:
        """The resource types currently subscribed."""
        return frozenset(self._queues)

    @property
    def idle(self) -> bool:
        """True when every subscribed change has been handed to the handlers."""
        return all(queue.empty() for queue in self._queues.values())

    def _all_type_keys(self) -> list[str]:
        return [rt.key for rt in self._storage.registry]

    def _subscribe(self, key: str) -> None:
        if key in self._queues:
            return
        queue = self._storage.subscribe(key)
        self._queues[key] = queue
        objects, _ = self._storage.list(key)
        for obj in objects:
            self._dispatch(key, "ADDED", obj)
        self._tasks.append(asyncio.create_task(self._pump(key, queue), name=f"sim-feeds:{key}"))

    def _dispatch(self, key: str, event_type: str, obj: dict[str, Any]) -> None:
        for handler in self._handlers.get(key, ()):
            try:
                handler(event_type, obj)
            except Exception:
                log.exception("sim_feed_handler_failed", resource=key, event=event_type)
        for any_handler in self._any:
            try:
                any_handler(key, event_type, obj)
            except Exception:
                log.exception("sim_feed_handler_failed", resource=key, event=event_type)

    async def _pump(self, key: str, queue: asyncio.Queue[Any]) -> None:
        while True:
            event = await queue.get()
            # A CRD write registers its type synchronously, so checking here subscribes to a
            # new kind in the same pass that delivers the CRD's own event.
            self._check_registry()
            self._dispatch(key, event.type, event.object)
            # Drain what is already queued without awaiting per event, yielding now and
            # then so a burst does not monopolise the loop.
            done = 1
            while not queue.empty():
                event = queue.get_nowait()
                self._dispatch(key, event.type, event.object)
                done += 1
                if done % self._slice == 0:
                    await asyncio.sleep(0)

    def _check_registry(self) -> None:
        if not self._any:
            return
        generation = self._storage.registry.generation
        if generation == self._registry_seen:
            return
        self._registry_seen = generation
        for key in self._all_type_keys():
            if key not in self._queues:
                log.info("sim_feed_new_type", resource=key)
                self._subscribe(key)

    async def _watch_registry(self) -> None:
        # Fallback for quiet periods: a CRD registered while no event flows at all.
        while True:
            await asyncio.sleep(self._poll)
            self._check_registry()
