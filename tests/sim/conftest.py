"""Fixtures for the simulator's tests: an in-process cluster reached over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest

from dsctl_sim.cluster import SimCluster, SimOptions


@dataclass
class Api:
    """A running in-process simulator plus a client session for raw API calls."""

    sim: SimCluster
    http: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return self.sim.url

    async def call(self, method: str, path: str, body: Any = None, *,
                   headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """One request; ``(status, decoded JSON)``."""
        data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        async with self.http.request(method, self.url + path, data=data, headers=hdrs) as resp:
            raw = await resp.read()
            return resp.status, orjson.loads(raw) if raw else None

    async def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        """Like ``call`` but fails the test on a non-2xx answer."""
        status, out = await self.call(method, path, body, **kw)
        assert 200 <= status < 300, (status, out)
        return out


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    """A simulator with 3 nodes and no control-plane loops, so objects change only when tests write."""
    sim = SimCluster(SimOptions(nodes=3, control_plane=False, seed=7, bookmark_seconds=0.2))
    await sim.start()
    try:
        async with aiohttp.ClientSession() as http:
            yield Api(sim, http)
    finally:
        await sim.stop()
