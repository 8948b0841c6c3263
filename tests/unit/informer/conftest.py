"""Fixtures for informer tests: a private metrics registry and a leak check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry


@pytest.fixture
def registry() -> CollectorRegistry:
    """A registry of the test's own, so metric values never leak between tests."""
    return CollectorRegistry()


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fail any test that leaves asyncio tasks running when it ends."""
    yield
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not leaked, f"leaked tasks: {leaked}"
