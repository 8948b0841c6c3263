"""Two replicas under Lease faults and worker load: one renewing holder, one writer, no needless handover.

Who wrote and who renewed is read from the simulator's request log (each replica's identity is
in its User-Agent); the invariant itself is :mod:`tests.support.onewriter`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dsctl import __version__
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, LEASES, PODS
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, ds_status
from tests.support.controllerproc import ControllerProcess
from tests.support.onewriter import lease_history, one_writer_violations
from tests.support.poll import eventually
from tests.support.requestaudit import read_all_requests
from tests.support.simproc import SimProcess

FAULT_SECONDS = 8.0


def _args(lease: float, renew: float, retry: float, *extra: str) -> list[str]:
    return ["--leader-elect", "--leader-elect-namespace", "default",
            "--leader-elect-lease-duration", str(lease), "--leader-elect-renew-deadline", str(renew),
            "--leader-elect-retry-period", str(retry), *extra]


def _acquired(ctl: ControllerProcess) -> bool:
    return any(e.get("event") == "leader_acquired" for e in ctl.logs)


def _agent_of(ctl: ControllerProcess) -> str:
    entry = next(e for e in ctl.logs if e.get("event") == "leader_election_started")
    return f"dsctl/{__version__} ({entry['identity']})"


async def _start(
    stack: contextlib.AsyncExitStack, sim: SimProcess, args: list[str]
) -> tuple[ControllerProcess, ControllerProcess]:
    """Two replicas, stopped when ``stack`` closes; returns (leader, standby) once one leads."""
    a, b = ControllerProcess(str(sim.kubeconfig), args=args), ControllerProcess(str(sim.kubeconfig), args=args)
    for proc in (a, b):
        stack.push_async_callback(proc.stop)
    await asyncio.gather(a.start(), b.start())

    async def roles() -> tuple[ControllerProcess, ControllerProcess] | None:
        if _acquired(a):
            return a, b
        if _acquired(b):
            return b, a
        return None

    return await eventually(roles, message="one replica leading")


async def _metric(ctl: ControllerProcess, name: str) -> float:
    """Sum of a metric family's samples on the controller's /metrics."""
    status, text = await ctl.get("/metrics")
    assert status == 200
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name)


def _alive(ctl: ControllerProcess) -> bool:
    return ctl.proc is not None and ctl.proc.returncode is None


def _renewals(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Successful Lease updates per agent."""
    counts: dict[str, int] = {}
    for r in records:
        if r["resource"] == "leases" and r["verb"] == "update" and 200 <= int(r["code"]) < 300:
            counts[str(r["user_agent"])] = counts.get(str(r["user_agent"]), 0) + 1
    return counts


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_eight_seconds_of_lease_500s_leave_one_renewing_holder_and_one_writer(
    sim: SimProcess, kube: KubeClient
) -> None:
    """8 s of 500s on every Lease request: both electors survive, the holder renews after, only it writes."""
    async with contextlib.AsyncExitStack() as stack:
        leader, standby = await _start(stack, sim, _args(20, 15, 1))
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def converged() -> bool:
            status = await ds_status(kube, "agent")
            return status.get("numberReady") == 3 and status.get("observedGeneration") == 1

        await eventually(converged, message="DaemonSet converged")
        before = (await kube.get(LEASES, "dsctl", namespace="default"))["spec"]
        _, cursor = await read_all_requests(sim)

        await sim.patch_faults(errors=[{"verb": "*", "resource": "leases", "code": 500, "rate": 1.0}])
        # Work for the leader while its Lease requests fail: it still holds the Lease, so it acts.
        victim = (await daemon_pods(kube, "agent"))[0]["metadata"]["name"]
        await kube.delete(PODS, victim, namespace="default")
        await asyncio.sleep(FAULT_SECONDS)  # the fault window itself
        await sim.patch_faults(errors=[])
        _, fault_end = await read_all_requests(sim, since=cursor)

        async def renewed_after_faults() -> dict[str, Any] | None:
            spec = (await kube.get(LEASES, "dsctl", namespace="default"))["spec"]
            return spec if spec["renewTime"] > before["renewTime"] else None

        after = await eventually(renewed_after_faults, timeout=10, message="a renewal after the faults")

        async def standby_polled_after_faults() -> bool:
            records, _ = await read_all_requests(sim, since=fault_end)
            return any(r["resource"] == "leases" and r["user_agent"] == _agent_of(standby) for r in records)

        await eventually(standby_polled_after_faults, timeout=10, message="the standby's elector still running")

        async def replaced() -> bool:
            names = {p["metadata"]["name"] for p in await daemon_pods(kube, "agent")}
            return len(names) == 3 and victim not in names

        await eventually(replaced, message="the deleted pod replaced")
        records, _ = await read_all_requests(sim)
        assert after["holderIdentity"] == before["holderIdentity"]
        assert after.get("leaseTransitions", 0) == before.get("leaseTransitions", 0)
        post, _ = await read_all_requests(sim, since=fault_end)
        assert set(_renewals(post)) == {_agent_of(leader)}, _renewals(post)
        assert one_writer_violations(records) == []
        assert [h.holder for h in lease_history(records)] == [_agent_of(leader)]
        assert _alive(leader) and _alive(standby)
        for proc in (leader, standby):
            status, body = await proc.get("/healthz?verbose")
            assert status == 200 and "[+]leader-election ok" in body, body
        fenced = await _metric(leader, "dsctl_leader_fenced_writes_total")
        assert fenced == 0.0, "the leader refused its own writes while it held the Lease"
        assert not leader.errors(), leader.errors()[:3]
        assert not standby.errors(), standby.errors()[:3]


