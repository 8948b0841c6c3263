"""The operator endpoints of ``dsctl run``: ``/metrics``, ``/readyz`` and ``/healthz``.

``/metrics`` must be valid Prometheus text (``promtool check metrics``, from Debian's
``prometheus`` package, which ``.ci/ensure-promtool`` installs) and carry the families the
metrics reference lists, with per-DaemonSet gauges that match the DaemonSet's ``.status``. The probes are
driven by the simulator's latency faults: a slow ``list`` keeps caches unsynced (``/readyz``
red), a slow status ``update`` holds one sync past ``--stuck-sync-seconds`` (``/healthz`` red).
"""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.builders import daemonset
from tests.support.clusterview import ds_status
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)

LEADER_ARGS = ["--leader-elect", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", "3",
               "--leader-elect-renew-deadline", "2", "--leader-elect-retry-period", "0.5"]
WORKQUEUE_SAMPLES = (
    "workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds_count",
    "workqueue_work_duration_seconds_count", "workqueue_unfinished_work_seconds",
    "workqueue_longest_running_processor_seconds", "workqueue_retries_total",
)
STATUS_GAUGES = {
    "desired_number_scheduled": "desiredNumberScheduled",
    "current_number_scheduled": "currentNumberScheduled",
    "number_misscheduled": "numberMisscheduled",
    "number_ready": "numberReady",
    "number_available": "numberAvailable",
    "number_unavailable": "numberUnavailable",
    "updated_number_scheduled": "updatedNumberScheduled",
}

Sample = tuple[str, dict[str, str], float]


def _samples(text: str) -> list[Sample]:
    return [(s.name, dict(s.labels), s.value) for family in text_string_to_metric_families(text)
            for s in family.samples]


async def _metrics(ctl: ControllerProcess) -> list[Sample]:
    status, text = await ctl.get("/metrics")
    assert status == 200
    return _samples(text)


async def _promtool(text: str) -> tuple[int, str]:
    promtool = shutil.which("promtool")
    assert promtool is not None
    proc = await asyncio.create_subprocess_exec(promtool, "check", "metrics", stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(text.encode()), 30)
    return proc.returncode or 0, out.decode()


async def _converged(kube: KubeClient) -> dict[str, Any] | None:
    status = await ds_status(kube, "agent")
    done = status.get("numberAvailable") == 3 and status.get("observedGeneration") == 1
    return status if done else None


async def test_metrics_pass_promtool_and_carry_every_family(sim: SimProcess, kube: KubeClient) -> None:
    """/metrics passes promtool and has workqueue, client, sync, informer, leader and build metrics."""
    if shutil.which("promtool") is None:
        pytest.skip("promtool not on PATH: install Debian's prometheus package (make test runs .ci/ensure-promtool)")
    async with ControllerProcess(sim.kubeconfig, args=LEADER_ARGS) as ctl:
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
        await eventually(lambda: _converged(kube), message="DaemonSet converged")
        status, text = await ctl.get("/metrics")
        assert status == 200
        code, report = await _promtool(text)
        assert code == 0, f"promtool check metrics failed:\n{report}"

        samples = _samples(text)
        names = {name for name, _, _ in samples}
        for wanted in WORKQUEUE_SAMPLES:
            assert any(n == wanted and labels.get("name") == "daemonset" for n, labels, _ in samples), wanted
        for wanted in ("rest_client_requests_total", "dsctl_sync_total", "leader_election_master_status",
                       "dsctl_build_info"):
            assert wanted in names, wanted
        assert any(n.startswith("informer_") for n in names), sorted(names)
        assert any(n == "dsctl_sync_total" and labels.get("result") == "success" and value > 0
                   for n, labels, value in samples)
        assert not ctl.errors(), ctl.errors()[:3]


async def test_per_daemonset_gauges_equal_the_status(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """Once converged, every dsctl_daemonset_status_* gauge of the DaemonSet equals its .status field."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await eventually(lambda: _converged(kube), message="DaemonSet converged")

    async def gauges_match() -> bool:
        status = await ds_status(kube, "agent")
        gauges = {n.removeprefix("dsctl_daemonset_status_"): v for n, labels, v in await _metrics(controller)
                  if n.startswith("dsctl_daemonset_status_")
                  and labels == {"namespace": "default", "name": "agent"}}
        expected = {gauge: float(status.get(field) or 0) for gauge, field in STATUS_GAUGES.items()}
        return gauges == expected

    await eventually(gauges_match, message="status gauges equal to .status")


async def test_readyz_turns_green_when_caches_sync(sim: SimProcess) -> None:
    """/readyz answers 500 naming the unsynced caches while lists are slow, and 200 once they sync."""
    await sim.set_faults(verb_latency_ms={"list": 1500})
    async with ControllerProcess(sim.kubeconfig) as ctl:
        status, body = await ctl.get("/readyz")
        assert status == 500, body
        assert "caches not synced" in body
        assert (await ctl.get("/healthz"))[0] == 200
        await sim.set_faults()

        async def ready() -> bool:
            return (await ctl.get("/readyz"))[0] == 200

        await eventually(ready, message="/readyz 200")
        assert not ctl.errors(), ctl.errors()[:3]


async def test_a_stuck_sync_turns_healthz_red_until_it_finishes(sim: SimProcess, kube: KubeClient) -> None:
    """A sync held longer than --stuck-sync-seconds makes /healthz 500 naming it; it recovers afterwards."""
    async with ControllerProcess(sim.kubeconfig, args=["--stuck-sync-seconds", "1"]) as ctl:
        assert (await ctl.get("/healthz"))[0] == 200
        await sim.set_faults(verb_latency_ms={"update": 3000})
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def red() -> str | None:
            status, body = await ctl.get("/healthz")
            return body if status == 500 else None

        body = await eventually(red, message="/healthz 500")
        assert "default/agent" in body, body
        await sim.set_faults()

        async def green() -> bool:
            return (await ctl.get("/healthz"))[0] == 200

        await eventually(green, timeout=15, message="/healthz back to 200")
        await eventually(lambda: _converged(kube), message="DaemonSet converged after the stall")
        assert not ctl.errors(), ctl.errors()[:3]
