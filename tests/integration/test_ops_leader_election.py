"""Leader election between two ``dsctl run --leader-elect`` processes on one simulated cluster.

Who acts is judged from the outside: the simulator's request log records each request's
User-Agent, and each replica's agent carries its own identity, so "exactly one acts" means
every write in the log comes from the leader's agent. Takeover times are measured between the
moment the test signals the leader and the ``leader_acquired`` log line of the standby (both
on this machine's clock), and recorded as test properties.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dsctl import __version__
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, LEASES, PODS
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, ds_status
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.requestaudit import is_controller_agent, read_all_requests
from tests.support.simproc import SimProcess

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.5
LEADER_ARGS = [
    "--leader-elect", "--leader-elect-namespace", "default",
    "--leader-elect-lease-duration", str(LEASE_DURATION), "--leader-elect-renew-deadline", str(RENEW_DEADLINE),
    "--leader-elect-retry-period", str(RETRY_PERIOD),
]
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)


def _logged_at(ctl: ControllerProcess, event: str) -> float | None:
    """Epoch seconds of the first log line with this event, or None."""
    for entry in ctl.logs:
        if entry.get("event") == event:
            return datetime.fromisoformat(str(entry["timestamp"])).timestamp()
    return None


def _identity(ctl: ControllerProcess) -> str:
    entry = next(e for e in ctl.logs if e.get("event") == "leader_acquired")
    return str(entry["identity"])


def _agent(ctl: ControllerProcess) -> str:
    return f"dsctl/{__version__} ({_identity(ctl)})"


async def _leading(ctl: ControllerProcess) -> float | None:
    return _logged_at(ctl, "leader_acquired")


def _writers(records: Sequence[Mapping[str, Any]]) -> set[str]:
    """Controller User-Agents that wrote anything but the Lease."""
    return {str(r["user_agent"]) for r in records
            if r["verb"] in WRITE_VERBS and r["resource"] and r["resource"] != "leases"
            and is_controller_agent(str(r["user_agent"]))}


async def _master_status(ctl: ControllerProcess) -> float:
    status, text = await ctl.get("/metrics")
    assert status == 200
    for family in text_string_to_metric_families(text):
        if family.name == "leader_election_master_status":
            return next(s.value for s in family.samples if s.labels.get("name") == "dsctl")
    raise AssertionError("leader_election_master_status missing from /metrics")


async def _standby_polling(sim: SimProcess, leader_agent: str) -> str | None:
    """The agent of a second controller once it has asked for the Lease."""
    records, _ = await read_all_requests(sim)
    others = {str(r["user_agent"]) for r in records
              if r["resource"] == "leases" and r["verb"] == "get" and r["user_agent"] != leader_agent
              and is_controller_agent(str(r["user_agent"]))}
    return next(iter(others), None)


def _assert_utc_micro_time(lease: Mapping[str, Any]) -> None:
    spec = lease["spec"]
    for key in ("acquireTime", "renewTime"):
        value = str(spec[key])
        assert MICRO_TIME.match(value), f"{key}={value!r} is not MicroTime"
        skew = abs(datetime.fromisoformat(value).timestamp() - time.time())
        assert skew < 10, f"{key}={value!r} is {skew:.0f}s away from UTC now: local time written as UTC?"


async def _start_all(stack: contextlib.AsyncExitStack, *procs: ControllerProcess) -> None:
    """Start the processes side by side; each is stopped when ``stack`` closes, even if starting failed."""
    for proc in procs:
        stack.push_async_callback(proc.stop)
    async with asyncio.TaskGroup() as group:
        for proc in procs:
            group.create_task(proc.start())


async def _roles(a: ControllerProcess, b: ControllerProcess) -> tuple[ControllerProcess, ControllerProcess] | None:
    """(leader, standby) once one of the two has acquired the lease."""
    if _logged_at(a, "leader_acquired") is not None:
        return a, b
    if _logged_at(b, "leader_acquired") is not None:
        return b, a
    return None


async def test_only_the_leader_writes_and_a_killed_leader_is_replaced_within_the_lease(
    sim: SimProcess, kube: KubeClient, record_property: Any
) -> None:
    """With two replicas only the leader writes; after kill -9 the standby takes over once the lease expires."""
    # One replica runs in UTC+05:30, so whichever writes the Lease, both clocks are checked.
    kolkata = ControllerProcess(sim.kubeconfig, args=LEADER_ARGS, env={"TZ": "Asia/Kolkata"})
    plain = ControllerProcess(sim.kubeconfig, args=LEADER_ARGS, env={"TZ": "UTC"})
    async with contextlib.AsyncExitStack() as stack:
        await _start_all(stack, kolkata, plain)
        leader, standby = await eventually(lambda: _roles(kolkata, plain), message="one replica leading")
        lease = await kube.get(LEASES, "dsctl", namespace="default")
        assert lease["spec"]["holderIdentity"] == _identity(leader)
        _assert_utc_micro_time(lease)
        standby_agent = await eventually(lambda: _standby_polling(sim, _agent(leader)),
                                         message="standby asking for the lease")
        assert _logged_at(standby, "leader_acquired") is None
        assert await _master_status(leader) == 1
        assert await _master_status(standby) == 0

        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def converged() -> bool:
            status = await ds_status(kube, "agent")
            return status.get("numberReady") == 3 and status.get("observedGeneration") == 1

        await eventually(converged, message="DaemonSet converged")
        records, cursor = await read_all_requests(sim)
        assert _writers(records) == {_agent(leader)}, "someone besides the leader wrote"
        assert _logged_at(standby, "leader_acquired") is None

        killed_at = time.time()
        await leader.kill()
        last_renew = datetime.fromisoformat(
            (await kube.get(LEASES, "dsctl", namespace="default"))["spec"]["renewTime"]).timestamp()
        acquired = await eventually(lambda: _leading(standby), timeout=3 * LEASE_DURATION,
                                    interval=0.05, message="standby taking over")
        takeover = acquired - killed_at
        record_property("kill_takeover_seconds", round(takeover, 3))
        # The standby times the lease from when it saw the last renewal, which it sees up to one
        # retry period late, and it acts on its next retry: hence the retry-period allowance.
        assert acquired - last_renew >= LEASE_DURATION - 0.05, "standby took a lease that had not expired"
        assert takeover <= LEASE_DURATION + RETRY_PERIOD, f"takeover took {takeover:.2f}s"
        assert await _master_status(standby) == 1
        lease = await kube.get(LEASES, "dsctl", namespace="default")
        assert lease["spec"]["holderIdentity"] == _identity(standby)
        assert _agent(standby) == standby_agent
        _assert_utc_micro_time(lease)

        victim = (await daemon_pods(kube, "agent"))[0]["metadata"]["name"]
        await kube.delete(PODS, victim, namespace="default")

        async def replaced() -> bool:
            names = {p["metadata"]["name"] for p in await daemon_pods(kube, "agent")}
            return len(names) == 3 and victim not in names

        await eventually(replaced, message="new leader replacing a deleted pod")
        records, _ = await read_all_requests(sim, since=cursor)
        assert _writers(records) == {_agent(standby)}
        assert not standby.errors(), standby.errors()[:3]


async def test_sigterm_hands_the_lease_over_within_two_retry_periods(
    sim: SimProcess, record_property: Any
) -> None:
    """A leader stopped with SIGTERM releases the lease, so the standby leads within 2x the retry period."""
    a = ControllerProcess(sim.kubeconfig, args=LEADER_ARGS)
    b = ControllerProcess(sim.kubeconfig, args=LEADER_ARGS)
    async with contextlib.AsyncExitStack() as stack:
        await _start_all(stack, a, b)
        leader, standby = await eventually(lambda: _roles(a, b), message="one replica leading")
        await eventually(lambda: _standby_polling(sim, _agent(leader)), message="standby asking for the lease")
        stopped_at = time.time()
        assert await leader.stop() == 0
        assert _logged_at(leader, "leader_released") is not None
        acquired = await eventually(lambda: _leading(standby), timeout=3 * LEASE_DURATION, interval=0.05,
                                    message="standby taking over")
        handover = acquired - stopped_at
        record_property("sigterm_takeover_seconds", round(handover, 3))
        assert handover <= 2 * RETRY_PERIOD, f"handover took {handover:.2f}s"
        assert await _master_status(standby) == 1
        assert not leader.errors(), leader.errors()[:3]
        assert not standby.errors(), standby.errors()[:3]
