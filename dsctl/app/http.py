"""The operator-facing HTTP endpoints: ``/metrics``, ``/healthz``, ``/readyz``.

Metrics and probes may listen on separate addresses (``:8080`` and ``:8081`` by default), as
controller-runtime does, so a NetworkPolicy can expose one without the other. When both
addresses are equal, one server serves all three paths.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from dsctl.app.health import HealthChecks

__all__ = ["HttpEndpoints", "parse_bind_address"]

log = structlog.get_logger(__name__)


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``":8080"`` → ("0.0.0.0", 8080); ``"127.0.0.1:0"`` → free port; ``"0"`` or "" → disabled."""
    if text in ("", "0"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {text!r} must be host:port or :port")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"bind address {text!r} has a non-numeric port") from None
    return (host.strip("[]") or "0.0.0.0", number)


@dataclass
class HttpEndpoints:
    """Owns the aiohttp runners for metrics and probes; ``start`` then ``stop``."""

    registry: CollectorRegistry
    health: HealthChecks
    metrics_address: str = ":8080"
    probe_address: str = ":8081"
    bound: dict[str, tuple[str, int]] = field(default_factory=dict)
    _runners: list[web.AppRunner] = field(default_factory=list)

    async def _metrics(self, _request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _probe(self, checks_of: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            checks = getattr(self.health, checks_of)
            ok, lines = HealthChecks.evaluate(checks)
            verbose = "verbose" in request.query or not ok
            text = "\n".join([*lines, "ok" if ok else "failed"]) if verbose else "ok"
            return web.Response(status=200 if ok else 500, text=text + "\n")

        return handler

    async def start(self) -> None:
        """Bind the configured addresses. Port 0 picks a free port; see ``bound``."""
        metrics = parse_bind_address(self.metrics_address)
        probes = parse_bind_address(self.probe_address)
        plans: dict[tuple[str, int], list[str]] = {}
        if metrics:
            plans.setdefault(metrics, []).append("metrics")
        if probes:
            plans.setdefault(probes, []).append("probes")
        for address, roles in plans.items():
            app = web.Application()
            if "metrics" in roles:
                app.router.add_get("/metrics", self._metrics)
            if "probes" in roles:
                app.router.add_get("/healthz", self._probe("liveness"))
                app.router.add_get("/livez", self._probe("liveness"))
                app.router.add_get("/readyz", self._probe("readiness"))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, address[0], address[1])
            await site.start()
            self._runners.append(runner)
            port = address[1]
            server = site._server
            if port == 0 and server is not None:
                port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
            for role in roles:
                self.bound[role] = (address[0], port)
            log.info("http_listening", roles=roles, host=address[0], port=port)

    async def stop(self) -> None:
        """Close the servers in reverse order of start."""
        while self._runners:
            await self._runners.pop().cleanup()
