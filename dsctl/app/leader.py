"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's timing rules.

Invariants:

- Only the holder writes. ``is_leader`` turns False as soon as renewals have failed for
  ``renew_deadline`` seconds, which is strictly shorter than ``lease_duration``: the leader
  stops acting before any standby may take the lease.
- Standbys never trust the remote ``renewTime`` against their own clock. They time the lease
  from the moment *they* last saw the record change (local monotonic clock), so clock skew
  between replicas cannot cause an early takeover.
- Timestamps written to the Lease are UTC ``MicroTime`` whatever the local timezone.
- On release (SIGTERM), the holder empties ``holderIdentity`` and shortens the lease to 1 s,
  so a standby takes over on its next retry instead of waiting out the lease.

How close to fencing this gets: a leader that stalls (GC pause, frozen VM) longer than
``lease_duration - renew_deadline`` after its last successful renewal can still have writes
in flight when a standby acquires. Kubernetes offers no fencing token on ordinary writes, so
this window is narrowed, not closed; all writes are level-triggered and idempotent, which is
what makes a brief overlap harmless in practice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Gauge

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import LEASES
from dsctl_api.timefmt import format_micro

__all__ = ["LeaderElector"]

log = structlog.get_logger(__name__)


@dataclass
class LeaderElector:
    """Acquires and renews one Lease. Run ``run()`` as an owned task; cancel it to release."""

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
    _leading: asyncio.Event = field(default_factory=asyncio.Event)
    _observed: tuple[str, str] | None = None
    _observed_at: float = 0.0
    _last_renew: float = 0.0
    _gauge: Gauge | None = None

    def __post_init__(self) -> None:
        if self.registry is not None:
            self._gauge = Gauge(
                "leader_election_master_status",
                "1 while this process holds the leader lease, else 0.",
                ["name"],
                registry=self.registry,
            )
            self._gauge.labels(self.name).set(0)

    @property
    def is_leader(self) -> bool:
        """True while the lease is held and was renewed within ``renew_deadline``."""
        return self._leading.is_set() and self.monotonic() - self._last_renew < self.renew_deadline

    async def wait_leading(self) -> None:
        """Return once this process holds the lease."""
        await self._leading.wait()

    def _record(self, lease: dict[str, Any] | None, *, acquire: bool) -> dict[str, Any]:
        spec = dict((lease or {}).get("spec") or {})
        now = format_micro(self.wall())
        transitions = int(spec.get("leaseTransitions") or 0)
        if acquire and spec.get("holderIdentity") != self.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = transitions + (1 if spec.get("holderIdentity") else 0)
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = max(1, round(self.lease_duration))
        spec["renewTime"] = now
        spec.setdefault("acquireTime", now)
        ns = self.namespace
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": dict((lease or {}).get("metadata") or {"name": self.name, "namespace": ns}),
            "spec": spec,
        }
        return body

    async def _try_acquire_or_renew(self) -> bool:
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
        except errors.NotFound:
            try:
                await self.client.create(LEASES, self._record(None, acquire=True), namespace=self.namespace)
            except errors.ApiError as exc:
                log.info("lease_create_failed", lease=self.name, status=exc.status, reason=exc.reason)
                return False
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        marker = (holder, str(spec.get("renewTime") or ""))
        if marker != self._observed:
            self._observed, self._observed_at = marker, self.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        held_by_other = holder not in ("", self.identity)
        if held_by_other and self.monotonic() - self._observed_at < duration:
            return False
        try:
            await self.client.update(LEASES, self._record(lease, acquire=True), namespace=self.namespace)
        except errors.ApiError as exc:
            log.info("lease_update_failed", lease=self.name, status=exc.status, reason=exc.reason)
            return False
        return True

    def _set_leading(self, leading: bool) -> None:
        if leading:
            self._leading.set()
        else:
            self._leading.clear()
        if self._gauge is not None:
            self._gauge.labels(self.name).set(1 if leading else 0)

    async def run(self) -> None:
        """Acquire, then renew until cancelled or the renew deadline passes."""
        try:
            while not self._leading.is_set():
                if await self._try_acquire_or_renew():
                    self._last_renew = self.monotonic()
                    self._set_leading(True)
                    log.info("leader_acquired", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                    break
                await asyncio.sleep(self.retry_period)
            while True:
                await asyncio.sleep(self.retry_period)
                if await self._try_acquire_or_renew():
                    self._last_renew = self.monotonic()
                elif self.monotonic() - self._last_renew >= self.renew_deadline:
                    self._set_leading(False)
                    log.error("leader_lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                    if self.on_lost is not None:
                        self.on_lost()
                    return
        finally:
            if self._leading.is_set():
                self._set_leading(False)
                await asyncio.shield(self._release())

    async def _release(self) -> None:
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = format_micro(self.wall())
            lease = {**lease, "spec": {**spec, "holderIdentity": "", "leaseDurationSeconds": 1,
                                       "renewTime": now, "acquireTime": now}}
            await self.client.update(LEASES, lease, namespace=self.namespace)
            log.info("leader_released", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        except errors.ApiError as exc:
            log.warning("lease_release_failed", status=exc.status, reason=exc.reason)
