"""Core v1 Events written by the simulated control plane, under a strict volume budget.

The scheduler reports ``Scheduled`` and ``FailedScheduling`` like kube-scheduler does, so
``kubectl get events`` and ``kubectl describe pod`` tell a familiar story. A burst of thousands
of bindings must not turn into thousands of stored events, though: a token bucket caps the rate
and anything over it is counted and dropped (events are best effort in Kubernetes too).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import structlog

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.controllers.clock import Clock
from dsctl_sim.controllers.util import meta
from dsctl_sim.errors import StorageError
from dsctl_sim.storage import Storage

__all__ = ["EventRecorder"]

log = structlog.get_logger(__name__)

# One counter for every recorder: several components (scheduler, kubelet, node controller) may
# report on the same object in the same nanosecond of a fake clock, and names must not clash.
_SERIAL = itertools.count()


class EventRecorder:
    """Writes ``v1 Event`` objects about objects, at most ``rate`` per second (``burst`` at once).

    ``record`` never raises: a failed or throttled event is logged at debug level and dropped.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock,
        component: str,
        rate: float = 10.0,
        burst: int = 50,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._component = component
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._last = clock.now()
        self.dropped = 0
        self.written = 0

    def _take(self) -> bool:
        now = self._clock.now()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def record(
        self,
        regarding: Mapping[str, Any],
        *,
        api_version: str,
        kind: str,
        event_type: str,
        reason: str,
        message: str,
    ) -> None:
        """Write one event about ``regarding`` unless the budget is spent."""
        if not self._take():
            self.dropped += 1
            return
        m = meta(regarding)
        namespace = str(m.get("namespace") or "default")
        now = self._clock.now()
        stamp = format_rfc3339(now)
        name = f"{m.get('name')}.{int(now * 1e9):x}{next(_SERIAL):x}"
        involved: dict[str, Any] = {
            "apiVersion": api_version,
            "kind": kind,
            "name": m.get("name"),
            "namespace": m.get("namespace"),
            "uid": m.get("uid"),
            "resourceVersion": m.get("resourceVersion"),
        }
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v is not None},
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": f"{self._component}-sim",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "eventTime": None,
            "count": 1,
        }
        try:
            self._storage.create("events", event, namespace=namespace)
            self.written += 1
        except StorageError as err:
            log.debug("sim_event_dropped", reason=reason, error=str(err))
