"""``PodWriter`` against the fake client: what it writes, in what order, and what it expects to see.

These pin behaviour, not structure: pods in the fake's store, calls in order, events recorded,
and the expectations left for the pod handlers to count down.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from dsctl.controller.expectations import Expectations
from dsctl.controller.podwrites import PodWriter
from dsctl.controller.recorder import EventRecorder
from dsctl.daemonset.podplan import Event, Plan, PodRef
from dsctl.daemonset.template import new_pod, pod_factory, target_node
from dsctl.kube import errors
from dsctl.kube.encoded import JsonTemplate
from dsctl.kube.resources import EVENTS, PODS
from dsctl.tuning import SPLICE_FROM
from tests.unit.daemonset.objects import make_ds

from .fakeclient import Call, FakeClient

NS = "default"
DS = make_ds("agent", uid="ds-uid")
KEY = f"{NS}/agent"
HASH = "h1"
NODES = tuple(f"node-{i}" for i in range(10))

TERMINATING = errors.Forbidden(
    403, "Forbidden", 'unable to create new content in namespace default because it is being terminated',
    details={"causes": [{"reason": "NamespaceTerminating", "message": "namespace default is being terminated"}]})
QUOTA = errors.Forbidden(403, "Forbidden", "exceeded quota: pods")


@dataclass
class RecordingRecorder:
    """Stands in for ``EventRecorder``: keeps (object name, type, reason, message) in order."""

    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], event_type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, _, reason, _ in self.events]


@dataclass
class Rig:
    """An executor on a fake client, with the collaborators a test inspects."""

    fake: FakeClient = field(default_factory=FakeClient)
    recorder: RecordingRecorder = field(default_factory=RecordingRecorder)
    expectations: Expectations = field(default_factory=lambda: Expectations(clock=lambda: 0.0))
    create_failures: list[tuple[str, str]] = field(default_factory=list)

    def executor(self, *, burst: int = 250, still_current: Callable[[str, str], bool] | None = None) -> PodWriter:
        return PodWriter(client=self.fake.as_client(), expectations=self.expectations,
                            recorder=cast(EventRecorder, self.recorder), burst=burst,
                            on_create_failure=lambda key, message: self.create_failures.append((key, message)),
                            still_current=still_current)

    def pending(self) -> tuple[int, int]:
        record = self.expectations.get(KEY)
        assert record is not None, "expectations were never set"
        return record.adds, record.dels

    def created_on(self) -> list[str]:
        return sorted(str(target_node(pod)) for pod in self.fake.objects.values() if pod["kind"] == "Pod")


def _on(*nodes: str) -> Callable[[Call], bool]:
    """A fault predicate: pod creates aimed at one of ``nodes``."""
    return lambda call: target_node(call.body) in nodes


@pytest.mark.parametrize(("failing", "attempted", "created"), [
    pytest.param((), 10, 10, id="no-failure"),
    pytest.param(("node-0",), 1, 0, id="first-batch-fails"),
    pytest.param(("node-2",), 3, 2, id="second-batch-fails"),
    pytest.param(("node-4", "node-5"), 7, 5, id="two-failures-in-third-batch"),
    pytest.param(("node-9",), 10, 9, id="last-batch-fails"),
])
async def test_slow_start_stops_at_the_first_failed_batch(failing: tuple[str, ...], attempted: int,
                                                          created: int) -> None:
    """Creates go in batches of 1, 2, 4, 3; a failure ends the sync after its batch, and the creates
    still expected are exactly the pods that were created."""
    rig = Rig()
    rig.fake.fail("create", PODS, QUOTA, times=None, when=_on(*failing))
    result = await rig.executor().execute(key=KEY, ds=DS, plan=Plan(creates=NODES), hash_=HASH)
    assert rig.fake.verbs(PODS) == ["create"] * attempted
    assert result.created == created and len(rig.created_on()) == created
    assert len(result.errors) == len(failing)
    assert rig.pending() == (created, 0)
    assert rig.recorder.reasons().count("SuccessfulCreate") == created
    assert rig.recorder.reasons().count("FailedCreate") == len(failing)
    assert [key for key, _ in rig.create_failures] == [KEY] * len(failing)


async def test_created_pods_follow_the_template() -> None:
    """Each create is a pod of the DaemonSet for its node, in the DaemonSet's namespace, with the hash label."""
    rig = Rig()
    await rig.executor().execute(key=KEY, ds=DS, plan=Plan(creates=("node-0", "node-1")), hash_=HASH)
    assert rig.created_on() == ["node-0", "node-1"]
    for pod in rig.fake.objects.values():
        assert pod["metadata"]["namespace"] == NS
        assert pod["metadata"]["generateName"] == "agent-"
        assert pod["metadata"]["labels"]["controller-revision-hash"] == HASH
        assert pod["metadata"]["ownerReferences"][0]["uid"] == "ds-uid"