@pytest.mark.parametrize("sim", [{"nodes": 400}], indirect=True)
async def test_a_rollout_onto_400_nodes_at_qps_20_keeps_the_leader(sim: SimProcess, kube: KubeClient) -> None:
    """400 pod creates queued in the workers' 20-QPS bucket do not delay renewals: no handover, no exit."""
    async with contextlib.AsyncExitStack() as stack:
        leader, standby = await _start(stack, sim, _args(4, 3, 0.5, "--kube-api-qps", "20"))
        before = (await kube.get(LEASES, "dsctl", namespace="default"))["spec"]
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def scheduled() -> bool:
            status = await ds_status(kube, "agent")
            return status.get("desiredNumberScheduled") == 400 and status.get("currentNumberScheduled") == 400

        await eventually(scheduled, timeout=90, interval=0.5, message="400 daemon pods created")
        after = (await kube.get(LEASES, "dsctl", namespace="default"))["spec"]
        records, _ = await read_all_requests(sim)
        assert after["holderIdentity"] == before["holderIdentity"]
        assert after.get("leaseTransitions", 0) == before.get("leaseTransitions", 0)
        assert [h.holder for h in lease_history(records)] == [_agent_of(leader)]
        assert one_writer_violations(records) == []
        assert _alive(leader) and _alive(standby)
        assert not any(e.get("event") == "leader_lost" for e in leader.logs)
        assert not leader.errors(), leader.errors()[:3]


@pytest.mark.parametrize("sim", [{"nodes": 30}], indirect=True)
async def test_a_leader_whose_renewals_hang_stops_writing_before_its_lease_expires(
    sim: SimProcess, kube: KubeClient
) -> None:
    """Lease requests hanging 30 s: the attempt is cut at the renew deadline, no write after expiry, exit 1."""
    lease_duration, renew = 3.0, 2.0
    args = _args(lease_duration, renew, 0.5, "--kube-api-qps", "2", "--kube-api-burst", "1")
    async with ControllerProcess(str(sim.kubeconfig), args=args) as ctl:
        await eventually(lambda: _as_future(_acquired(ctl)), message="leadership")
        await sim.patch_faults(resource_latency_ms={"leases": 30_000})
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")  # 30 creates at 2 QPS

        async def exited() -> bool:
            return ctl.proc is not None and ctl.proc.returncode is not None

        await eventually(exited, timeout=20, message="controller exit")
        assert ctl.proc is not None and ctl.proc.returncode == 1
        assert any(e.get("event") == "leader_lost" for e in ctl.logs)
    await sim.patch_faults(resource_latency_ms={})
    records, _ = await read_all_requests(sim)
    mine = [r for r in records if r["user_agent"] == _agent_of(ctl)]
    renewed = max(r["time"] for r in mine if r["resource"] == "leases" and r["verb"] in ("create", "update")
                  and r["code"] < 300)
    late = [r for r in mine if r["resource"] in ("pods", "daemonsets", "controllerrevisions")
            and r["verb"] in ("create", "update", "patch", "delete") and r["time"] >= renewed + lease_duration]
    assert not late, f"writes after the lease could have expired: {late[:3]}"


async def _as_future(value: bool) -> bool:
    return value
