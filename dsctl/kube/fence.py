"""The write fence: writes go out only while this process can be sure it holds the leader Lease.

Leader election alone does not stop a leader that has lost its Lease from writing: the loss is
noticed on the next renewal, and writes already queued in the token bucket, waiting out a
``Retry-After`` or half-way through a sync go out afterwards, while a standby may already act.
The fence closes that gap at one seam. The elector opens it up to an instant (the start of
its last successful renewal plus the renew deadline) and closes it when it stops leading; the
transport consults it right before each mutating attempt (POST, PUT, PATCH, DELETE) is sent,
after the token bucket and before every retry, so no write leaves the process later than the
renew deadline after the last renewal the server confirmed.

A refused write raises :class:`~dsctl.kube.errors.Fenced` (an ``ApiError`` with status 0:
callers already treat it as a failed write that reached nobody), is logged, and is counted in
``dsctl_leader_fenced_writes_total{verb,resource}``. Reads are never fenced: a standby keeps
its caches warm.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import structlog
from prometheus_client import CollectorRegistry, Counter

from dsctl.kube.errors import Fenced

__all__ = ["WriteFence"]

log = structlog.get_logger(__name__)

Clock = Callable[[], float]


class WriteFence:
    """Allows writes until a monotonic instant; closed (refusing every write) when built.

    The owner (the leader elector) calls :meth:`open_until` after each confirmed renewal and
    :meth:`close` when it stops leading. :meth:`check` is the ``write_fence`` callable the
    API client calls before sending a write; it raises ``Fenced`` once the instant is past.
    """

    def __init__(
        self, *, registry: CollectorRegistry | None = None, clock: Clock = time.monotonic
    ) -> None:
        self._clock = clock
        self._until = -math.inf
        self._why_closed = "leadership not acquired yet"
        self.refused = Counter(
            "dsctl_leader_fenced_writes_total",
            "Writes refused before sending because the leader Lease could no longer be trusted.",
            ("verb", "resource"),
            registry=registry if registry is not None else CollectorRegistry(),
        )

    def open_until(self, until: float) -> None:
        """Allow writes until the monotonic instant ``until``; never moves the instant back."""
        self._until = max(self._until, until)

    def close(self, why: str) -> None:
        """Refuse every write from now on (until opened again); ``why`` goes into the errors."""
        self._until = -math.inf
        self._why_closed = why

    @property
    def is_open(self) -> bool:
        """Whether a write sent now would be allowed."""
        return self._clock() < self._until

    def check(self, verb: str, resource: str) -> None:
        """Raise ``Fenced`` (logged and counted) unless a write may be sent now."""
        now = self._clock()
        if now < self._until:
            return
        why = self._why_closed if self._until == -math.inf else (
            f"no renewal confirmed for {now - self._until:.1f}s past the renew deadline")
        self.refused.labels(verb=verb, resource=resource).inc()
        log.warning("write_fenced", verb=verb, resource=resource, why=why)
        raise Fenced(f"{verb} {resource} refused: not sure to hold the leader Lease ({why})")
