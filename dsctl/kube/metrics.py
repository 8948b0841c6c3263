"""Prometheus metrics of the API client: every HTTP attempt, by verb, resource and code.

Metric objects are created once per registry and shared by every client using that registry,
because prometheus_client refuses to register the same name twice in one registry.
"""

from __future__ import annotations

import weakref
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

__all__ = ["CONNECTION_ERROR_CODE", "ClientMetrics", "client_metrics"]

CONNECTION_ERROR_CODE = "<error>"
"""The ``code`` label of an attempt that got no HTTP status (refused, reset, timed out)."""

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ClientMetrics:
    """``rest_client_requests_total{verb,resource,code}``, the latency histogram, the rate
    limiter's waits and ``rest_client_exec_plugin_call_total``.

    Each attempt counts, retries included, so the counter matches what the server saw.
    The histogram measures until the body was read (until the headers for watches).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests_total",
            "HTTP requests sent to the API server, by verb, resource and status code.",
            ("verb", "resource", "code"),
            registry=registry,
        )
        self.duration = Histogram(
            "rest_client_request_duration_seconds",
            "Latency of API requests (watches: until the response headers).",
            ("verb", "resource"),
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.rate_limit_wait = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Time requests waited in the client-side token bucket.",
            ("verb",),
            buckets=(0.0, 0.001, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0),
            registry=registry,
        )

        self.exec_plugin_calls = Counter(
            "rest_client_exec_plugin_call_total",
            "Runs of the exec credential plugin, by call_status (no_error, plugin_execution_error, "
            "plugin_not_found_error, client_internal_error) and exit code (0 only on success).",
            ("code", "call_status"),
            registry=registry,
        )

        # Labelled children by label values: ``labels()`` takes a lock and builds a key on every
        # call, a cost paid on every request. The label sets are few
        # (verbs x resources x codes), and a child stays valid as long as its parent.
        self._attempts: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self._waits: dict[str, Any] = {}

    def exec_plugin_call(self, code: int, call_status: str) -> None:
        """Record one run of an exec credential plugin (client-go's labels)."""
        self.exec_plugin_calls.labels(code=str(code), call_status=call_status).inc()

    def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
        """Record one attempt."""
        children = self._attempts.get((verb, resource, code))
        if children is None:
            children = self._attempts[(verb, resource, code)] = (
                self.requests.labels(verb=verb, resource=resource, code=code),
                self.duration.labels(verb=verb, resource=resource),
            )
        children[0].inc()
        children[1].observe(seconds)

    def rate_limited(self, *, verb: str, seconds: float) -> None:
        """Record how long one attempt waited in the token bucket."""
        child = self._waits.get(verb)
        if child is None:
            child = self._waits[verb] = self.rate_limit_wait.labels(verb=verb)
        child.observe(seconds)


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, ClientMetrics] = (
    weakref.WeakKeyDictionary()
)


def client_metrics(registry: CollectorRegistry | None = None) -> ClientMetrics:
    """The client metrics registered in ``registry`` (the global default when None)."""
    reg = REGISTRY if registry is None else registry
    found = _BY_REGISTRY.get(reg)
    if found is None:
        found = _BY_REGISTRY[reg] = ClientMetrics(reg)
    return found
