"""The leader elector against a fake Lease client on virtual time: failures are attempts, not the end."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry

from dsctl.app.leader import LeaderElector
from dsctl.kube import errors
from dsctl.kube.fence import WriteFence
from tests.unit.app.fakeleases import FakeLeases, Fault
from tests.unit.app.virtualtime import run_virtual

LEASE, RENEW, RETRY = 15.0, 10.0, 2.0


def _500() -> errors.KubeError:
    return errors.ServerError(500, "InternalError", "etcd leader changed")


def _429() -> errors.KubeError:
    return errors.TooManyRequests(429, "TooManyRequests", "slow down", retry_after=60.0)


def _reset() -> errors.KubeError:
    return errors.ConnectionFailed("connection reset by peer")


def _conflict() -> errors.KubeError:
    return errors.Conflict(409, "Conflict", "the object has been modified")


class Harness:
    """One elector (identity ``me``) on a fake Lease, with its fence and the on_lost count."""

    def __init__(self, fake: FakeLeases | None = None, *, identity: str = "me") -> None:
        loop = asyncio.get_running_loop()
        self.fake = fake or FakeLeases()
        self.registry = CollectorRegistry()
        self.fence = WriteFence(registry=self.registry, clock=loop.time)
        self.lost = 0
        self.elector = LeaderElector(
            client=self.fake.as_client(), namespace="default", name="dsctl", identity=identity,
            lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY, registry=self.registry,
            monotonic=loop.time, on_lost=self._on_lost, fence=self.fence,
        )
        self.task = asyncio.create_task(self.elector.run(), name="elector-under-test")

    def _on_lost(self) -> None:
        self.lost += 1

    def window(self, make: Callable[[], Fault], *, verbs: frozenset[str], start: float, end: float) -> None:
        """Fail requests with these verbs between loop times ``start`` and ``end``."""
        loop = asyncio.get_running_loop()

        def fault(verb: str) -> Fault:
            return make() if verb in verbs and start <= loop.time() < end else None

        self.fake.fault = fault

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def now() -> float:
    return asyncio.get_running_loop().time()


GET, UPDATE, ALL = frozenset({"get"}), frozenset({"update"}), frozenset({"get", "update", "create"})
SHORT_FAULTS = [
    pytest.param(_500, GET, id="get-500"),
    pytest.param(_500, UPDATE, id="update-500"),
    pytest.param(_429, ALL, id="429-retry-after-60s"),
    pytest.param(_reset, ALL, id="connection-reset"),
    pytest.param(_conflict, UPDATE, id="update-conflict"),
]


@pytest.mark.parametrize(("make", "verbs"), SHORT_FAULTS)
def test_failures_shorter_than_the_renew_deadline_keep_the_leader(
    make: Callable[[], Fault], verbs: frozenset[str]
) -> None:
    """8 s of failing Lease requests (< renew deadline) are failed attempts: the leader stays, renewing after."""

    async def main() -> None:
        h = Harness()
        await h.elector.wait_leading()
        start = now()
        h.window(make, verbs=verbs, start=start, end=start + 8.0)
        await asyncio.sleep(30.0)
        assert h.lost == 0 and not h.task.done()
        assert h.elector.is_leader and h.fake.holder() == "me"
        assert h.fake.leases["dsctl"]["spec"]["leaseTransitions"] == 0
        late_writes = [t for t, verb in h.fake.calls if verb == "update" and t > start + 8.0]
        assert late_writes, "no renewal after the faults ended"
        assert h.elector.unhealthy() is None
        await h.stop()

    run_virtual(main)


PERSISTENT_FAULTS = [
    # Failing reads alone do not stop a leader: it renews on top of its last write.
    *(p for p in SHORT_FAULTS if p.id != "get-500"),
    pytest.param(_500, ALL, id="all-500"),
    pytest.param(lambda: 60.0, ALL, id="hang-60s-waiting-out-retry-after"),
]


@pytest.mark.parametrize(("make", "verbs"), PERSISTENT_FAULTS)
def test_renewals_failing_past_the_renew_deadline_call_on_lost(
    make: Callable[[], Fault], verbs: frozenset[str]
) -> None:
    """Renewals failing for the renew deadline end leadership: on_lost once, fence closed, elector done."""

    async def main() -> None:
        h = Harness()
        await h.elector.wait_leading()
        faults_from = now() + 0.5
        h.window(make, verbs=verbs, start=faults_from, end=faults_from + 1000.0)
        renewed = [t for t, verb in h.fake.calls if verb in ("update", "create")]
        await asyncio.wait_for(asyncio.shield(h.task), timeout=100.0)
        lost_at = now()
        assert h.lost == 1
        assert lost_at <= max(renewed) + RENEW + 1e-6, "stayed leader past the renew deadline"
        assert not h.elector.is_leader
        assert not h.fence.is_open
        with pytest.raises(errors.Fenced):
            h.fence.check("create", "pods")
        assert h.elector.unhealthy() is not None

    run_virtual(main)


def test_a_healthy_leader_renews_with_one_update_per_retry_period() -> None:
    """While nothing fails, the leader renews on top of its last write (client-go's fast path): no Lease reads."""

    async def main() -> None:
        h = Harness()
        await h.elector.wait_leading()
        since = now()
        await asyncio.sleep(10 * RETRY + 0.5)
        verbs = [verb for t, verb in h.fake.calls if t > since]
        assert verbs == ["update"] * 10
        assert h.fake.leases["dsctl"]["spec"]["leaseTransitions"] == 0
        await h.stop()

    run_virtual(main)


def test_a_standby_keeps_trying_through_errors_and_takes_over_an_expired_lease() -> None:
    """A standby whose Lease reads fail for a minute keeps trying, and acquires once the holder's lease expired."""

    async def main() -> None:
        fake = FakeLeases()
        fake.put("dsctl", {"holderIdentity": "other", "leaseDurationSeconds": 15, "renewTime": "t0"})
        h = Harness(fake)
        h.window(_500, verbs=ALL, start=now() + 1.0, end=now() + 60.0)
        await asyncio.sleep(59.0)
        assert not h.task.done() and h.lost == 0
        assert not h.elector.is_leader
        during = [t for t, _ in fake.calls if t < now()]
        assert len(during) >= 20, "the standby stopped trying"
        await asyncio.wait_for(h.elector.wait_leading(), timeout=RETRY * 2)
        assert fake.holder() == "me"
        assert fake.leases["dsctl"]["spec"]["leaseTransitions"] == 1
        await h.stop()

    run_virtual(main)


def test_a_hanging_attempt_is_abandoned_at_the_renew_deadline() -> None:
    """A Lease read held for 60 s (a transport waiting out Retry-After) is cut at the renew deadline, then retried."""

    async def main() -> None:
        fake = FakeLeases()
        fake.put("dsctl", {"holderIdentity": "other", "leaseDurationSeconds": 15, "renewTime": "t0"})
        h = Harness(fake)
        h.window(lambda: 60.0, verbs=GET, start=now(), end=now() + 1000.0)
        await asyncio.sleep(60.0)
        gets = [t for t, verb in fake.calls if verb == "get"]
        gaps = [b - a for a, b in itertools.pairwise(gets)]
        assert gaps and max(gaps) <= RENEW + RETRY + 1e-6, gaps
        assert not h.task.done()
        await h.stop()

    run_virtual(main)


def test_the_fence_refuses_writes_from_the_renew_deadline_on() -> None:
    """Writes pass while renewals are fresh; from last renewal + renew deadline they are refused and counted."""

    async def main() -> None:
        h = Harness()
        with pytest.raises(errors.Fenced):
            h.fence.check("create", "pods")  # not leading yet
        await h.elector.wait_leading()
        h.fence.check("create", "pods")
        faults_from = now() + 0.5
        h.window(lambda: 60.0, verbs=ALL, start=faults_from, end=faults_from + 1000.0)
        await asyncio.sleep(RETRY + 1.0)
        last = max(t for t, verb in h.fake.calls if verb in ("update", "create") and t < faults_from)
        await asyncio.sleep(last + RENEW - 0.01 - now())
        h.fence.check("delete", "pods")
        assert h.lost == 0
        await asyncio.sleep(0.02)
        with pytest.raises(errors.Fenced):
            h.fence.check("delete", "pods")
        refused = h.registry.get_sample_value(
            "dsctl_leader_fenced_writes_total", {"verb": "delete", "resource": "pods"})
        assert refused == 1.0
        await asyncio.wait_for(asyncio.shield(h.task), timeout=5.0)
        assert h.lost == 1

    run_virtual(main)


def test_a_leader_that_reads_another_holder_steps_down_at_once() -> None:
    """A Lease taken by another identity makes the leader step down on its next attempt, not at the deadline."""

    async def main() -> None:
        h = Harness()
        await h.elector.wait_leading()
        h.fake.put("dsctl", {"holderIdentity": "usurper", "leaseDurationSeconds": 15, "renewTime": "x"})
        taken = now()
        await asyncio.wait_for(asyncio.shield(h.task), timeout=RENEW)
        assert h.lost == 1 and not h.fence.is_open
        assert now() - taken <= RETRY + 1e-6
        assert h.fake.holder() == "usurper"

    run_virtual(main)


def test_cancel_releases_the_lease_without_on_lost() -> None:
    """Cancelling a leading elector empties holderIdentity, shortens the lease to 1 s and does not call on_lost."""

    async def main() -> None:
        h = Harness()
        await h.elector.wait_leading()
        await asyncio.sleep(5.0)
        await h.stop()
        spec = h.fake.leases["dsctl"]["spec"]
        assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
        assert h.lost == 0 and not h.fence.is_open
        assert h.elector.unhealthy() is None

    run_virtual(main)
