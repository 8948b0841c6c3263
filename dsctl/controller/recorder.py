"""Kubernetes Events for the objects dsctl acts on, correlated, then written off the sync path.

Syncs call ``record`` and move on. ``EventCorrelator`` decides, without I/O, what each recorded
event becomes (ADR 0135), in the order client-go's correlator uses:

1. **Aggregate.** Events that differ only in their message (same object, type and reason) are
   *similar*. Once ``aggregate_after`` distinct messages have been seen within
   ``aggregate_window`` of each other, every further new message goes to one aggregate Event whose
   message is ``(combined from similar events): <the latest message>``. This bounds how many
   Events a reason can create per object: a 5,000-pod rollout writes a handful of
   ``SuccessfulCreate`` Events, not 5,000.
2. **Count.** A repeat of an Event written within ``dedup_window`` bumps that Event's ``count``
   and ``lastTimestamp`` (a patch) instead of creating a new object: ``x5 over 2m`` in kubectl.
3. **Rate-limit repeats.** A token bucket of ``spam_burst`` writes, refilling one per
   ``spam_refill`` seconds (client-go's defaults), limits the writes of *each correlated Event*:
   one object with one message, or one object's aggregate. client-go keys its bucket on the
   object alone, so a warning repeated every sync spends the object's budget and a later,
   different message is dropped while the stale one stays on display. Keyed per Event, a new
   message always has a full bucket of its own; aggregation keeps the number of buckets per
   object small. A throttled repeat is counted, not lost: the next write of that Event carries
   the full count and the latest message.

Writes go to a bounded queue that one owned task drains. When the queue is full an event is
dropped and counted, never awaited: events are advice, and a slow API must not slow
reconciliation. A failed event write is logged at warning level, naming the object the event is
about, and counted in ``dsctl_sync_write_errors_total``; it cannot be reported as an event or a
condition (see ``writes``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import structlog
from prometheus_client import CollectorRegistry, Counter

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import EVENTS
from dsctl_api import objects
from dsctl_api.timefmt import format_rfc3339

from .metrics import WriteErrorMetrics

__all__ = ["AGGREGATE_PREFIX", "EventCorrelator", "EventRecorder", "EventWrite"]

log = structlog.get_logger(__name__)
_stdlib_log = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"
AGGREGATE_PREFIX = "(combined from similar events): "
"""The message prefix of an aggregate Event; kubectl users know it from client-go."""

_Similar = tuple[str, str, str, str, str, str, str]
"""(apiVersion, kind, namespace, name, uid, type, reason): events that may differ in message only."""
_Key = tuple[_Similar, str | None]
"""One correlated Event: similar events and the message, or None for their aggregate."""


K = TypeVar("K")
V = TypeVar("V")


class _Lru(OrderedDict[K, V], Generic[K, V]):
    """An ordered dict that forgets its least recently used entry past ``capacity``."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity

    def use(self, key: K) -> V | None:
        """The entry for ``key`` (now the most recently used), or None."""
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.capacity:
            self.popitem(last=False)


@dataclass
class _Messages:
    """The distinct messages of similar events, and when the last similar event came."""

    seen: set[str]
    at: float


@dataclass
class _Observed:
    """A correlated Event as the API holds it (or will, once its write goes through)."""

    name: str
    namespace: str
    count: int
    first: float
    at: float


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass(frozen=True, slots=True)
class EventWrite:
    """One Event write for the sink: a new Event, or (``existing``) a count bump of one."""

    ref: Mapping[str, Any]
    name: str
    namespace: str
    type: str
    reason: str
    message: str
    count: int
    first: float
    last: float
    existing: bool

    def body(self) -> dict[str, Any]:
        """The whole Event: what is created, also when the Event to bump has gone."""
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "involvedObject": dict(self.ref),
            "reason": self.reason,
            "message": self.message,
            "type": self.type,
            "source": {"component": COMPONENT},
            "firstTimestamp": format_rfc3339(self.first),
            "lastTimestamp": format_rfc3339(self.last),
            "count": self.count,
        }

    def patch(self) -> dict[str, Any]:
        """The merge patch of a bump: the count, the time and the message (an aggregate's changes)."""
        return {"count": self.count, "lastTimestamp": format_rfc3339(self.last), "message": self.message}


