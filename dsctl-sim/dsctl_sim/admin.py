"""The simulator's own admin API under ``/sim/``: faults, compaction, the request log, stats.

Not part of Kubernetes; tests and benchmarks use it to change behaviour at run time.
Requests to ``/sim/`` are not themselves recorded in the request log.

| method and path | effect |
|---|---|
| ``GET /sim/faults`` | current fault config (see ``dsctl_sim.faults``) |
| ``PUT /sim/faults`` | replace it (omitted knobs reset to defaults) |
| ``PATCH /sim/faults`` | change only the knobs given |
| ``POST /sim/compact[?expire_watches=true]`` | drop all watch history and list snapshots (open |
|   | continue tokens expire); optionally end open watches with 410 |
| ``POST /sim/drop-watches`` | close every open watch stream (clients re-watch) |
| ``GET /sim/requests?since=N&limit=M`` | request log records after cursor N |
| ``DELETE /sim/requests`` | clear the request log |
| ``GET /sim/stats`` | resourceVersion, object counts, open watches, injected faults, restarts |
| ``POST /sim/restart?seconds=N`` | restart the apiserver: answer 202, then refuse connections for N s |
| ``GET /sim/restarts`` | every restart so far: ``{"down", "up", "seconds"}`` (``up`` 0 while down) |
| ``GET``/``POST /sim/token`` | rotate the accepted bearer token (see ``dsctl_sim.tokens``) |
| ``GET /sim/nodes/{name}/kubelet`` | the node's kubelet: ``{"node", "running", "stoppedAt", "shuttingDown"}`` |
| ``PUT /sim/nodes/{name}/kubelet`` | ``{"running": false}`` stops the kubelet, ``{"running": true}`` starts it |
| ``POST /sim/nodes/{name}/shutdown`` | graceful node shutdown; optional body |
|   | ``{"shutdownGracePeriodSeconds": 3, "shutdownGracePeriodCriticalPodsSeconds": 1}`` |

While a restart is under way the admin API is down with the rest of the server; the request
log, faults and stats are kept, so a test reads them once the server is back. The node
endpoints answer 404 for an unknown node, 409 when no simulated kubelet runs
(``--no-control-plane``) or the kubelet's state forbids the change (a shutdown of a stopped
kubelet, or of one already shutting down).
"""

from __future__ import annotations

import math
from typing import Any

import orjson
from aiohttp import web

from dsctl_sim.controllers.nodeshutdown import DEFAULT_CRITICAL_GRACE_SECONDS, DEFAULT_GRACE_SECONDS
from dsctl_sim.errors import BadRequest, Conflict, MethodNotAllowed, NotFound
from dsctl_sim.faults import FaultConfig
from dsctl_sim.state import ApiState, NodeAgents
from dsctl_sim.tokens import handle_token

__all__ = ["MAX_RESTART_SECONDS", "handle_admin"]

MAX_RESTART_SECONDS = 600.0


