"""A leader whose renewals fail stops writing before its lease could expire, and exits."""

from __future__ import annotations

import time

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.requestaudit import is_controller_agent, read_all_requests
from tests.support.simproc import SimProcess

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 1.5, 0.3
ARGS = ["--leader-elect", "--leader-elect-namespace", "default",
        "--leader-elect-lease-duration", str(LEASE_DURATION),
        "--leader-elect-renew-deadline", str(RENEW_DEADLINE),
        "--leader-elect-retry-period", str(RETRY_PERIOD)]
WRITES = frozenset({"create", "update", "patch", "delete"})


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_failed_renewals_stop_writes_before_the_lease_expires(sim: SimProcess, kube: KubeClient) -> None:
    """With every Lease update failing, the leader's last write precedes lease expiry and it exits 1."""
    async with ControllerProcess(str(sim.kubeconfig), args=ARGS) as ctl:
        async def leading() -> bool:
            return _logged(ctl, "leader_acquired")

        await eventually(leading, message="leadership")
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def three() -> bool:
            return len(await daemon_pods(kube, "agent")) == 3

        await eventually(three, message="3 pods")
        await sim.patch_faults(errors=[{"verb": "update", "resource": "leases", "code": 500, "rate": 1.0}])
        # Keep the controller busy: each deleted pod is a write it wants to make right away.
        for pod in await daemon_pods(kube, "agent"):
            await kube.delete(PODS, pod["metadata"]["name"], namespace="default")

        async def exited() -> bool:
            return ctl.proc is not None and ctl.proc.returncode is not None

        await eventually(exited, timeout=LEASE_DURATION + RENEW_DEADLINE + 10, message="controller exit")
        exited_at = time.time()
        assert ctl.proc is not None and ctl.proc.returncode == 1
        assert _logged(ctl, "leader_lost")

    records, _ = await read_all_requests(sim)
    mine = [r for r in records if is_controller_agent(str(r["user_agent"]))]
    renewals = [r["time"] for r in mine if r["resource"] == "leases" and r["verb"] in ("update", "create")
                and r["code"] < 300]
    assert renewals, "the leader never held the lease"
    expires = max(renewals) + LEASE_DURATION
    late = [r for r in mine if r["verb"] in WRITES and r["resource"] != "leases" and r["time"] >= expires]
    assert not late, f"writes after the lease could have expired: {late}"
    assert exited_at < expires + 2.0, "the process outlived its lease by far"


def _logged(ctl: ControllerProcess, event: str) -> bool:
    return any(e.get("event") == event for e in ctl.logs)
