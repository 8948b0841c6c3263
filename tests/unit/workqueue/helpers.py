"""Polling helpers: wait for a condition with a deadline instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def eventually(condition: Callable[[], bool], *, within: float = 5.0) -> None:
    """Yield to the loop until ``condition()`` holds; fail after ``within`` real seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(0)


async def settle(rounds: int = 10) -> None:
    """Let every ready task run a few steps (used to show that something did NOT happen)."""
    for _ in range(rounds):
        await asyncio.sleep(0)
