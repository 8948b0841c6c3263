"""``SyncExecutor.run`` on the fake client: the one written order of a sync, and where it stops.

Plans come from the real ``plan_sync`` over a dict-backed view, so each test states a cluster
and checks the calls that reach the API, in order, and the outcome the worker gets.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.controller.executor import SyncExecutor
from dsctl.controller.expectations import Expectations, PendingPatches
from dsctl.controller.metrics import DaemonSetGauges
from dsctl.controller.podwrites import PodWriter
from dsctl.controller.recorder import EventRecorder
from dsctl.controller.state import RuntimeState
from dsctl.controller.statuswriter import StatusMemory, StatusWriter
from dsctl.controller.workers import Done, Outcome, Retry, Terminal
from dsctl.controller.writes import WriteSignals
from dsctl.daemonset import history as hist
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.reasons import FAILED_CREATE_DISRUPTION_BUDGET
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.kube import errors
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, POD_DISRUPTION_BUDGETS, PODS
from tests.unit.daemonset.objects import DS_UID, T0, make_ds, make_node, make_pod
from tests.unit.daemonset.test_nodetable_property import DictView

from .fakeclient import FakeClient
from .test_podwrites import RecordingRecorder

KEY = "default/foo"


class Rig:
    """A fake API holding the DaemonSet, a dict view of the caches, and an executor on both."""

    def __init__(self, ds: dict[str, Any] | None = None, *, nodes: tuple[str, ...] = ("n1", "n2")) -> None:
        self.fake = FakeClient()
        self.ds = self.fake.put(DAEMONSETS, ds or make_ds())
        self.view = DictView()
        for name in nodes:
            self.view.node_objs[name] = make_node(name)
        self.recorder = RecordingRecorder()
        recorder = cast(EventRecorder, self.recorder)
        signals = WriteSignals(recorder=recorder)
        self.expectations = Expectations(clock=lambda: 0.0)
        self.clock = 100.0
        status = StatusWriter(client=self.fake.as_client(), resource=DAEMONSETS, signals=signals,
                              memory=StatusMemory(clock=lambda: self.clock), gauges=DaemonSetGauges(None),
                              recorder=recorder, wall=lambda: T0)
        self.status_writer = status
        pods = PodWriter(client=self.fake.as_client(), expectations=self.expectations, recorder=recorder,
                         signals=signals)
        self.executor = SyncExecutor(client=self.fake.as_client(), resource=DAEMONSETS, recorder=recorder,
                                     signals=signals, pods=pods, status=status, backoff=FailedPodBackoff(),
                                     pending_patches=PendingPatches(clock=lambda: 0.0), wall=lambda: T0)

    def current_revision(self) -> dict[str, Any]:
        created = hist.plan_history(ds=self.ds, revisions=[]).create
        assert created is not None
        created["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo",
                                                   "uid": DS_UID, "controller": True}]
        return created

    def plan(self, *, satisfied: bool = True) -> SyncPlan:
        return plan_sync(SyncSnapshot(ds=self.ds, view=self.view, satisfied=satisfied, now=T0,
                                      backoff=FailedPodBackoff(), fit=Eligibility.of(self.ds).check))

    async def run(self, plan: SyncPlan | None = None) -> Outcome:
        return await self.executor.run(KEY, plan or self.plan())

    def calls(self) -> list[tuple[str, str]]:
        short = {DAEMONSETS.label: "daemonsets", CONTROLLER_REVISIONS.label: "controllerrevisions", PODS.label: "pods",
                 POD_DISRUPTION_BUDGETS.label: "poddisruptionbudgets"}
        return [(c.verb, short.get(c.resource, c.resource)) for c in self.fake.calls]

    def status(self) -> dict[str, Any]:
        stored = self.fake.stored(DAEMONSETS, "foo", "default")
        assert stored is not None
        return dict(stored.get("status") or {})


def _conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in status.get("conditions", [])}


async def test_a_first_sync_snapshots_history_then_creates_pods_then_writes_status() -> None:
    """The written order: revision, pods, status; the outcome is Done."""
    rig = Rig()
    outcome = await rig.run()
    assert isinstance(outcome, Done)
    assert rig.calls() == [("create", "controllerrevisions"), ("create", "pods"), ("create", "pods"),
                           ("update_status", "daemonsets")]
    assert rig.status()["desiredNumberScheduled"] == 2 and rig.status()["observedGeneration"] == 1


@pytest.mark.parametrize(
    ("burst", "last_write_ago", "status_written"),
    [
        (None, None, False),
        ("1", None, True),
        ("1", 5.0, True),
        ("1", 0.5, False),
    ],
    ids=["all-created", "burst-capped-never-written", "burst-capped-written-5s-ago", "burst-capped-written-0.5s-ago"],
)
async def test_a_sync_that_only_created_pods_leaves_the_status_to_the_next(
    burst: str | None, last_write_ago: float | None, status_written: bool
) -> None:
    """Observing the new pods syncs again, and that sync writes the status with them counted; a
    sync whose creates the burst cap cut short still writes it unless it was written within the
    last second, so long runs report as they go."""
    ds = make_ds()
    if burst is not None:
        ds["metadata"]["annotations"] = {"dsctl.io/burst-replicas": burst}
    rig = Rig(ds)
    rig.view.revisions.append(rig.current_revision())
    if last_write_ago is not None:
        rig.clock -= last_write_ago
        await rig.status_writer.put(rig.ds, {"desiredNumberScheduled": 0})
        rig.clock += last_write_ago
        rig.fake.calls.clear()
    outcome = await rig.run()
    assert isinstance(outcome, Done)
    creates = [c for c in rig.calls() if c == ("create", "pods")]
    assert len(creates) == (1 if burst else 2)
    assert (("update_status", "daemonsets") in rig.calls()) is status_written


async def test_a_failed_revision_write_stops_before_any_pod_and_sets_replica_failure() -> None:
    """A history write that fails ends the sync: no pod is created, ReplicaFailure says why, the key is retried."""
    rig = Rig()
    rig.fake.fail("create", CONTROLLER_REVISIONS, errors.ServerError(500, "InternalError", "etcd down"))
    outcome = await rig.run()
    assert isinstance(outcome, Retry)
    assert ("create", "pods") not in rig.calls()
    assert _conditions(rig.status()).get("ReplicaFailure") == "FailedCreateRevision"


async def test_pending_expectations_write_status_only() -> None:
    """Expectations pending: the counters are written without observedGeneration, and no pod is touched."""
    ds = make_ds()
    ds["metadata"]["generation"] = 2
    rig = Rig(ds)
    rig.view.revisions.append(rig.current_revision())
    outcome = await rig.run(rig.plan(satisfied=False))
    assert isinstance(outcome, Done)
    assert rig.calls() == [("update_status", "daemonsets")]
    assert rig.status()["observedGeneration"] == 1 and rig.status()["desiredNumberScheduled"] == 2


async def test_a_failed_pod_create_skips_cleanup_and_still_reports_status() -> None:
    """A refused create: the status stage still runs (with ReplicaFailure) and the key is retried."""
    rig = Rig(nodes=("n1",))
    rig.view.revisions.append(rig.current_revision())
    rig.fake.fail("create", PODS, errors.Forbidden(403, "Forbidden", "exceeded quota: pods"))
    outcome = await rig.run()
    assert isinstance(outcome, Retry)
    assert rig.calls() == [("create", "pods"), ("update_status", "daemonsets")]
    assert _conditions(rig.status()).get("ReplicaFailure") == "FailedCreate"


async def test_a_revision_name_taken_by_the_same_template_is_reused() -> None:
    """AlreadyExists on the snapshot, holding equal data: the sync goes on to create pods."""
    rig = Rig(nodes=("n1",))
    rig.fake.put(CONTROLLER_REVISIONS, rig.current_revision())
    plan = rig.plan()  # planned on a cache that does not show the revision yet
    outcome = await rig.run(plan)
    assert isinstance(outcome, Done)
    assert ("create", "pods") in rig.calls()


async def test_an_invalid_spec_gets_its_condition_and_no_other_write() -> None:
    """A spec the controller cannot act on: the Invalid condition, a terminal outcome, nothing else."""
    ds = make_ds()
    ds["spec"]["selector"] = {"matchLabels": {"other": "x"}}
    rig = Rig(ds)
    outcome = await rig.run()
    assert isinstance(outcome, Terminal)
    assert rig.calls() == [("update_status", "daemonsets")]
    assert _conditions(rig.status()) == {"Invalid": "InvalidSpec"}


@pytest.mark.parametrize(
    ("live_uid", "deleting", "adopted"),
    [
        pytest.param(DS_UID, False, True, id="same-owner"),
        pytest.param("replaced", False, False, id="replaced-daemonset"),
        pytest.param(DS_UID, True, False, id="daemonset-deleting"),
    ],
)
async def test_adoption_needs_the_live_owner(live_uid: str, deleting: bool, adopted: bool) -> None:
    """An orphan is adopted only after a live read shows the same DaemonSet, not being deleted."""
    rig = Rig(nodes=("n1",))
    rig.view.revisions.append(rig.current_revision())
    orphan = make_pod("n1", owner_uid=None, hash=None)
    rig.view.pod_objs[orphan["metadata"]["name"]] = orphan
    rig.fake.put(PODS, orphan)
    plan = rig.plan()
    live = rig.fake.stored(DAEMONSETS, "foo", "default")
    assert live is not None
    live["metadata"]["uid"] = live_uid
    if deleting:
        live["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z"
    outcome = await rig.run(plan)
    assert (("patch", "pods") in rig.calls()) == adopted
    assert isinstance(outcome, Done if adopted else Retry)


async def test_forgetting_a_daemonset_drops_its_status_memory_and_gauges() -> None:
    """``RuntimeState.forget`` (on deletion) clears the last write, its time and every gauge series."""
    registry = CollectorRegistry()
    recorder = cast(EventRecorder, RecordingRecorder())
    fake = FakeClient()
    ds = fake.put(DAEMONSETS, make_ds())
    state = RuntimeState.create(clock=lambda: 100.0, registry=registry)
    status = StatusWriter(client=fake.as_client(), resource=DAEMONSETS, signals=WriteSignals(recorder=recorder),
                          memory=state.status, gauges=state.gauges, recorder=recorder, wall=lambda: T0)
    plan = Rig(ds).plan()
    assert plan.status is not None and plan.history is not None
    await status.write(ds, plan.status, plan.history.hash, writes_ok=True)
    labels = {"namespace": "default", "name": "foo"}
    assert state.status.wrote_within(KEY, 1.0)
    assert registry.get_sample_value("dsctl_daemonset_rollout_stuck", labels) == 0
    assert registry.get_sample_value("dsctl_daemonset_status_desired_number_scheduled", labels) == 2
    state.forget(KEY, DS_UID)
    assert not state.status.wrote_within(KEY, 1.0)
    assert registry.get_sample_value("dsctl_daemonset_rollout_stuck", labels) is None
    assert registry.get_sample_value("dsctl_daemonset_status_desired_number_scheduled", labels) is None


async def test_the_budget_goes_out_before_the_pods() -> None:
    """maxDisruptions: the PodDisruptionBudget is written before the pods, so surge pods find it tightened."""
    rig = Rig(make_ds(annotations={"dsctl.io/max-disruptions": "1"}))
    outcome = await rig.run()
    assert isinstance(outcome, Done)
    assert rig.calls() == [("create", "controllerrevisions"), ("create", "poddisruptionbudgets"),
                           ("create", "pods"), ("create", "pods"), ("update_status", "daemonsets")]
    stored = rig.fake.stored(POD_DISRUPTION_BUDGETS, "foo", "default")
    assert stored is not None and stored["spec"]["minAvailable"] == 1


async def test_a_refused_budget_write_is_signalled_and_the_pods_still_go_out() -> None:
    """A refused budget create: FailedCreateDisruptionBudget, ReplicaFailure, the pods created, a retry."""
    rig = Rig(make_ds(annotations={"dsctl.io/max-disruptions": "1"}))
    rig.fake.fail("create", POD_DISRUPTION_BUDGETS, errors.Forbidden(403, "Forbidden", "no"))
    outcome = await rig.run()
    assert isinstance(outcome, Retry)
    assert rig.calls().count(("create", "pods")) == 2
    assert FAILED_CREATE_DISRUPTION_BUDGET in [e[2] for e in rig.recorder.events]
    assert _conditions(rig.status())["ReplicaFailure"] == FAILED_CREATE_DISRUPTION_BUDGET


async def test_apps_v1_conditions_carry_only_declared_fields() -> None:
    """In apps/v1 mode no condition is sent with lastUpdateTime; RolloutSkippedNodes rides along."""
    ds = make_ds(annotations={"dsctl.io/unhealthy-node-policy": "Skip"})
    rig = Rig(ds)
    rig.view.node_objs["n1"] = make_node("n1", ready=False, ready_since=T0 - 600)
    revision = rig.current_revision()
    rig.view.revisions.append(revision)
    for node in ("n1", "n2"):
        pod = make_pod(node, hash="old", ready=node == "n2", ready_since=T0 - 600)
        rig.view.pod_objs[pod["metadata"]["name"]] = pod
    await rig.run()
    conditions = rig.status()["conditions"]
    assert {c["type"] for c in conditions} == {"Progressing", "RolloutSkippedNodes"}
    assert all("lastUpdateTime" not in c for c in conditions)
    skipped = next(c for c in conditions if c["type"] == "RolloutSkippedNodes")
    assert (skipped["status"], skipped["reason"]) == ("True", "UnhealthyNodes") and "n1" in skipped["message"]
