"""Shared fixtures for the work-queue tests: a fake clock, a private registry, and a leak check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from dsctl.workqueue import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock starting at t=1000 (not 0, so no code can get away with treating 0 as 'unset')."""
    return FakeClock(start=1000.0)


@pytest.fixture
def registry() -> CollectorRegistry:
    """A registry of the test's own, so metric values never leak between tests."""
    return CollectorRegistry()


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fail any test that leaves asyncio tasks running when it ends."""
    yield
    current = asyncio.current_task()
    leaked = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    for task in leaked:
        task.cancel()
    assert not leaked, f"test leaked tasks: {leaked}"
