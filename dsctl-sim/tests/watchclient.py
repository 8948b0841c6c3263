"""A tiny watch-stream reader for the simulator's tests (raw NDJSON over aiohttp)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import orjson

__all__ = ["read_watch"]


async def read_watch(
    http: aiohttp.ClientSession,
    url: str,
    *,
    stop: Callable[[list[dict[str, Any]]], bool] | None = None,
    timeout: float = 10.0,
) -> tuple[int, list[dict[str, Any]]]:
    """Read watch events from ``url`` until ``stop(events)`` is true or the stream ends.

    Returns the HTTP status and the events (for a non-200 answer, the Status body as the only
    item). Fails the test if ``stop`` is given and not satisfied within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    events: list[dict[str, Any]] = []
    async with http.get(url) as resp:
        if resp.status != 200:
            return resp.status, [orjson.loads(await resp.read())]
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"watch {url} did not reach its condition in {timeout}s: {events}")
            try:
                line = await asyncio.wait_for(resp.content.readline(), remaining)
            except TimeoutError:
                continue
            if not line:
                if stop is not None and not stop(events):
                    raise AssertionError(f"watch {url} ended before its condition: {events}")
                return resp.status, events
            if line.strip():
                events.append(orjson.loads(line))
            if stop is not None and stop(events):
                return resp.status, events