async def test_namespace_terminating_abandons_quietly() -> None:
    """Creates refused because the namespace is going away stop the sync without an error or a warning;
    the refused ones stay expected (the deletion is on its way), the skipped ones do not."""
    rig = Rig()
    rig.fake.fail("create", PODS, TERMINATING, times=None)
    result = await rig.executor().execute(key=KEY, ds=DS, plan=Plan(creates=NODES), hash_=HASH)
    assert rig.fake.verbs(PODS) == ["create"]
    assert result.errors == [] and result.created == 0
    assert rig.pending() == (1, 0)
    assert rig.recorder.events == [] and rig.create_failures == []


@pytest.mark.parametrize(("current_for", "attempted"), [
    pytest.param(0, 0, id="gone-before-the-first-batch"),
    pytest.param(2, 3, id="gone-after-two-batches"),
])
async def test_creates_stop_when_the_daemonset_is_no_longer_current(current_for: int, attempted: int) -> None:
    """A DaemonSet deleted or replaced mid-sync gets no further create batches, and no expectations for them."""
    checks = itertools.count()
    asked: list[tuple[str, str]] = []

    def still_current(key: str, uid: str) -> bool:
        asked.append((key, uid))
        return next(checks) < current_for

    rig = Rig()
    result = await rig.executor(still_current=still_current).execute(key=KEY, ds=DS, plan=Plan(creates=NODES),
                                                                     hash_=HASH)
    assert result.created == attempted and result.errors == []
    assert rig.pending() == (attempted, 0)
    assert set(asked) == {(KEY, "ds-uid")}


