"""``python -m dsctl_sim serve`` as a process: READY line, kubeconfig, flags, clean shutdown."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.simproc import SimProcess


def _read_yaml(path: str) -> Any:
    return yaml.safe_load(Path(path).read_text())


async def test_ready_line_kubeconfig_and_nodes() -> None:
    """The READY line names a reachable URL and a kubeconfig for context dsctl-sim; --nodes N creates N nodes."""
    async with SimProcess(nodes=4) as sim:
        config = _read_yaml(sim.kubeconfig)
        assert config["current-context"] == "dsctl-sim"
        assert config["clusters"][0]["cluster"]["server"] == sim.url
        status, nodes = await sim.request("GET", "/api/v1/nodes")
        assert status == 200
        names = [n["metadata"]["name"] for n in nodes["items"]]
        assert names == ["node-0", "node-1", "node-2", "node-3"]
        node = nodes["items"][0]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-0"
        assert node["metadata"]["labels"]["kubernetes.io/os"] == "linux"
        assert node["metadata"]["labels"]["kubernetes.io/arch"] == "amd64"
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True"
        assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.")
        assert node["status"]["allocatable"]["pods"] == "110"


async def test_sigterm_shuts_down_cleanly() -> None:
    """SIGTERM ends the process with exit code 0, closing open watches."""
    sim = SimProcess(nodes=1)
    async with sim, sim.session().get(sim.url + "/api/v1/pods?watch=1") as resp:
        assert resp.status == 200
        sim.send_signal(signal.SIGTERM)
        code = await sim.wait(10)
    assert code == 0


async def test_fault_flag_applies() -> None:
    """--fault-error-rate and --latency-ms from the command line show in /sim/faults and take effect."""
    args = ["--fault-error-rate", "create:pods:500:1", "--latency-ms", "5", "--seed", "1"]
    async with SimProcess(nodes=1, args=args) as sim:
        faults = await sim.faults()
        assert faults["errors"] == [{"verb": "create", "resource": "pods", "code": 500, "rate": 1.0,
                                     "retry_after": None}]
        assert faults["latency_ms"] == 5
        status, body = await sim.request("POST", "/api/v1/namespaces/default/pods",
                                         json={"metadata": {"name": "p"}, "spec": {"containers": [
                                             {"name": "c", "image": "busybox"}]}})
        assert status == 500 and body["reason"] == "InternalError"
        log = await sim.requests()
        assert [(r["verb"], r["code"]) for r in log["items"] if r["resource"] == "pods"] == [("create", 500)]


async def test_bad_flag_exits_2() -> None:
    """A malformed fault flag is a usage error (exit 2) naming the expected format."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsctl_sim", "serve", "--fault-error-rate", "nonsense",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert b"VERB:RESOURCE:CODE:RATE" in err


async def test_token_flag_requires_that_bearer_token() -> None:
    """With --token the API answers 401 to other credentials; the written kubeconfig carries the token."""
    async with SimProcess(nodes=1, args=["--token", "s3cret"]) as sim:
        status, body = await sim.request("GET", "/api/v1/nodes")
        assert status == 401 and body["reason"] == "Unauthorized" and body["kind"] == "Status"
        status, _ = await sim.request("GET", "/api/v1/nodes", headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, _ = await sim.request("GET", "/api/v1/nodes", headers={"Authorization": "Bearer s3cret"})
        assert status == 200
        assert (await sim.request("GET", "/healthz"))[0] == 200
        # The admin API can inject faults: it needs the token too.
        status, _ = await sim.request("GET", "/sim/stats")
        assert status == 401
        status, _ = await sim.request("PATCH", "/sim/faults", json={"latency_ms": 1},
                                      headers={"Authorization": "Bearer wrong"})
        assert status == 401
        assert (await sim.stats())["resourceVersion"]
        assert _read_yaml(sim.kubeconfig)["users"][0]["user"]["token"] == "s3cret"
