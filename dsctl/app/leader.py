"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Invariants:

- **Any failure is one failed attempt, never the end.** An error on a Lease read or write
  (any ``dsctl.kube`` error: 5xx, 429, a reset connection, a timeout) or an attempt that
  outlives its deadline counts as one failed attempt; the next comes one retry period later.
  The elector ends only when it is cancelled (shutdown: release the Lease) or when it loses
  leadership, and losing leadership for *any* reason calls ``on_lost``.
- **Bounded attempts on a private client.** The elector is given its own ``KubeClient`` (own
  HTTP session, own token bucket, no in-place retries, see the runner), so renewals never wait
  behind the workers' writes or a ``Retry-After``. Each attempt runs under
  ``asyncio.timeout``: the renew deadline while acquiring, and while leading only what is left
  of it since the last confirmed renewal.
- **Only the holder writes.** Leadership ends ``renew_deadline`` seconds after the start of the
  last attempt that renewed the Lease, strictly before ``lease_duration``, after which a
  standby may take over. The :class:`~dsctl.kube.fence.WriteFence` is opened up to that same
  instant after each renewal, so the workers' client refuses writes from then on even if the
  loss has not been acted on yet (a write waiting in the token bucket, a sync in flight).
  Timing from the *start* of the attempt is conservative: the server wrote ``renewTime`` later.
- A leader that reads the Lease held by someone else steps down at once.
- Standbys never trust the remote ``renewTime`` against their own clock. They time the lease
  from the moment *they* last saw the record change (local monotonic clock), so clock skew
  between replicas cannot cause an early takeover.
- Timestamps written to the Lease are UTC ``MicroTime`` whatever the local timezone.
- On release (SIGTERM), the holder empties ``holderIdentity`` and shortens the lease to 1 s,
  so a standby takes over on its next retry instead of waiting out the lease.

What remains: a request already on the wire when the deadline passes can still land at the
server; Kubernetes offers no fencing token on ordinary writes. ``lease_duration -
renew_deadline`` is the margin that covers it, and all writes are level-triggered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.fence import WriteFence
from dsctl.kube.resources import LEASES
from dsctl.kube.transport import RetryPolicy
from dsctl_api.timefmt import format_micro

__all__ = ["LEASE_CLIENT_BURST", "LEASE_CLIENT_MIN_QPS", "LeaderElector", "lease_client"]

log = structlog.get_logger(__name__)

RELEASE_TIMEOUT = 5.0
"""Longest a release on shutdown may take; the lease expires by itself anyway."""
LEASE_CLIENT_MIN_QPS = 5.0
"""The elector sends at most a GET and an update per retry period; its bucket has room for 2x."""
LEASE_CLIENT_BURST = 10


async def lease_client(
    *,
    kubeconfig: str | None,
    context: str | None,
    user_agent: str,
    renew_deadline: float,
    retry_period: float,
    registry: CollectorRegistry | None = None,
    environ: Mapping[str, str] | None = None,
) -> KubeClient:
    """The elector's own client: own HTTP session and token bucket, one attempt per request
    (no in-place retry, no waiting out ``Retry-After``), reads cut at the renew deadline."""
    return await KubeClient.from_config(
        kubeconfig=kubeconfig,
        context=context,
        qps=max(LEASE_CLIENT_MIN_QPS, 4.0 / retry_period),
        burst=LEASE_CLIENT_BURST,
        user_agent=user_agent,
        registry=registry,
        retry=RetryPolicy(max_attempts=1),
        request_timeout=renew_deadline,
        environ=environ,
    )


class _Deposed(Exception):
    """The Lease names another holder while this process believes it leads."""


