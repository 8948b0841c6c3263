"""The client-side token bucket, measured from the simulator's request log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from dsctl.kube import NODES, KubeClient
from tests.support.simproc import SimProcess

QPS = 10.0
BURST = 5
REQUESTS = 45


@pytest.fixture
async def cluster() -> AsyncIterator[SimProcess]:
    """A small simulator without control loops."""
    async with SimProcess(nodes=2, args=["--no-control-plane"]) as sim:
        yield sim


async def test_qps_and_burst_are_honoured(cluster: SimProcess) -> None:
    """45 concurrent gets at qps=10/burst=5: a burst of 5, then 10 per second, seen server-side."""
    client = await KubeClient.from_config(kubeconfig=cluster.kubeconfig, qps=QPS, burst=BURST,
                                          registry=CollectorRegistry(), user_agent="qps-test")
    try:
        await asyncio.gather(*(client.get(NODES, "node-0") for _ in range(REQUESTS)))
    finally:
        await client.close()
    log = await cluster.requests(since=0)
    times = sorted(r["time"] for r in log["items"] if r.get("user_agent") == "qps-test")
    assert len(times) == REQUESTS
    # No one-second window holds more than burst + qps requests.
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest <= BURST + QPS + 1
    # After the burst, the sustained rate is the configured QPS.
    paced = times[BURST:]
    rate = (len(paced) - 1) / (paced[-1] - paced[0])
    assert QPS * 0.8 <= rate <= QPS * 1.1, rate
