"""The operator-facing HTTP endpoints: ``/metrics``, ``/healthz``, ``/readyz``.

Metrics and probes may listen on separate addresses (``:8080`` and ``:8081`` by default), as
controller-runtime does, so a NetworkPolicy can expose one without the other. When both
addresses are equal, one server serves all three paths.

``:PORT`` listens on every address family the host has, IPv4 (``0.0.0.0``) and IPv6 (``::``,
with ``IPV6_V6ONLY``), on the same port, as Go's ``net.Listen("tcp", ":8080")`` does for
controller-runtime: probes must answer on IPv6-only clusters too. Addresses are checked in two
steps, both before the controller talks to the API server: ``parse_bind_address`` (syntax, port
range) from the settings, then ``check_bindable`` (a real bind, released at once) from the CLI.
A failure is a ``BindError``: one line naming the flag, the value, the OS's reason and a hint.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from dsctl.app.health import HealthChecks
from dsctl.kube.errors import ConfigError

__all__ = ["BindError", "HttpEndpoints", "bind_sockets", "build_registry", "check_bindable", "parse_bind_address"]

log = structlog.get_logger(__name__)


def build_registry() -> CollectorRegistry:
    """The registry ``/metrics`` serves, with the process metrics every Go controller exports:
    ``process_*`` (resident memory, CPU seconds, open fds, start time), ``python_gc_*`` and
    ``python_info``. A private registry, so tests can run several controllers in one process."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


class BindError(ConfigError):
    """An address that cannot be listened on; the message is one line with the value and a hint.

    A ``ConfigError``, so ``dsctl run`` reports it as a configuration error with exit code 2.
    """


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``":8080"`` → ("", 8080), every address family; ``"[::1]:0"`` → ("::1", 0), a free port;
    ``"0"`` or "" → disabled. Raises ``ValueError`` saying what is wrong and what is expected."""
    if text in ("", "0"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"{text!r} is not host:port or :port (for example :8080 or 127.0.0.1:8080; '0' disables)")
    if not port.isascii() or not port.isdigit():
        raise ValueError(f"{text!r} has a non-numeric port {port!r} (for example :8080)")
    number = int(port)
    if number > 65535:
        raise ValueError(f"{text!r} has port {number}, outside 0-65535 (0 picks a free port)")
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"{text!r}: an IPv6 host must be in brackets, as [::1]:8080")
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 host in brackets, as [{host}]:{port}")
    return (host, number)


def _listen(family: socket.AddressFamily, address: tuple[str, int]) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            # One socket per family, as Go does on Linux when dual-stack is not asked for by
            # name: the IPv4 socket keeps IPv4 addresses in their own form.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


_NO_FAMILY = (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL, errno.EPROTONOSUPPORT)


def bind_sockets(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for ``host:port``; an empty host means every address family.

    With an empty host, IPv4 is bound first and IPv6 on the same port (so ``:0`` gives one
    port for both); a family the kernel lacks is skipped, and at least one must bind.
    Raises ``OSError`` (or ``socket.gaierror`` for an unknown host name).
    """
    if host:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        family, sockaddr = info[0], info[4]
        return [_listen(family, (str(sockaddr[0]), int(sockaddr[1])))]
    sockets: list[socket.socket] = []
    first_error: OSError | None = None
    for family, wildcard in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        if family == socket.AF_INET6 and not socket.has_ipv6:
            continue
        try:
            sockets.append(_listen(family, (wildcard, port)))
        except OSError as exc:
            if exc.errno not in _NO_FAMILY:
                for sock in sockets:
                    sock.close()
                raise
            first_error = first_error or exc
            continue
        port = sockets[0].getsockname()[1]
    if not sockets:
        assert first_error is not None
        raise first_error
    return sockets


def _bind_error(flag: str, text: str, exc: OSError) -> BindError:
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        hint = f"another process listens there; choose another port with {flag}, or '0' to disable"
    elif exc.errno == errno.EADDRNOTAVAIL:
        hint = f"that address is not on this host; use :PORT (every address) or a local address with {flag}"
    elif exc.errno == errno.EACCES:
        hint = f"ports below 1024 need privileges; use a higher port with {flag}"
    elif isinstance(exc, socket.gaierror):
        hint = f"the host name does not resolve; use an IP address or :PORT with {flag}"
    else:
        hint = f"check the address given with {flag}"
    return BindError(f"{flag} {text!r}: cannot listen: {' '.join(reason.split())}; {hint}")


def check_bindable(addresses: dict[str, str]) -> None:
    """Bind each ``{flag: address}`` once and release it; raises ``BindError`` for the first
    that fails. Run before anything talks to the network, so a bad address is reported
    first and alone. Equal addresses are checked once (one server serves both)."""
    seen: set[tuple[str, int]] = set()
    for flag, text in addresses.items():
        try:
            parsed = parse_bind_address(text)
        except ValueError as exc:
            raise BindError(f"{flag}: {exc}") from None
        if parsed is None or parsed in seen:
            continue
        seen.add(parsed)
        try:
            sockets = bind_sockets(*parsed)
        except OSError as exc:
            raise _bind_error(flag, text, exc) from None
        for sock in sockets:
            sock.close()


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
        texts = {"metrics": ("--metrics-bind-address", self.metrics_address),
                 "probes": ("--health-probe-bind-address", self.probe_address)}
        if metrics:
            plans.setdefault(metrics, []).append("metrics")
        if probes:
            plans.setdefault(probes, []).append("probes")
        for address, roles in plans.items():
            try:
                sockets = bind_sockets(*address)
            except OSError as exc:
                raise _bind_error(*texts[roles[0]], exc) from None
            app = web.Application()
            if "metrics" in roles:
                app.router.add_get("/metrics", self._metrics)
            if "probes" in roles:
                app.router.add_get("/healthz", self._probe("liveness"))
                app.router.add_get("/livez", self._probe("liveness"))
                app.router.add_get("/readyz", self._probe("readiness"))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            self._runners.append(runner)
            for sock in sockets:
                await web.SockSite(runner, sock).start()
            port = int(sockets[0].getsockname()[1])
            host = address[0] or "0.0.0.0"
            for role in roles:
                self.bound[role] = (host, port)
            log.info("http_listening", roles=roles, hosts=[s.getsockname()[0] for s in sockets], port=port)

    async def stop(self) -> None:
        """Close the servers in reverse order of start."""
        while self._runners:
            await self._runners.pop().cleanup()
