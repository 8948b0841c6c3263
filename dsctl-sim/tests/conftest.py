"""Fixtures for the simulator's tests: an in-process cluster reached over real HTTP.

This folder is not a package: pytest puts it on ``sys.path``, so the tests import their helpers
(``simapi``, ``watchclient``) by bare name, and its module names never collide with the
controller's ``tests`` package.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from dsctl_sim.cluster import SimCluster, SimOptions
from simapi import Api


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
