"""Fixtures for integration tests: a simulated cluster, an API client, the controller process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsctl.kube.client import KubeClient
from tests.conftest import CALL_FAILED
from tests.support.controllerproc import ControllerProcess
from tests.support.requestaudit import record_controller_requests
from tests.support.simproc import SimProcess

LOG_TAIL = 600
"""Lines of the controller's log a failed test prints."""


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[SimProcess]:
    """A simulated cluster; parametrize indirectly with a dict of SimProcess keyword arguments."""
    options = dict(getattr(request, "param", {}) or {})
    options.setdefault("nodes", 5)
    args = list(options.pop("args", []))
    if "--pod-startup-seconds" not in args:
        args += ["--pod-startup-seconds", "0.2"]
    async with SimProcess(args=args, **options) as cluster:
        yield cluster
        await record_controller_requests(cluster, source=request.node.nodeid)


@pytest.fixture
async def kube(sim: SimProcess) -> AsyncIterator[KubeClient]:
    """A client for the test itself (not the controller's), generous on rate limits."""
    client = await KubeClient.from_config(kubeconfig=str(sim.kubeconfig), qps=500, burst=1000)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def controller(sim: SimProcess, request: pytest.FixtureRequest) -> AsyncIterator[ControllerProcess]:
    """The real controller, as its own process, against the simulated cluster.

    When the test fails, the tail of the controller's log goes to the report (captured stdout of
    the teardown), so a failure seen once in CI leaves its evidence behind.
    """
    async with ControllerProcess(str(sim.kubeconfig)) as proc:
        yield proc
        if request.node.stash.get(CALL_FAILED, False):
            print(f"--- last {LOG_TAIL} lines of the controller's log ---", *proc.raw[-LOG_TAIL:], sep="\n")
        assert not proc.errors(), f"controller logged errors: {proc.errors()[:5]}"

