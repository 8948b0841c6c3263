"""``Api``: an in-process simulator and a client session for raw API calls, used by the simulator's tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from dsctl_sim.cluster import SimCluster


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
