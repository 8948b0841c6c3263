"""The bearer tokens the simulated API server accepts, and their rotation at run time.

With ``--token`` the server accepts one token; ``POST /sim/token`` rotates it, as a real cluster
does when a service-account token is re-issued, a kubeconfig's token is revoked or an IdP
issues a new id-token. Body: ``{"token": "<new>", "graceSeconds": G}``. The new token is
accepted from then on; every other token accepted until then stays accepted for at most ``G``
more seconds (default 0: rejected at once with 401). So a test can rotate in two steps, the way
kubelet-projected tokens overlap: first with a long grace (both work), then, once the client
has been given the new token, again with ``graceSeconds: 0`` (the old one is revoked).

Tokens are never echoed back: ``GET /sim/token`` says only how many are accepted and how many
rotations happened.
"""

from __future__ import annotations

import math

import orjson
from aiohttp import web

from dsctl_sim.errors import BadRequest, MethodNotAllowed
from dsctl_sim.state import ApiState

__all__ = ["accepts", "handle_token", "rotate"]


def accepts(state: ApiState, presented: str) -> bool:
    """Whether the bearer token ``presented`` authenticates (any token does without ``--token``)."""
    if state.token is None or presented == state.token:
        return True
    deadline = state.retired_tokens.get(presented)
    return deadline is not None and state.now() < deadline


def rotate(state: ApiState, token: str, *, grace_seconds: float) -> None:
    """Accept ``token`` from now on; other accepted tokens expire within ``grace_seconds``."""
    now = state.now()
    until = now + grace_seconds
    retired = {old: min(deadline, until) for old, deadline in state.retired_tokens.items() if deadline > now}
    if state.token is not None and state.token != token:
        retired[state.token] = until
    retired.pop(token, None)
    state.retired_tokens = {old: deadline for old, deadline in retired.items() if deadline > now}
    state.token = token
    state.token_rotations += 1


def _status(state: ApiState) -> web.Response:
    now = state.now()
    body = {
        "accepting": 0 if state.token is None else 1 + sum(1 for d in state.retired_tokens.values() if d > now),
        "anyToken": state.token is None,
        "rotations": state.token_rotations,
    }
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def handle_token(request: web.BaseRequest, state: ApiState) -> web.Response:
    """Serve ``/sim/token``: GET reports, POST rotates (see the module docstring)."""
    if request.method == "GET":
        return _status(state)
    if request.method != "POST":
        raise MethodNotAllowed(f"{request.method} /sim/token")
    try:
        data = orjson.loads(await request.read() or b"{}")
    except orjson.JSONDecodeError as err:
        raise BadRequest(f"invalid JSON: {err}") from err
    token = data.get("token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token.strip() or token != token.strip():
        raise BadRequest("token must be a non-empty string without surrounding whitespace")
    grace = data.get("graceSeconds", 0)
    if isinstance(grace, bool) or not isinstance(grace, int | float) or not math.isfinite(grace) or grace < 0:
        raise BadRequest("graceSeconds must be a non-negative number")
    rotate(state, token, grace_seconds=float(grace))
    return _status(state)
