"""Polling with a deadline: the only way tests wait for the cluster to reach a state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = 30.0,
    interval: float = 0.1,
    message: str = "condition",
) -> T:
    """Await ``probe()`` until it returns a truthy value; fail with the last value after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        value = await probe()
        last = value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {message}; last: {last!r}")
        await asyncio.sleep(interval)
