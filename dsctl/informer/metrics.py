"""Prometheus metrics of informers, labelled by resource (``pods``, ``apps/daemonsets``...).

``informer_last_event_timestamp_seconds`` moves on every event, bookmark, list and watch
(re)connect; an app can alert when it stops moving, which is how a dead informer shows.
Created once per registry, like the client metrics.
"""

from __future__ import annotations

import weakref

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

__all__ = ["InformerMetrics", "informer_metrics"]


class InformerMetrics:
    """The informer metric families of one registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.events = Counter(
            "informer_events_total",
            "Watch events received by informers, by resource and event type.",
            ("resource", "type"),
            registry=registry,
        )
        self.relists = Counter(
            "informer_relists_total",
            "Full lists performed by informers (initial sync, 410 Gone, fallbacks).",
            ("resource",),
            registry=registry,
        )
        self.last_event = Gauge(
            "informer_last_event_timestamp_seconds",
            "Unix time of the last sign of life of an informer (event, bookmark, list, watch).",
            ("resource",),
            registry=registry,
        )
        self.objects = Gauge(
            "informer_objects",
            "Objects currently held in an informer's store.",
            ("resource",),
            registry=registry,
        )
        self.errors = Counter(
            "informer_watch_errors_total",
            "List/watch failures by resource and reason.",
            ("resource", "reason"),
            registry=registry,
        )


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, InformerMetrics] = (
    weakref.WeakKeyDictionary()
)


def informer_metrics(registry: CollectorRegistry | None = None) -> InformerMetrics:
    """The informer metrics registered in ``registry`` (the global default when None)."""
    reg = REGISTRY if registry is None else registry
    found = _BY_REGISTRY.get(reg)
    if found is None:
        found = _BY_REGISTRY[reg] = InformerMetrics(reg)
    return found