@dataclass
class LeaderElector:
    """Acquires and renews one Lease. Run ``run()`` as an owned task; cancel it to release.

    ``client`` must be the elector's own client (not the workers'), built without in-place
    retries. ``fence``, when given, is opened while leading and closed on any loss.
    ``monotonic`` must be the event loop's clock (``asyncio.timeout`` uses it).
    """

    client: KubeClient
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    registry: CollectorRegistry | None = None
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    on_lost: Callable[[], None] | None = None
    fence: WriteFence | None = None
    _leading: asyncio.Event = field(default_factory=asyncio.Event)
    _observed: tuple[str, str] | None = None
    _observed_at: float = 0.0
    _last_renew: float = 0.0
    _last_attempt: float | None = None
    _written: dict[str, Any] | None = None
    """The Lease as the server answered this process's last successful write of it."""
    _ended: str | None = None
    _gauge: Gauge | None = None
    _failures: Counter | None = None

    def __post_init__(self) -> None:
        if self.registry is not None:
            self._gauge = Gauge(
                "leader_election_master_status",
                "1 while this process holds the leader lease, else 0.",
                ["name"],
                registry=self.registry,
            )
            self._gauge.labels(self.name).set(0)
            self._failures = Counter(
                "dsctl_leader_election_failed_attempts_total",
                "Lease acquire or renew attempts that failed, by reason (HTTP reason or Timeout).",
                ["name", "reason"],
                registry=self.registry,
            )

    @property
    def is_leader(self) -> bool:
        """True while the lease is held and was renewed within ``renew_deadline``."""
        return self._leading.is_set() and self.monotonic() - self._last_renew < self.renew_deadline

    async def wait_leading(self) -> None:
        """Return once this process holds the lease."""
        await self._leading.wait()

    def unhealthy(self) -> str | None:
        """A liveness check: why the elector is unwell, or None.

        Unwell when its task ended (other than by shutdown), or when no attempt started for
        longer than one bounded attempt plus two retry periods: the loop is stuck.
        """
        if self._ended is not None:
            return f"leader election ended: {self._ended}"
        if self._last_attempt is None:
            return None
        idle = self.monotonic() - self._last_attempt
        if idle > self.renew_deadline + 2 * self.retry_period:
            return f"no Lease attempt for {idle:.1f}s"
        return None

    def _record(self, lease: dict[str, Any] | None, *, leading: bool) -> dict[str, Any]:
        spec = dict((lease or {}).get("spec") or {})
        now = format_micro(self.wall())
        if not leading or spec.get("holderIdentity") != self.identity:
            # client-go counts a transition whenever a non-leader takes the record, including
            # a released (empty) one; a brand-new Lease starts at 0.
            spec["acquireTime"] = now
            if lease is not None:
                spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = max(1, round(self.lease_duration))
        spec["renewTime"] = now
        spec.setdefault("acquireTime", now)
        spec.setdefault("leaseTransitions", 0)
        ns = self.namespace
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": dict((lease or {}).get("metadata") or {"name": self.name, "namespace": ns}),
            "spec": spec,
        }

    async def _try_acquire_or_renew(self) -> bool:
        """One attempt. False when the Lease is validly held by another; raises on API errors."""
        leading = self._leading.is_set()
        if leading and self._written is not None:
            # client-go's fast path: the leader renews on top of the Lease it wrote last, one
            # request instead of two; any failure (a Conflict when someone else wrote) falls
            # back to reading the Lease within the same bounded attempt.
            try:
                self._written = await self.client.update(
                    LEASES, self._record(self._written, leading=True), namespace=self.namespace)
                return True
            except errors.ApiError as exc:
                self._written = None
                log.info("lease_fast_renew_failed", lease=self._lease_name, reason=exc.reason or exc.status)
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
        except errors.NotFound:
            self._written = await self.client.create(
                LEASES, self._record(None, leading=leading), namespace=self.namespace)
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        marker = (holder, str(spec.get("renewTime") or ""))
        if marker != self._observed:
            self._observed, self._observed_at = marker, self.monotonic()
        held_by_other = holder not in ("", self.identity)
        if held_by_other and leading:
            raise _Deposed(holder)
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if held_by_other and self.monotonic() - self._observed_at < duration:
            return False
        self._written = await self.client.update(
            LEASES, self._record(lease, leading=leading), namespace=self.namespace)
        return True

    async def _attempt(self, *, timeout: float) -> bool:
        """One bounded attempt; every failure is logged, counted and answered with False."""
        self._last_attempt = self.monotonic()
        try:
            async with asyncio.timeout(timeout):
                return await self._try_acquire_or_renew()
        except _Deposed:
            raise
        except TimeoutError:
            reason, detail = "Timeout", f"no answer within {timeout:.1f}s"
        except errors.ApiError as exc:
            reason, detail = exc.reason or str(exc.status), str(exc)
        except errors.KubeError as exc:
            reason, detail = type(exc).__name__, str(exc)
        except Exception as exc:  # a malformed Lease must not end the elector either
            log.exception("lease_attempt_crashed", lease=self._lease_name)
            reason, detail = type(exc).__name__, str(exc)
        if self._failures is not None:
            self._failures.labels(self.name, reason).inc()
        log.warning("lease_attempt_failed", lease=self._lease_name, identity=self.identity,
                    leading=self._leading.is_set(), reason=reason, detail=detail)
        return False

    @property
    def _lease_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    def _renewed(self, started: float) -> None:
        self._last_renew = started
        if self.fence is not None:
            self.fence.open_until(started + self.renew_deadline)

    def _set_leading(self, leading: bool) -> None:
        if leading:
            self._leading.set()
        else:
            self._leading.clear()
            self._written = None
            if self.fence is not None:
                self.fence.close("leadership lost or released")
        if self._gauge is not None:
            self._gauge.labels(self.name).set(1 if leading else 0)

    async def _acquire(self) -> None:
        while True:
            started = self.monotonic()
            if await self._attempt(timeout=self.renew_deadline):
                self._renewed(started)
                self._set_leading(True)
                log.info("leader_acquired", lease=self._lease_name, identity=self.identity)
                return
            await asyncio.sleep(self.retry_period)

    async def _renew(self) -> str:
        """Renew until the renew deadline passes without a renewal; returns why leading ended."""
        delay = self.retry_period
        while True:
            await asyncio.sleep(delay)
            remaining = self._last_renew + self.renew_deadline - self.monotonic()
            if remaining <= 0:
                return f"not renewed within the renew deadline ({self.renew_deadline:g}s)"
            started = self.monotonic()
            try:
                renewed = await self._attempt(timeout=remaining)
            except _Deposed as exc:
                return f"the Lease is held by {exc}"
            if renewed:
                self._renewed(started)
                delay = self.retry_period
            else:
                delay = min(self.retry_period, max(0.0, self._last_renew + self.renew_deadline - self.monotonic()))

    async def run(self) -> None:
        """Acquire, then renew until cancelled (release) or leadership is lost (``on_lost``)."""
        why = "the elector stopped"
        cancelled = False
        log.info("leader_election_started", lease=self._lease_name, identity=self.identity,
                 lease_duration=self.lease_duration, renew_deadline=self.renew_deadline,
                 retry_period=self.retry_period)
        try:
            await self._acquire()
            why = await self._renew()
        except asyncio.CancelledError:
            cancelled = True
            raise
        except BaseException as exc:
            why = f"the elector crashed: {type(exc).__name__}: {exc}"
            log.exception("leader_election_crashed", lease=self._lease_name)
            raise
        finally:
            was_leading = self._leading.is_set()
            self._set_leading(False)
            if cancelled:
                if was_leading:
                    await asyncio.shield(self._release())
            else:
                self._ended = why
                log.error("leader_lost", lease=self._lease_name, identity=self.identity,
                          was_leading=was_leading, why=why)
                if self.on_lost is not None:
                    self.on_lost()

    async def _release(self) -> None:
        try:
            async with asyncio.timeout(min(self.renew_deadline, RELEASE_TIMEOUT)):
                lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
                spec = lease.get("spec") or {}
                if spec.get("holderIdentity") != self.identity:
                    return
                now = format_micro(self.wall())
                lease = {**lease, "spec": {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                                           "renewTime": now, "acquireTime": now}}
                await self.client.update(LEASES, lease, namespace=self.namespace)
            log.info("leader_released", lease=self._lease_name, identity=self.identity)
        except TimeoutError:
            log.warning("lease_release_failed", reason="Timeout")
        except errors.KubeError as exc:
            log.warning("lease_release_failed", reason=type(exc).__name__, detail=str(exc))
