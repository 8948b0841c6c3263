"""Process lifecycle and logs of ``dsctl run``: graceful shutdown on SIGTERM/SIGINT, sync log fields,
and no credential in any log line.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.builders import daemonset
from tests.support.clusterview import ds_status
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)

SHUTDOWN_TIMEOUT = 2.0
# Process exit after the drain deadline: closing informers, the HTTP server and the client.
EXIT_SLACK = 3.0


async def _converged(kube: KubeClient, name: str = "agent") -> bool:
    status = await ds_status(kube, name)
    return status.get("numberAvailable") == 3 and status.get("observedGeneration") == 1


def _events(ctl: ControllerProcess) -> list[str]:
    return [str(e.get("event")) for e in ctl.logs]


async def _sync_in_flight(ctl: ControllerProcess) -> bool:
    _, text = await ctl.get("/metrics")
    for line in text.splitlines():
        if line.startswith('workqueue_unfinished_work_seconds{name="daemonset"}'):
            return float(line.rsplit(" ", 1)[1]) > 0
    return False


@pytest.mark.parametrize("sig", [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")])
async def test_signal_stops_cleanly_with_exit_code_zero(sim: SimProcess, kube: KubeClient, sig: int) -> None:
    """SIGTERM or SIGINT: the controller logs shutting_down and stopped and exits 0 within the deadline."""
    args = ["--shutdown-timeout", str(SHUTDOWN_TIMEOUT)]
    async with ControllerProcess(sim.kubeconfig, args=args) as ctl:
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
        await eventually(lambda: _converged(kube), message="DaemonSet converged")
        started = time.monotonic()
        code = await ctl.stop(sig=sig)
        elapsed = time.monotonic() - started
    assert code == 0
    assert elapsed < SHUTDOWN_TIMEOUT + EXIT_SLACK, f"took {elapsed:.1f}s to exit"
    events = _events(ctl)
    assert "shutting_down" in events and events[-1] == "stopped", events[-5:]
    assert ctl.logs[-1].get("exit_code") == 0
    assert not ctl.errors(), ctl.errors()[:3]


async def test_shutdown_deadline_bounds_a_hung_sync(sim: SimProcess, kube: KubeClient) -> None:
    """A sync stuck on a slow API call does not hold SIGTERM past --shutdown-timeout; the exit is still 0."""
    args = ["--shutdown-timeout", str(SHUTDOWN_TIMEOUT)]
    async with ControllerProcess(sim.kubeconfig, args=args) as ctl:
        await sim.set_faults(verb_latency_ms={"update": 30_000})
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
        await eventually(lambda: _sync_in_flight(ctl), message="a sync in flight")
        started = time.monotonic()
        code = await ctl.stop(sig=signal.SIGTERM)
        elapsed = time.monotonic() - started
    assert code == 0
    assert elapsed < SHUTDOWN_TIMEOUT + EXIT_SLACK, f"took {elapsed:.1f}s to exit"
    assert "shutting_down" in _events(ctl) and _events(ctl)[-1] == "stopped"


def _kubeconfig_with_token(source: str, target: Path, token: str) -> Path:
    config: dict[str, Any] = yaml.safe_load(Path(source).read_text())
    for user in config["users"]:
        user["user"]["token"] = token
    target.write_text(yaml.safe_dump(config))
    return target


async def test_syncs_are_logged_with_key_id_duration_and_counts_and_no_token(
    sim: SimProcess, kube: KubeClient, tmp_path: Path
) -> None:
    """Every sync logs key, sync_id, duration and plan counts; the kubeconfig's token appears in no log line."""
    token = "secret-" + secrets.token_hex(16)
    kubeconfig = await asyncio.to_thread(_kubeconfig_with_token, sim.kubeconfig, tmp_path / "kubeconfig", token)
    async with ControllerProcess(str(kubeconfig)) as ctl:
        # A failing create first, so error paths log too.
        await sim.set_faults(errors=[{"verb": "create", "resource": "pods", "code": 500, "rate": 1.0}])
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
        await eventually(lambda: _logged(ctl, "sync_retry"), message="a failed sync logged")
        await sim.set_faults()
        await eventually(lambda: _converged(kube), message="DaemonSet converged")
    syncs = [e for e in ctl.logs if e.get("event") == "sync"]
    assert syncs, "no sync log line"
    for entry in syncs:
        for field in ("key", "sync_id", "duration_ms", "creates", "deletes", "nodes", "pods", "errors"):
            assert field in entry, f"sync log without {field}: {entry}"
        assert entry["key"] == "default/agent"
        assert isinstance(entry["duration_ms"], int | float)
    assert sum(e["creates"] for e in syncs) == 3
    assert any(e["errors"] for e in syncs), "the failed creates were not counted in a sync line"
    assert len({e["sync_id"] for e in syncs}) == len(syncs), "sync ids repeat"
    leaks = [line for line in ctl.raw if token in line]
    assert not leaks, f"token in logs: {leaks[:2]}"


async def _logged(ctl: ControllerProcess, event: str) -> bool:
    return event in _events(ctl)
