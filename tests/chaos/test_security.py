"""The bearer token of the kubeconfig never reaches the controller's logs or metrics.

The controller runs at debug level (the most talkative) with a kubeconfig holding a fresh random
token, through the paths most likely to echo credentials: start-up and configuration, ordinary
syncs, requests refused with 401 and 403, server errors and retries, dropped watches and a
``kill -9`` followed by a restart. Every captured stderr line of every process and the
``/metrics`` page are then searched for the token, whole and in part.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import yaml

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.chaos.actions import set_image
from tests.chaos.recount import settle_problems
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


def _kubeconfig_with_token(source: str, target: Path, token: str) -> str:
    config = yaml.safe_load(Path(source).read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    target.write_text(yaml.safe_dump(config))
    return str(target)


async def test_bearer_token_never_reaches_logs_or_metrics(tmp_path: Path) -> None:
    """No log line (debug level, errors and restarts included) and no metric contains the kubeconfig token."""
    token = f"chaos-{secrets.token_hex(24)}"
    async with SimProcess(nodes=3, args=["--pod-startup-seconds", "0.1"]) as sim:
        kubeconfig = _kubeconfig_with_token(sim.kubeconfig, tmp_path / "kubeconfig", token)
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        processes: list[ControllerProcess] = []
        metrics = ""
        try:
            first = ControllerProcess(kubeconfig)
            processes.append(first)
            await first.start()
            await client.create(DAEMONSETS, daemonset("agent"), namespace="default")
            await eventually(lambda: _settled(client), timeout=30, message="agent settled")
            await sim.set_faults(errors=[
                # Every create is refused while these faults last, so the rollout's first
                # replacement logs a refusal for certain (with 0.5, one run in 64 saw none).
                {"verb": "create", "resource": "pods", "code": 401, "rate": 1.0},
                {"verb": "delete", "resource": "pods", "code": 403, "rate": 0.5},
                {"verb": "*", "resource": "*", "code": 500, "rate": 0.2},
            ])
            await sim.drop_watches()
            await set_image(client, "agent", 2)
            await eventually(lambda: _refusals_logged(first), timeout=30, message="refused requests logged")
            await sim.set_faults()
            await first.kill()
            second = ControllerProcess(kubeconfig)
            processes.append(second)
            await second.start()
            await eventually(lambda: _settled(client), timeout=30, message="agent rolled out")
            _, metrics = await second.get("/metrics")
        finally:
            for proc in processes:
                await proc.stop()
            await client.close()
    lines = [line for proc in processes for line in proc.raw]
    assert len(lines) > 50, "too little was logged for the check to mean anything"
    encoded = base64.b64encode(token.encode()).decode()
    for needle in (token, token[6:30], encoded):
        leaked = [line for line in lines if needle in line]
        assert not leaked, f"token found in {len(leaked)} log lines, e.g. {leaked[0][:300]}"
        assert needle not in metrics, "token found in /metrics"


async def _settled(client: KubeClient) -> bool:
    return not await settle_problems(client, ["agent"])


async def _refusals_logged(proc: ControllerProcess) -> bool:
    text = "\n".join(proc.raw)
    return "Unauthorized" in text or "Forbidden" in text
