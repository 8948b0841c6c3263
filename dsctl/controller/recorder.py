"""Kubernetes Events for the objects dsctl acts on, written off the sync path.

Syncs call ``record`` and move on: events go to a bounded queue that one owned task drains.
Repeats of the same (object, type, reason, message) within ``dedup_window`` bump the existing
Event's ``count`` instead of creating a new object, as kubectl users expect from ``x5 over 2m``.
A per-object spam filter (a token bucket of ``spam_burst`` events refilling one per
``spam_refill`` seconds, client-go's defaults) keeps a 5,000-pod rollout from spending the
API budget on 5,000 ``SuccessfulCreate`` events: past the burst, events for that object are
dropped and counted.
When the queue is full an event is dropped and counted, never awaited: events are advice, and
a slow API must not slow reconciliation. A failed event write is logged at warning level,
naming the object the event is about, and counted in ``dsctl_sync_write_errors_total``; it
cannot be reported as an event or a condition (see ``writes``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import EVENTS
from dsctl_api import objects
from dsctl_api.timefmt import format_rfc3339

from .metrics import WriteErrorMetrics

__all__ = ["EventRecorder"]

log = structlog.get_logger(__name__)
_stdlib_log = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"


class _WriteFailed(Exception):
    """An event write the API refused: which verb, and the API's error."""

    def __init__(self, verb: str, error: errors.ApiError) -> None:
        super().__init__(str(error))
        self.verb = verb
        self.error = error


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first: str
    at: float


@dataclass
class EventRecorder:
    """Owns the event sink task. ``start`` / ``stop``; ``record`` never blocks."""

    client: KubeClient
    instance: str = field(default_factory=lambda: os.uname().nodename)
    registry: CollectorRegistry | None = None
    capacity: int = 1000
    dedup_window: float = 600.0
    spam_burst: int = 25
    spam_refill: float = 300.0
    wall: Callable[[], float] = time.time
    write_errors: WriteErrorMetrics | None = None
    _queue: asyncio.Queue[tuple[dict[str, Any], str, str, str]] = field(init=False)
    _seen: dict[tuple[str, str, str, str], _Seen] = field(default_factory=dict)
    _tokens: dict[str, tuple[float, float]] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None
    _dropped: Counter | None = None
    _written: Counter | None = None

    def __post_init__(self) -> None:
        self._queue = asyncio.Queue(self.capacity)
        if self.registry is not None:
            self._dropped = Counter("dsctl_events_dropped_total",
                                    "Events dropped by the spam filter or because the sink was full.",
                                    registry=self.registry)
            self._written = Counter("dsctl_events_written_total", "Events written, by type and reason.",
                                    ["type", "reason"], registry=self.registry)

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Queue an event about ``obj``; drops (and counts) when the sink is full."""
        ref = {
            "apiVersion": objects.text(obj.get("apiVersion")),
            "kind": objects.text(obj.get("kind")),
            "name": objects.name(obj),
            "namespace": objects.namespace(obj),
            "uid": objects.uid(obj),
            "resourceVersion": objects.resource_version(obj),
        }
        # One line per Warning; Normal events (a SuccessfulCreate per pod) only at debug level.
        # The level is checked first because even a filtered call costs: the module's lazy
        # structlog proxy builds a bound logger on every call, one per pod created.
        # The stdlib level is the one ``dsctl.app.logging`` gives structlog's filter.
        if event_type == "Warning":
            log.info("event", type=event_type, reason=reason, object=f"{ref['namespace']}/{ref['name']}",
                     message=message)
        elif _stdlib_log.isEnabledFor(logging.DEBUG):
            log.debug("event", type=event_type, reason=reason, object=f"{ref['namespace']}/{ref['name']}",
                      message=message)
        if not self._allow(str(ref["uid"] or f"{ref['namespace']}/{ref['name']}")):
            if self._dropped is not None:
                self._dropped.inc()
            return
        try:
            self._queue.put_nowait((ref, event_type, reason, message))
        except asyncio.QueueFull:
            if self._dropped is not None:
                self._dropped.inc()

    def _allow(self, object_id: str) -> bool:
        """Take one token from the object's bucket; False when it is empty."""
        now = self.wall()
        tokens, last = self._tokens.get(object_id, (float(self.spam_burst), now))
        tokens = min(float(self.spam_burst), tokens + (now - last) / self.spam_refill)
        if tokens < 1.0:
            self._tokens[object_id] = (tokens, now)
            return False
        self._tokens[object_id] = (tokens - 1.0, now)
        if len(self._tokens) > 10_000:
            horizon = self.spam_burst * self.spam_refill
            self._tokens = {k: v for k, v in self._tokens.items() if now - v[1] < horizon}
        return True

    @property
    def pending(self) -> int:
        """Events recorded and not yet handed to the API server."""
        return self._queue.qsize()

    def start(self) -> None:
        """Start the sink task."""
        self._task = asyncio.create_task(self._drain(), name="event-recorder")

    async def stop(self, *, timeout: float = 2.0) -> None:
        """Flush what can be flushed within ``timeout``, then cancel the sink."""
        if self._task is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await self._queue.join()
        except TimeoutError:
            log.warning("events_unflushed", pending=self.pending)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def _drain(self) -> None:
        while True:
            ref, event_type, reason, message = await self._queue.get()
            try:
                await self._write(ref, event_type, reason, message)
            except _WriteFailed as failed:
                exc = failed.error
                if self.write_errors is not None:
                    self.write_errors.inc(verb=failed.verb, resource=EVENTS.plural,
                                          reason=exc.reason or str(exc.status))
                log.warning("event_write_failed", verb=failed.verb, kind=ref["kind"],
                            object=f"{ref['namespace']}/{ref['name']}", type=event_type, reason=reason,
                            status=exc.status, error=exc.reason, message=exc.message)
            except Exception:
                log.exception("event_write_crashed", reason=reason, object=f"{ref['namespace']}/{ref['name']}")
            finally:
                self._queue.task_done()

    async def _write(self, ref: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        now_epoch = self.wall()
        now = format_rfc3339(now_epoch)
        key = (ref["uid"], event_type, reason, message)
        seen = self._seen.get(key)
        namespace = ref["namespace"] or "default"
        if seen is not None and now_epoch - seen.at < self.dedup_window:
            seen.count += 1
            seen.at = now_epoch
            patch = {"count": seen.count, "lastTimestamp": now}
            try:
                await self.client.patch(EVENTS, seen.name, patch, namespace=seen.namespace, patch_type="merge")
                self._count(event_type, reason)
                return
            except errors.NotFound:
                pass
            except errors.ApiError as exc:
                raise _WriteFailed("patch", exc) from exc
        name = f"{ref['name']}.{int(now_epoch * 1e9):x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": COMPONENT},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": "dsctl",
            "reportingInstance": self.instance,
        }
        try:
            await self.client.create(EVENTS, body, namespace=namespace)
        except errors.ApiError as exc:
            raise _WriteFailed("create", exc) from exc
        self._seen[key] = _Seen(name, namespace, 1, now, now_epoch)
        if len(self._seen) > 4096:
            cutoff = now_epoch - self.dedup_window
            self._seen = {k: v for k, v in self._seen.items() if v.at >= cutoff}
        self._count(event_type, reason)

    def _count(self, event_type: str, reason: str) -> None:
        if self._written is not None:
            self._written.labels(event_type, reason).inc()
