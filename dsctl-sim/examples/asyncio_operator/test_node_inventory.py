"""The kubernetes_asyncio example operator against the ``kube_sim`` fixture, faults included."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from dsctl_sim.process import SimServer

from .node_inventory import LABEL, run


@contextlib.asynccontextmanager
async def running_operator(kubeconfig: Path) -> AsyncIterator[None]:
    """The operator as a task, cancelled and awaited on exit."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api:
        task = asyncio.create_task(run(api), name="example-operator")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _until_labelled(sim: SimServer, name: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, node = await asyncio.to_thread(sim.admin.request, "GET", f"/api/v1/nodes/{name}")
        labels: dict[str, Any] = node.get("metadata", {}).get("labels", {}) if status == 200 else {}
        if labels.get(LABEL) == "true":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"node {name} was not labelled in {timeout} s")


@pytest.mark.kube_sim(nodes=3)
async def test_existing_and_new_nodes_are_labelled(kube_sim: SimServer) -> None:
    """Nodes present at start and nodes added later both get the label."""
    async with running_operator(kube_sim.kubeconfig):
        for name in ("node-0", "node-1", "node-2"):
            await _until_labelled(kube_sim, name)
        await asyncio.to_thread(kube_sim.admin.add_node, "node-new", labels={"pool": "gpu"})
        await _until_labelled(kube_sim, "node-new")


@pytest.mark.kube_sim(nodes=1)
async def test_the_operator_survives_a_compaction(kube_sim: SimServer) -> None:
    """After the watch history is compacted and watches end with 410, the operator lists again."""
    async with running_operator(kube_sim.kubeconfig):
        await _until_labelled(kube_sim, "node-0")
        await asyncio.to_thread(kube_sim.admin.compact, expire_watches=True)
        await asyncio.to_thread(kube_sim.admin.add_node, "node-late")
        await _until_labelled(kube_sim, "node-late")
