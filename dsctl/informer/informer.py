"""``Informer``: a reflector, its store, and the event handlers, with one owned task.

Usage::

    pods = Informer(client, PODS, indexers={BY_NODE_NAME: by_node_name}, transform=project_pod)
    pods.add_handler(on_add=..., on_update=..., on_delete=...)
    pods.run()
    await pods.wait_for_sync(timeout=60)
    ...
    await pods.stop()

Handler contract: handlers are plain (synchronous) callables run on the event loop by the
reflector task, **after** the store reflects the change, so a handler that reads the store sees
the new state. They must be quick and must not mutate the objects they are given (they are the
cached objects). An exception in a handler is logged and does not affect other handlers or the
informer. After a re-list, objects that vanished are delivered to ``on_delete`` with their last
known state, and objects whose resourceVersion changed to ``on_update``.

Cached objects always carry ``apiVersion`` and ``kind`` (list items arrive without them; the
reflector fills them in from the resource), so code can build references and events from them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from dsctl.informer.metrics import informer_metrics
from dsctl.informer.reflector import ListerWatcher, Reflector
from dsctl.informer.store import IndexFunc, ReadOnlyStore, Store, Transform
from dsctl.kube.resources import Resource

__all__ = ["Informer", "OnAdd", "OnDelete", "OnUpdate"]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
OnAdd = Callable[[Obj], None]
OnUpdate = Callable[[Obj, Obj], None]
OnDelete = Callable[[Obj], None]


@dataclass(frozen=True)
class _Handler:
    on_add: OnAdd | None
    on_update: OnUpdate | None
    on_delete: OnDelete | None


class _FanOut:
    """Calls every registered handler, isolating their failures from each other."""

    def __init__(self, resource: str) -> None:
        self.handlers: list[_Handler] = []
        self._resource = resource

    def _failed(self, what: str, exc: Exception) -> None:
        log.error("informer.handler_failed", resource=self._resource, handler=what, exc_info=exc)

    def on_add(self, obj: Obj) -> None:
        for h in self.handlers:
            if h.on_add is not None:
                try:
                    h.on_add(obj)
                except Exception as exc:
                    self._failed("on_add", exc)

    def on_update(self, old: Obj, new: Obj) -> None:
        for h in self.handlers:
            if h.on_update is not None:
                try:
                    h.on_update(old, new)
                except Exception as exc:
                    self._failed("on_update", exc)

    def on_delete(self, obj: Obj) -> None:
        for h in self.handlers:
            if h.on_delete is not None:
                try:
                    h.on_delete(obj)
                except Exception as exc:
                    self._failed("on_delete", exc)


class Informer:
    """A cached, indexed, continuously updated view of one resource type.

    ``indexers`` maps index names to functions ``obj -> list[str]`` (see
    :func:`~dsctl.informer.store.by_node_name`, :func:`~dsctl.informer.store.by_owner_uid`);
    ``transform`` projects objects before they are cached (see
    :mod:`dsctl.informer.projections`). ``resync_period`` (seconds, off by default) re-delivers
    every cached object to ``on_update(obj, obj)`` periodically. ``stale_after`` (default three
    inactivity timeouts) is how long :meth:`healthy` tolerates no sign of progress.
    """

    def __init__(
        self,
        client: ListerWatcher,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
        resync_period: float | None = None,
        page_size: int = 500,
        inactivity_timeout: float = 120.0,
        watch_timeout: int | None = None,
        streaming_list: bool = False,
        stale_after: float | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.resource = resource
        self._store = Store(indexers=indexers, transform=transform)
        self._view = ReadOnlyStore(self._store)
        self._fanout = _FanOut(resource.label)
        self._reflector = Reflector(
            client,
            resource,
            self._store,
            self._fanout,
            metrics=informer_metrics(registry),
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
            inactivity_timeout=inactivity_timeout,
            watch_timeout=watch_timeout,
            streaming_list=streaming_list,
        )
        self.resync_period = resync_period
        self.stale_after = stale_after if stale_after is not None else 3 * inactivity_timeout
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None

    @property
    def store(self) -> ReadOnlyStore:
        """Read-only view of the cache (the lister). Returned objects must not be mutated."""
        return self._view

    @property
    def reflector(self) -> Reflector:
        """The reflector (for diagnostics: ``last_rv``, ``relists``)."""
        return self._reflector

    def add_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
    ) -> None:
        """Register handlers. Added after the initial sync, ``on_add`` first receives every
        object already cached, as client-go does for late handlers."""
        handler = _Handler(on_add, on_update, on_delete)
        self._fanout.handlers.append(handler)
        if on_add is not None and self.has_synced():
            for obj in self._store.list():
                try:
                    on_add(obj)
                except Exception as exc:
                    self._fanout._failed("on_add", exc)

    def on_listed(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every complete list from now on (registered after the sync:
        every relist), once the store holds it and its changes are delivered. A relist replaces
        the whole cache at once, and what owns the process's memory policy acts on that."""
        self._reflector.list_listeners.append(listener)

    def has_synced(self) -> bool:
        """True once the first full list has been stored and delivered to the handlers."""
        return self._reflector.synced.is_set()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`has_synced`; return False if ``timeout`` seconds passed first."""
        if self.has_synced():
            return True
        try:
            async with asyncio.timeout(timeout):
                await self._reflector.synced.wait()
        except TimeoutError:
            return False
        return True

    def run(self) -> asyncio.Task[None]:
        """Start the reflector task (idempotent) and return it. Needs a running loop."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(
                self._reflector.run(), name=f"informer:{self.resource.label}"
            )
            if self.resync_period:
                self._resync_task = asyncio.create_task(
                    self._resync_loop(self.resync_period),
                    name=f"informer-resync:{self.resource.label}",
                )
        return self._task

    async def stop(self) -> None:
        """Cancel the owned tasks and wait for them; the store keeps its last state."""
        tasks = [t for t in (self._task, self._resync_task) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # a crashed reflector was already logged by asyncio
                log.error("informer.task_failed", resource=self.resource.label, exc_info=exc)
        self._task = self._resync_task = None

    async def __aenter__(self) -> Informer:
        self.run()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def healthy(self, *, now: float | None = None) -> bool:
        """Reflector task alive and not stuck: some progress (list, event, bookmark, watch
        renewal) within ``stale_after`` seconds."""
        task = self._task
        if task is None or task.done():
            return False
        current = time.monotonic() if now is None else now
        return current - self._reflector.last_progress <= self.stale_after

    async def _resync_loop(self, period: float) -> None:
        while True:
            await asyncio.sleep(period)
            if not self.has_synced():
                continue
            for obj in self._store.list():
                self._fanout.on_update(obj, obj)
