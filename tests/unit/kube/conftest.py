"""Fixtures for API-layer tests: a private metrics registry, the fake server, a client for it,
and a leak check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from dsctl.kube import KubeClient, RetryPolicy
from tests.unit.kube.fakeserver import FakeServer, write_kubeconfig


@pytest.fixture
def registry() -> CollectorRegistry:
    """A registry of the test's own, so metric values never leak between tests."""
    return CollectorRegistry()


@pytest.fixture
def retry_policy() -> RetryPolicy:
    """Fast retries (four attempts, 10-20 ms apart); a test module may override this fixture."""
    return RetryPolicy(max_attempts=4, backoff_base=0.01, backoff_cap=0.02)


@pytest.fixture
async def client(
    server: FakeServer, tmp_path: Path, registry: CollectorRegistry, retry_policy: RetryPolicy
) -> AsyncIterator[KubeClient]:
    """A client for the fake server: no client-side rate limit, ``retry_policy``, a private registry."""
    path = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    kube = await KubeClient.from_config(
        kubeconfig=str(path), qps=0, burst=1, retry=retry_policy, registry=registry, environ={}
    )
    try:
        yield kube
    finally:
        await kube.close()


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fail any test that leaves asyncio tasks running when it ends."""
    yield
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not leaked, f"leaked tasks: {leaked}"
