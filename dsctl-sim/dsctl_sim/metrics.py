"""Prometheus metrics of the simulated API server, served at ``GET /metrics``.

Named after kube-apiserver's own where one exists, with a ``sim_`` prefix so nobody mistakes
them for a real control plane's: requests by verb, resource and code with their latency, the
delay between a change and its watch streams sending it, plus object counts, open watches, the
current resourceVersion and injected faults read live from storage at scrape time. Each server
has its own registry, so several simulators can run in one process (tests) without clashing.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from dsctl_sim.faults import Faults
from dsctl_sim.storage import Storage

__all__ = ["CONTENT_TYPE", "SimMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _StateCollector(Collector):
    def __init__(self, storage: Storage, faults: Faults) -> None:
        self._storage = storage
        self._faults = faults

    def collect(self) -> Iterator[GaugeMetricFamily]:
        storage = self._storage
        objects = GaugeMetricFamily("sim_apiserver_storage_objects", "Stored objects by resource.",
                                    labels=["resource"])
        for rt in storage.registry:
            objects.add_metric([rt.group_resource], storage.count(rt.key))
        yield objects
        yield GaugeMetricFamily("sim_apiserver_watches", "Open watch streams.", value=len(storage.watchers()))
        yield GaugeMetricFamily("sim_apiserver_resource_version", "Newest resourceVersion.",
                                value=storage.resource_version)
        yield GaugeMetricFamily("sim_apiserver_injected_faults", "Requests failed on purpose so far.",
                                value=self._faults.injected)


class SimMetrics:
    """The metrics of one simulated API server."""

    def __init__(self, storage: Storage, faults: Faults) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sim_apiserver_request", "API requests by verb, resource and HTTP code.",
            ["verb", "resource", "code"], registry=self.registry,
        )
        self.latency = Histogram(
            "sim_apiserver_request_duration_seconds", "API request latency (watch: until the stream starts).",
            ["verb"], buckets=_BUCKETS, registry=self.registry,
        )
        self.watch_delivery = Histogram(
            "sim_apiserver_watch_delivery_seconds",
            "From a change being queued for a watch stream to the stream sending it: observed once "
            "per batch sent, for the batch's oldest change.",
            ["resource"], buckets=_BUCKETS, registry=self.registry,
        )
        self.registry.register(_StateCollector(storage, faults))

    def observe(self, *, verb: str, resource: str, code: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(verb, resource, str(code)).inc()
        self.latency.labels(verb).observe(seconds)

    def watch_delivered(self, *, resource: str, seconds: float) -> None:
        """A watch stream sent a batch whose oldest change had waited ``seconds``."""
        self.watch_delivery.labels(resource).observe(seconds)

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
