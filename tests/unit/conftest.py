"""Fixtures shared by the unit tests of more than one package."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.kube.fakeserver import FakeServer


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    """A scriptable HTTP server on 127.0.0.1 (the transport seam of dsctl.kube and its users)."""
    fake = FakeServer()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()