def _pod(name: str, uid: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": uid}, "spec": {"nodeName": "node-0"}}


async def test_deletes_carry_uid_preconditions_and_count_outcomes() -> None:
    """Each delete is pinned to the planned pod's UID and not retried on 5xx; NotFound is as good as deleted,
    any other failure is reported, and every failed or missing delete is no longer expected."""
    rig = Rig()
    rig.fake.put(PODS, _pod("ok", "u-ok"))
    rig.fake.put(PODS, _pod("replaced", "u-new"))
    rig.fake.put(PODS, _pod("flaky", "u-flaky"))
    rig.fake.fail("delete", PODS, errors.ServerError(500, "InternalError", "etcd timeout"),
                  when=lambda call: call.name == "flaky")
    refs = (PodRef(NS, "ok", "u-ok"), PodRef(NS, "gone", "u-gone"), PodRef(NS, "replaced", "u-old"),
            PodRef(NS, "flaky", "u-flaky"))
    result = await rig.executor().execute(key=KEY, ds=DS, plan=Plan(deletes=refs), hash_=HASH)
    deletes = [c for c in rig.fake.calls if c.verb == "delete"]
    assert [(c.name, c.options["preconditions_uid"], c.options["retry_server_errors"]) for c in deletes] == [
        ("ok", "u-ok", False), ("gone", "u-gone", False), ("replaced", "u-old", False), ("flaky", "u-flaky", False)]
    assert rig.fake.named(PODS, NS) == ["flaky", "replaced"]
    assert result.deleted == 2 and len(result.errors) == 2
    assert rig.pending() == (0, 1), "only the successful delete is still to be observed"
    assert rig.recorder.reasons() == ["SuccessfulDelete", "FailedDelete", "FailedDelete"]


async def test_creates_go_before_deletes() -> None:
    """A plan with both sends every create before the first delete."""
    rig = Rig()
    rig.fake.put(PODS, _pod("old", "u-old"))
    plan = Plan(creates=("node-0", "node-1", "node-2"), deletes=(PodRef(NS, "old", "u-old"),))
    result = await rig.executor().execute(key=KEY, ds=DS, plan=plan, hash_=HASH)
    assert rig.fake.verbs(PODS) == ["create", "create", "create", "delete"]
    assert (result.created, result.deleted) == (3, 1)
    assert rig.pending() == (3, 1)


@pytest.mark.parametrize(("executor_burst", "ds_burst", "sent"), [
    pytest.param(4, None, 4, id="executor-burst"),
    pytest.param(250, 3, 3, id="daemonset-burst-lower"),
    pytest.param(2, 5, 2, id="executor-burst-caps-daemonset-burst"),
])
async def test_burst_caps_each_sync(executor_burst: int, ds_burst: int | None, sent: int) -> None:
    """At most the lower of the two bursts of creates go out per sync; only those are expected."""
    rig = Rig()
    await rig.executor(burst=executor_burst).execute(key=KEY, ds=DS, plan=Plan(creates=NODES), hash_=HASH,
                                                     burst=ds_burst)
    assert len(rig.created_on()) == sent
    assert rig.pending() == (sent, 0)


async def test_plan_events_without_writes() -> None:
    """Planned events are recorded on the DaemonSet or on the pod they regard; no writes, no expectations."""
    rig = Rig()
    plan = Plan(events=(Event("Warning", "SelectingAll", "selects all pods"),
                        Event("Warning", "FailedDaemonPod", "pod p1 failed", regarding=PodRef(NS, "p1", "u1"))))
    result = await rig.executor().execute(key=KEY, ds=DS, plan=plan, hash_=HASH)
    assert rig.recorder.events == [("agent", "Warning", "SelectingAll", "selects all pods"),
                                   ("p1", "Warning", "FailedDaemonPod", "pod p1 failed")]
    assert rig.fake.calls == [] and result.errors == []
    assert rig.expectations.get(KEY) is None


async def test_events_reach_the_api_through_a_real_recorder() -> None:
    """With the real EventRecorder on the fake client, the sync's events become Event objects about the DaemonSet."""
    fake = FakeClient()
    wall = itertools.count(1_700_000_000)
    recorder = EventRecorder(client=fake.as_client(), instance="test", wall=lambda: float(next(wall)))
    recorder.start()
    try:
        executor = PodWriter(client=fake.as_client(), expectations=Expectations(clock=lambda: 0.0),
                                recorder=recorder)
        fake.fail("create", PODS, QUOTA, when=_on("node-1"))
        await executor.execute(key=KEY, ds=DS, plan=Plan(creates=NODES[:3]), hash_=HASH)
    finally:
        await recorder.stop()
    events = [obj for (label, _, _), obj in fake.objects.items() if label == EVENTS.label]
    assert sorted(e["reason"] for e in events) == ["FailedCreate", "SuccessfulCreate", "SuccessfulCreate"]
    assert {e["involvedObject"]["uid"] for e in events} == {"ds-uid"}
    assert next(e for e in events if e["reason"] == "FailedCreate")["type"] == "Warning"


@pytest.mark.parametrize("count", [1, SPLICE_FROM - 1, SPLICE_FROM, 10])
@pytest.mark.parametrize("direct", [False, True])
async def test_every_pod_sent_is_the_pod_built_for_its_node(count: int, direct: bool) -> None:
    """Built one by one or spliced from one encoded template (from ``SPLICE_FROM`` creates on),
    each create carries exactly ``new_pod`` for its node."""
    rig = Rig()
    writer = rig.executor()
    writer.direct_binding = direct
    await writer.execute(key=KEY, ds=DS, plan=Plan(creates=NODES[:count]), hash_=HASH)
    sent = [c.body for c in rig.fake.calls if c.verb == "create" and c.resource == PODS.label]
    assert sent == [new_pod(DS, node, hash=HASH, direct_binding=direct) for node in NODES[:count]]
    # The DaemonSet's pods do splice: the case above for SPLICE_FROM and more is not a fallback.
    assert JsonTemplate.of(pod_factory(DS, hash=HASH, direct_binding=direct), probe=NODES[0]) is not None