@dataclass
class EventCorrelator:
    """Aggregates, counts and rate-limits events; see the module docstring for the rules.

    It does no I/O and reads no clock: every call passes ``now`` (epoch seconds). Its three
    caches are bounded LRUs, so a long-running controller's memory does not grow with the
    objects it ever touched.
    """

    aggregate_after: int = 10
    aggregate_window: float = 600.0
    dedup_window: float = 600.0
    spam_burst: int = 25
    spam_refill: float = 300.0
    capacity: int = 4096
    _similar: _Lru[_Similar, _Messages] = field(init=False)
    _observed: _Lru[_Key, _Observed] = field(init=False)
    _buckets: _Lru[_Key, _Bucket] = field(init=False)
    _last_nanos: int = 0

    def __post_init__(self) -> None:
        self._similar = _Lru(self.capacity)
        self._observed = _Lru(self.capacity)
        self._buckets = _Lru(self.capacity)

    def correlate(self, ref: Mapping[str, Any], event_type: str, reason: str, message: str, *,
                  now: float) -> EventWrite | None:
        """The write this event becomes, or None when its Event is over its rate."""
        similar: _Similar = (str(ref["apiVersion"]), str(ref["kind"]), str(ref["namespace"]), str(ref["name"]),
                             str(ref["uid"]), event_type, reason)
        key, message = self._aggregate(similar, message, now=now)
        observed = self._observed.use(key)
        existing = observed is not None and now - observed.at < self.dedup_window
        if observed is not None and existing:
            observed.count += 1
            observed.at = now
        else:
            observed = _Observed(self._name(str(ref["name"]), now), str(ref["namespace"]) or "default", 1, now, now)
            self._observed.put(key, observed)
        if not self._take(key, now=now):
            return None
        return EventWrite(ref=ref, name=observed.name, namespace=observed.namespace, type=event_type, reason=reason,
                          message=message, count=observed.count, first=observed.first, last=now,
                          existing=existing)

    def _aggregate(self, similar: _Similar, message: str, *, now: float) -> tuple[_Key, str]:
        """The Event this message belongs to: its own, or (past the threshold) the aggregate."""
        record = self._similar.use(similar)
        if record is None or now - record.at > self.aggregate_window:
            record = _Messages(set(), now)
            self._similar.put(similar, record)
        record.at = now
        if message in record.seen:
            return (similar, message), message
        if len(record.seen) + 1 < self.aggregate_after:
            record.seen.add(message)
            return (similar, message), message
        # The earlier messages keep their own Events; every newer one shares the aggregate.
        return (similar, None), AGGREGATE_PREFIX + message

    def _take(self, key: _Key, *, now: float) -> bool:
        """Take a token from the Event's bucket; False when it is empty."""
        bucket = self._buckets.use(key)
        if bucket is None:
            bucket = _Bucket(float(self.spam_burst), now)
            self._buckets.put(key, bucket)
        bucket.tokens = min(float(self.spam_burst), bucket.tokens + (now - bucket.at) / self.spam_refill)
        bucket.at = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def _name(self, object_name: str, now: float) -> str:
        """``<object>.<nanoseconds in hex>``, as client-go names Events; never twice the same."""
        self._last_nanos = max(int(now * 1e9), self._last_nanos + 1)
        return f"{object_name}.{self._last_nanos:x}"


class _WriteFailed(Exception):
    """An event write the API refused: which verb, and the API's error."""

    def __init__(self, verb: str, error: errors.ApiError) -> None:
        super().__init__(str(error))
        self.verb = verb
        self.error = error


@dataclass
class EventRecorder:
    """Owns the event sink task. ``start`` / ``stop``; ``record`` never blocks."""

    client: KubeClient
    instance: str = field(default_factory=lambda: os.uname().nodename)
    registry: CollectorRegistry | None = None
    capacity: int = 1000
    correlator: EventCorrelator = field(default_factory=EventCorrelator)
    wall: Callable[[], float] = time.time
    write_errors: WriteErrorMetrics | None = None
    _queue: asyncio.Queue[EventWrite] = field(init=False)
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
        """Queue an event about ``obj``; drops (and counts) one over its rate or when the sink is full."""
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
        # structlog proxy builds a bound logger on every call, once per pod created.
        # The stdlib level is the one ``dsctl.app.logging`` gives structlog's filter.
        if event_type == "Warning":
            log.info("event", type=event_type, reason=reason, object=f"{ref['namespace']}/{ref['name']}",
                     message=message)
        elif _stdlib_log.isEnabledFor(logging.DEBUG):
            log.debug("event", type=event_type, reason=reason, object=f"{ref['namespace']}/{ref['name']}",
                      message=message)
        write = self.correlator.correlate(ref, event_type, reason, message, now=self.wall())
        if write is None:
            self._drop()
            return
        try:
            self._queue.put_nowait(write)
        except asyncio.QueueFull:
            self._drop()

    def _drop(self) -> None:
        if self._dropped is not None:
            self._dropped.inc()

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
            write = await self._queue.get()
            ref = write.ref
            try:
                await self._write(write)
            except _WriteFailed as failed:
                exc = failed.error
                if self.write_errors is not None:
                    self.write_errors.inc(verb=failed.verb, resource=EVENTS.plural,
                                          reason=exc.reason or str(exc.status))
                log.warning("event_write_failed", verb=failed.verb, kind=ref["kind"],
                            object=f"{ref['namespace']}/{ref['name']}", type=write.type, reason=write.reason,
                            status=exc.status, error=exc.reason, message=exc.message)
            except Exception:
                log.exception("event_write_crashed", reason=write.reason,
                              object=f"{ref['namespace']}/{ref['name']}")
            finally:
                self._queue.task_done()

    async def _write(self, write: EventWrite) -> None:
        """Bump the existing Event, or create it (also when the one to bump has expired or its
        create never went through: the body carries the count so far)."""
        if write.existing:
            try:
                await self.client.patch(EVENTS, write.name, write.patch(), namespace=write.namespace,
                                        patch_type="merge")
                self._count(write)
                return
            except errors.NotFound:
                pass
            except errors.ApiError as exc:
                raise _WriteFailed("patch", exc) from exc
        body = write.body()
        body.update(reportingComponent="dsctl", reportingInstance=self.instance)
        try:
            await self.client.create(EVENTS, body, namespace=write.namespace)
        except errors.ApiError as exc:
            raise _WriteFailed("create", exc) from exc
        self._count(write)

    def _count(self, write: EventWrite) -> None:
        if self._written is not None:
            self._written.labels(write.type, write.reason).inc()
