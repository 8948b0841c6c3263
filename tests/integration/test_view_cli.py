"""``dsctl view`` from its command line against the simulator: both modes, the plan overlay, bad input."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, crd_daemonsets
from dsctl.view.cells import Cell, Gate, State
from tests.support.builders import daemonset
from tests.support.crdfiles import CRD_FILE
from tests.support.poll import eventually
from tests.support.simproc import SimProcess
from tests.support.viewproc import ViewProcess

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)


async def _snapshot(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(url + "api/snapshot") as response:
        assert response.status == 200
        body: dict[str, Any] = await response.json()
        return body


async def _synced(url: str, keys: list[str]) -> dict[str, Any] | None:
    snap = await _snapshot(url)
    return snap if snap["synced"] and [d["key"] for d in snap["daemonsets"]] == keys else None


async def test_crd_mode_shows_custom_daemonsets(sim: SimProcess, kube: KubeClient) -> None:
    """--resource dsctl.io/v1 shows dsctl's custom DaemonSets (and not the apps/v1 ones)."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))
    await eventually(lambda: _served(sim), message="the CRD served")
    await kube.create(crd_daemonsets(), daemonset("custom", api_version="dsctl.io/v1"), namespace="default")
    await kube.create(DAEMONSETS, daemonset("builtin"), namespace="default")
    async with ViewProcess(str(sim.kubeconfig), args=["--resource", "dsctl.io/v1"]) as view:
        snap = await eventually(lambda: _synced(view.url, ["default/custom"]), message="the custom DaemonSet")
        assert snap["resource"] == "dsctl.io/v1"
        # No controller runs here: every eligible node is missing its pod.
        assert snap["cells"] == [[Cell(State.MISSING).code] * 3]
    async with ViewProcess(str(sim.kubeconfig)) as view:
        await eventually(lambda: _synced(view.url, ["default/builtin"]), message="the apps/v1 DaemonSet only")


async def _served(sim: SimProcess) -> bool:
    return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0


async def test_plan_overlay(sim: SimProcess, kube: KubeClient, tmp_path: Path) -> None:
    """--plan puts each node's planned wave beside its cell, aligned with the grid's nodes."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"daemonsets": [{"namespace": "default", "name": "agent", "update": {"waves": [
        {"wave": 1, "nodes": ["node-0", "node-2"]}, {"wave": 2, "nodes": ["node-1"]}]}}]}))
    async with ViewProcess(str(sim.kubeconfig), args=["--plan", str(plan)]) as view:
        snap = await eventually(lambda: _synced(view.url, ["default/agent"]), message="the DaemonSet")
        assert snap["nodes"] == ["node-0", "node-1", "node-2"]
        assert snap["plan"] == {"source": "plan.json", "maxWave": 2, "waves": [[1, 2, 1]], "unmatched": []}


@pytest.mark.parametrize(("args", "expected"), [
    pytest.param([], Cell(State.MISSING, gated=Gate.YES), id="default-taint-tolerated"),
    pytest.param(["--readiness-taint", "example.com/other:NoSchedule"], Cell(State.NOT_WANTED), id="another-taint"),
    pytest.param(["--readiness-taint", ""], Cell(State.NOT_WANTED), id="no-gate"),
])
async def test_readiness_taint_option(sim: SimProcess, kube: KubeClient, args: list[str], expected: Cell) -> None:
    """--readiness-taint (dsctl run's default and parser): the node carrying the controller's taint still
    wants the pod, as every pod the controller makes tolerates it; any other taint keeps it off."""
    await kube.patch(NODES, "node-1", {"spec": {"taints": [{"key": "dsctl.io/agents-not-ready",
                                                            "effect": "NoSchedule"}]}})
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    async with ViewProcess(str(sim.kubeconfig), args=args) as view:
        snap = await eventually(lambda: _synced(view.url, ["default/agent"]), message="the DaemonSet")
        assert [Cell.decode(c) for c in snap["cells"][0]] == [Cell(State.MISSING), expected, Cell(State.MISSING)]


async def _run(*args: str, timeout: float = 30) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "dsctl", "view", *args,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(timeout):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, (out + err).decode()


@pytest.mark.parametrize(("case", "code", "message"), [
    pytest.param("plan-missing", 2, "dsctl view: --plan {tmp}/nope.json: cannot read it", id="plan-missing"),
    pytest.param("plan-invalid", 2, "dsctl view: --plan bad.json: $.daemonsets: must be a list", id="plan-invalid"),
    pytest.param("no-crd", 1, "the CustomResourceDefinition daemonsets.dsctl.io is not installed", id="no-crd"),
    pytest.param("port-busy", 2, "cannot listen", id="port-busy"),
    pytest.param("bad-port", 2, "--port: must be between 0 and 65535: 70000", id="bad-port"),
    pytest.param("bad-taint", 2, "--readiness-taint: effect must be one of", id="bad-taint"),
])
async def test_bad_input_is_one_line(sim: SimProcess, tmp_path: Path, case: str, code: int, message: str) -> None:
    """Bad input ends in one line naming the problem, and a non-zero exit; nothing keeps running."""
    args = ["--kubeconfig", str(sim.kubeconfig), "--port", "0"]
    busy = socket.socket()
    try:
        if case == "plan-missing":
            args += ["--plan", str(tmp_path / "nope.json")]
        elif case == "plan-invalid":
            (tmp_path / "bad.json").write_text('{"daemonsets": {}}')
            args += ["--plan", str(tmp_path / "bad.json")]
        elif case == "no-crd":
            args += ["--resource", "dsctl.io/v1"]
        elif case == "port-busy":
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            args += ["--port", str(busy.getsockname()[1])]
        elif case == "bad-port":
            args += ["--port", "70000"]
        elif case == "bad-taint":
            args += ["--readiness-taint", "dsctl.io/agents-not-ready:Sometimes"]
        returncode, output = await _run(*args)
    finally:
        busy.close()
    assert returncode == code, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert message.format(tmp=tmp_path) in lines[0]