def _json(data: object, *, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


async def _read_json(request: web.BaseRequest) -> object:
    try:
        return orjson.loads(await request.read() or b"{}")
    except orjson.JSONDecodeError as err:
        raise BadRequest(f"invalid JSON: {err}") from err


def _int(request: web.BaseRequest, name: str, default: int) -> int:
    text = request.query.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError as err:
        raise BadRequest(f"{name} must be an integer") from err


def _restart(request: web.BaseRequest, state: ApiState) -> web.Response:
    text = request.query.get("seconds", "")
    try:
        seconds = float(text)
    except ValueError as err:
        raise BadRequest(f"seconds must be a number, got {text!r}") from err
    if not 0 <= seconds <= MAX_RESTART_SECONDS:
        raise BadRequest(f"seconds must be between 0 and {MAX_RESTART_SECONDS:g}, got {text}")
    if state.restart is None:
        raise NotFound("this API state is not served by a restartable server")
    if not state.restart(seconds=seconds):
        raise Conflict("a restart is already under way")
    return _json({"downSeconds": seconds, "restarts": len(state.outages) + 1}, status=202)


def _seconds(body: dict[str, Any], name: str, default: float) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BadRequest(f"{name} must be a non-negative number of seconds, got {value!r}")
    return float(value)


async def _node(request: web.BaseRequest, state: ApiState, name: str, action: str) -> web.Response:
    """``/sim/nodes/{name}/kubelet`` and ``/sim/nodes/{name}/shutdown``."""
    kubelets: NodeAgents | None = state.kubelets
    method = request.method
    if action not in ("kubelet", "shutdown"):
        raise NotFound(f"no admin endpoint {method} /sim/nodes/{name}/{action}")
    if (action, method) not in (("kubelet", "GET"), ("kubelet", "PUT"), ("shutdown", "POST")):
        raise MethodNotAllowed(f"{method} /sim/nodes/{name}/{action}")
    if kubelets is None:
        raise Conflict("no simulated kubelet runs in this cluster (it was started without its control plane)")
    if method == "GET":
        if state.storage.get("nodes", None, name) is None:
            raise NotFound.object(plural="nodes", group="", name=name)
        return _json(kubelets.agent_status(name))
    body = await _read_json(request)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if action == "kubelet":
        running = body.get("running")
        if not isinstance(running, bool):
            raise BadRequest(f'"running" must be true or false, got {running!r}')
        return _json(kubelets.set_running(name, running=running))
    grace = _seconds(body, "shutdownGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    critical = _seconds(body, "shutdownGracePeriodCriticalPodsSeconds", min(grace, DEFAULT_CRITICAL_GRACE_SECONDS))
    return _json(kubelets.shutdown(name, grace_seconds=grace, critical_seconds=critical), status=202)


async def handle_admin(request: web.BaseRequest, state: ApiState, parts: list[str]) -> web.Response:
    """Serve ``/sim/<parts...>``."""
    what = "/".join(parts)
    method = request.method
    if what == "faults":
        if method == "GET":
            return _json(state.faults.config.to_json())
        if method in ("PUT", "PATCH"):
            data = await _read_json(request)
            if method == "PATCH":
                if not isinstance(data, dict):
                    raise BadRequest("fault config must be a JSON object")
                data = {**state.faults.config.to_json(), **data}
            state.faults.config = FaultConfig.from_json(data)
            return _json(state.faults.config.to_json())
        raise MethodNotAllowed(f"{method} /sim/faults")
    if what == "compact" and method == "POST":
        rv = state.storage.compact()
        state.paginator.compact()
        expired = 0
        if request.query.get("expire_watches", "").lower() in ("true", "1"):
            for w in state.storage.watchers():
                w.expire()
                expired += 1
        return _json({"resourceVersion": str(rv), "expiredWatches": expired})
    if what == "drop-watches" and method == "POST":
        watchers = state.storage.watchers()
        for w in watchers:
            w.close()
        return _json({"closed": len(watchers)})
    if what == "requests":
        if method == "GET":
            return _json(state.requests.since(_int(request, "since", 0), limit=_int(request, "limit", 10_000)))
        if method == "DELETE":
            state.requests.clear()
            return _json({"next": state.requests.last_seq})
        raise MethodNotAllowed(f"{method} /sim/requests")
    if what == "token":
        return await handle_token(request, state)
    if what == "stats" and method == "GET":
        storage = state.storage
        return _json({
            "resourceVersion": str(storage.resource_version),
            "objects": {rt.key: storage.count(rt.key) for rt in storage.registry},
            "watches": len(storage.watchers()),
            "injectedFaults": state.faults.injected,
            "requests": state.requests.last_seq,
            "restarts": len(state.outages),
        })
    if what == "restart" and method == "POST":
        return _restart(request, state)
    if what == "restarts" and method == "GET":
        return _json({"items": list(state.outages)})
    if len(parts) == 3 and parts[0] == "nodes" and parts[1]:
        return await _node(request, state, parts[1], parts[2])
    raise NotFound(f"no admin endpoint {method} /sim/{what}")
