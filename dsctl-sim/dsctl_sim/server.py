"""The simulated kube-apiserver: an aiohttp application over one ``Storage``.

Routing is done here by hand over the split path (``/api``, ``/apis``, ``/openapi``,
``/version``, health checks, ``/metrics``, and the simulator's ``/sim/`` admin API) rather than with one
aiohttp route per resource, because CRDs add resources at run time. One handler wraps
every request: it renders ``StorageError`` as a ``Status`` body, injects the configured
faults into resource requests, adds the request's API warnings as ``Warning`` headers (to
failures too, as kube-apiserver does), and appends the request to the request log.

``SimServer`` owns the runner: ``await start(host=, port=)`` returns the URL (port 0 picks a
free port) and ``await stop()`` ends every watch stream and closes the listener.

``schedule_restart(seconds=)`` simulates a kube-apiserver restart: open watches are cut, the
listening socket is really closed (clients get ``connection refused``, pooled keep-alive
connections are reset), and after ``seconds`` the server listens again on the same address and
port. Storage is untouched, so every object comes back with the same resourceVersion and a
watch can resume from where it was cut, as it can after a real restart over the same etcd.
The control-plane loops keep running meanwhile, like kubelets and etcd behind a restarting
apiserver. The restart is a task owned by the server (``sim-apiserver-restart``); ``stop``
cancels it. Each outage is recorded in ``ApiState.outages`` so tests can line it up with the
request log, which survives the restart.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import structlog
from aiohttp import web

from dsctl_sim import discovery_routes
from dsctl_sim.admin import handle_admin
from dsctl_sim.apiwarnings import attach_warnings
from dsctl_sim.errors import NotFound, StorageError, Unauthorized, status_body
from dsctl_sim.handlers import handle_resource, json_response
from dsctl_sim.metrics import CONTENT_TYPE, SimMetrics
from dsctl_sim.routing import RequestInfo, parse_resource_path
from dsctl_sim.state import ApiState
from dsctl_sim.tokens import accepts

__all__ = ["SimServer", "build_server"]

log = structlog.get_logger(__name__)

_INFO: web.RequestKey[RequestInfo] = web.RequestKey("sim_request_info", RequestInfo)
_MAX_BODY = 64 * 1024 * 1024
# Paths behind --token. Health, /version and /metrics stay open, as kube-apiserver serves
# health and version to anyone. The /sim admin API can break the cluster (faults, compaction),
# so it needs the token too.
_AUTHENTICATED = frozenset({"api", "apis", "openapi", "sim"})


def _error_response(err: StorageError) -> web.Response:
    resp = web.Response(body=orjson.dumps(err.to_status()), status=err.code, content_type="application/json")
    retry = getattr(err, "retry_after", None)
    if retry is not None:
        resp.headers["Retry-After"] = str(retry)
    return resp


def _record(request: web.BaseRequest, state: ApiState, code: int, started: float) -> None:
    if request.path.startswith("/sim/"):
        return  # the admin API is the observer, not part of the observed traffic
    info: RequestInfo | None = request.get(_INFO)
    if info is None:
        verb, group, resource, sub, ns, name = request.method.lower(), "", "", "", "", ""
    else:
        verb, group, resource = info.verb, info.rt.group, info.rt.plural
        sub, ns, name = info.subresource or "", info.namespace or "", info.name or ""
    if state.metrics is not None:
        state.metrics.observe(verb=verb, resource=f"{resource}/{sub}" if sub else resource, code=code,
                              seconds=time.monotonic() - started)
    state.requests.add(
        method=request.method, path=request.path, verb=verb, group=group, resource=resource, subresource=sub,
        namespace=ns, name=name, code=code, user_agent=request.headers.get("User-Agent", ""),
        latency_ms=(time.monotonic() - started) * 1000.0,
    )


async def _handle(request: web.BaseRequest, state: ApiState) -> web.StreamResponse:
    """Serve one request: dispatch, render errors as Status, log it."""
    started = time.monotonic()
    try:
        resp = await _dispatch(request, state)
    except StorageError as err:
        _record(request, state, err.code, started)
        failed = _error_response(err)
        attach_warnings(request, failed)
        return failed
    except asyncio.CancelledError:
        raise
    except Exception as err:
        log.exception("sim_request_failed", method=request.method, path=request.path)
        _record(request, state, 500, started)
        body = status_body(code=500, reason="InternalError", message=f"internal error: {err!r}")
        return web.Response(body=orjson.dumps(body), status=500, content_type="application/json")
    attach_warnings(request, resp)
    info: RequestInfo | None = request.get(_INFO)
    if info is None or info.verb != "watch":
        _record(request, state, resp.status, started)
    return resp


def _version(state: ApiState) -> dict[str, str]:
    base = {
        "major": "1", "minor": "36", "gitVersion": "v1.36.0-dsctl-sim", "gitCommit": "0" * 40,
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "python",
        "compiler": "cpython", "platform": "linux/amd64",
    }
    return {**base, **state.version}


def _authenticate(request: web.BaseRequest, state: ApiState) -> None:
    if state.token is None:
        return
    given = request.headers.get("Authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not accepts(state, value.strip()):
        raise Unauthorized("Unauthorized")


async def _dispatch(request: web.BaseRequest, state: ApiState) -> web.StreamResponse:
    parts = [p for p in request.path.split("/") if p]
    head = parts[0] if parts else ""
    if head in _AUTHENTICATED:
        _authenticate(request, state)
    if head in ("healthz", "readyz", "livez"):
        return web.Response(text="ok")
    if head == "metrics" and len(parts) == 1 and state.metrics is not None:
        return web.Response(body=state.metrics.render(), headers={"Content-Type": CONTENT_TYPE})
    if head == "version" and len(parts) == 1:
        return json_response(dict(_version(state)))
    if head == "sim":
        return await handle_admin(request, state, parts[1:])
    if head == "api" and len(parts) > 2:
        return await _resource(request, state, ["", *parts[1:]])
    if head == "apis" and len(parts) > 3:
        return await _resource(request, state, parts[1:])
    if request.method == "GET":
        found = discovery_routes.serve(request, state.storage.registry, parts)
        if found is not None:
            return found
    raise NotFound("the server could not find the requested resource")


async def _resource(request: web.BaseRequest, state: ApiState, parts: list[str]) -> web.StreamResponse:
    info = parse_resource_path(state.storage.registry, parts, method=request.method,
                               watch=request.query.get("watch"))
    request[_INFO] = info
    faults = state.faults
    delay = faults.latency_seconds(info.verb, info.resource, info.rt.group)
    if delay > 0:
        await asyncio.sleep(delay)
    injected = faults.error_for(info.verb, info.resource, info.rt.group)
    if injected is not None:
        raise injected
    if info.verb == "watch":
        _record(request, state, 200, time.monotonic())
    return await handle_resource(request, state, info)


def build_server(state: ApiState) -> web.Server:
    """The low-level aiohttp server serving ``state``.

    No ``web.Application``: one handler routes every path itself, which skips aiohttp's
    router and middleware chain on the create hot path.
    """

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        return await _handle(request, state)

    def request_factory(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop(),
                               client_max_size=_MAX_BODY)

    return web.Server(handler, request_factory=request_factory, handler_cancellation=True, access_log=None)


class SimServer:
    """Runs the API server application on a TCP port until ``stop``.

    Invariant: at most one restart task exists; while it runs the listener is closed between
    its ``down`` and ``up`` moments and ``state.stopping`` is True, so no watch is served.
    """

    def __init__(self, state: ApiState) -> None:
        self.state = state
        if state.metrics is None:
            state.metrics = SimMetrics(state.storage, state.faults)
        state.restart = self.schedule_restart
        self._runner: web.ServerRunner | None = None
        self._restart: asyncio.Task[None] | None = None
        self._host = "127.0.0.1"
        self._port = 0
        self.url = ""

    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen; returns ``http://host:port`` with the real port."""
        self._host = host
        self._port = await self._listen(host, port)
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self._port}"
        log.info("sim_api_listening", url=self.url)
        return self.url

    async def _listen(self, host: str, port: int) -> int:
        runner = web.ServerRunner(build_server(self.state), shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=1024, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.state.stopping = False
        addresses: list[Any] = list(runner.addresses)
        return int(addresses[0][1]) if addresses else port

    async def _close(self) -> None:
        self.state.stopping = True
        self.state.storage.close_watchers()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    def schedule_restart(self, *, seconds: float, delay: float = 0.1) -> bool:
        """Go down after ``delay`` (so the admin answer is sent first) for ``seconds``, then
        listen again on the same port. False when a restart is already under way."""
        if self._restart is not None and not self._restart.done():
            return False
        self._restart = asyncio.create_task(self._restart_after(seconds=seconds, delay=delay),
                                            name="sim-apiserver-restart")
        return True

    async def _restart_after(self, *, seconds: float, delay: float) -> None:
        await asyncio.sleep(delay)
        down = time.time()
        log.warning("sim_api_going_down", url=self.url, down_seconds=seconds)
        await self._close()
        outage = {"down": down, "up": 0.0, "seconds": seconds}
        self.state.outages.append(outage)
        await asyncio.sleep(seconds)
        # The port may be briefly held by a connection still closing; keep trying, as a
        # restarting apiserver would, rather than give up the cluster.
        while True:
            try:
                await self._listen(self._host, self._port)
                break
            except OSError as err:
                log.warning("sim_api_rebind_failed", port=self._port, error=str(err))
                await asyncio.sleep(0.2)
        outage["up"] = time.time()
        log.warning("sim_api_back", url=self.url, outage_seconds=round(outage["up"] - down, 3))

    async def stop(self) -> None:
        """End watch streams, then close the listener and open connections."""
        task, self._restart = self._restart, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self._close()
