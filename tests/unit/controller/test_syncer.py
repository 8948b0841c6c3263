"""``Syncer``: snapshot, plan and execute over real indexed stores and the fake client, on injected clocks.

The part under test is what the syncer adds to ``plan_sync`` and the executor: the table it
keeps between syncs, the changes it takes, and the recount that catches a change nobody noted.
"""

from __future__ import annotations

from typing import Any, cast

from prometheus_client import CollectorRegistry

from dsctl.controller.cacheview import (
    BY_TARGET_NODE,
    ORPHANS_BY_NAMESPACE,
    CacheView,
    by_target_node,
    orphans_by_namespace,
)
from dsctl.controller.executor import SyncExecutor
from dsctl.controller.metrics import PlanMetrics
from dsctl.controller.podwrites import PodWriter
from dsctl.controller.recorder import EventRecorder
from dsctl.controller.state import RuntimeState
from dsctl.controller.statuswriter import StatusWriter
from dsctl.controller.syncer import Syncer
from dsctl.controller.workers import Deferred, Done, Retry
from dsctl.controller.writes import WriteSignals
from dsctl.daemonset.template import target_node
from dsctl.informer import BY_OWNER_UID, ReadOnlyStore, Store, by_owner_uid
from dsctl.kube import errors
from dsctl.kube.resources import DAEMONSETS, PODS
from dsctl.tuning import GONE_SECONDS, JOIN_RECHECK_SECONDS
from tests.unit.daemonset.objects import T0, make_ds, make_node

from .fakeclient import FakeClient
from .test_podwrites import RecordingRecorder

KEY = "default/foo"


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Rig:
    """A syncer on stores the test fills, writing to a fake API that mirrors pods back into the store."""

    def __init__(self, *, nodes: int, burst: int = 250) -> None:
        self.fake = FakeClient()
        self.registry = CollectorRegistry()
        self.clock = Clock()
        self.daemonsets = Store()
        self.nodes = Store()
        self.pods = Store(indexers={BY_TARGET_NODE: by_target_node, BY_OWNER_UID: by_owner_uid,
                                    ORPHANS_BY_NAMESPACE: orphans_by_namespace})
        self.revisions = Store(indexers={BY_OWNER_UID: by_owner_uid, ORPHANS_BY_NAMESPACE: orphans_by_namespace})
        ds = self.fake.put(DAEMONSETS, make_ds())
        self.daemonsets.upsert(ds)
        for i in range(nodes):
            self.add_node(f"n{i}", noted=False)
        recorder = cast(EventRecorder, RecordingRecorder())
        self.state = RuntimeState.create(clock=self.clock, registry=self.registry)
        self.changes = self.state.changes
        signals = WriteSignals(recorder=recorder, failures=self.state.failures)
        status = StatusWriter(client=self.fake.as_client(), resource=DAEMONSETS, signals=signals,
                              memory=self.state.status, gauges=self.state.gauges, recorder=recorder, wall=lambda: T0)
        pods = PodWriter(client=self.fake.as_client(), expectations=self.state.expectations, recorder=recorder,
                         signals=signals)
        executor = SyncExecutor(client=self.fake.as_client(), resource=DAEMONSETS, recorder=recorder, signals=signals,
                                pods=pods, status=status, backoff=self.state.backoff,
                                pending_patches=self.state.pending_patches, wall=lambda: T0)
        self.syncer = Syncer(resource=DAEMONSETS, daemonsets=ReadOnlyStore(self.daemonsets),
                             view=CacheView(nodes=ReadOnlyStore(self.nodes), pods=ReadOnlyStore(self.pods),
                                            revisions=ReadOnlyStore(self.revisions)),
                             pods=ReadOnlyStore(self.pods), state=self.state, executor=executor,
                             metrics=PlanMetrics(self.registry), global_burst=burst,
                             priority_of=lambda ds: 0, wall=lambda: T0, monotonic=self.clock, recount_seconds=300.0)

    def add_node(self, name: str, *, noted: bool = True) -> None:
        node = make_node(name)
        node["metadata"]["resourceVersion"] = "1"
        self.nodes.upsert(node)
        if noted:
            self.changes.node_changed(name)

    async def sync(self) -> Any:
        """One sync, then what an informer would show: the pods and revisions created, each noted."""
        outcome = await self.syncer.sync(KEY)
        self.observe()
        return outcome

    def observe(self) -> None:
        """What an informer would show of the API now: new pods and revisions, each noted."""
        for (label, _ns, _name), obj in list(self.fake.objects.items()):
            if label == PODS.label and self.pods.get(f"default/{obj['metadata']['name']}") is None:
                self.pods.upsert(obj)
                self.state.expectations.creation_observed(KEY)
                self.changes.pod_changed(KEY, target_node(obj))
            elif label.endswith("controllerrevisions") and self.revisions.get(
                    f"default/{obj['metadata']['name']}") is None:
                self.revisions.upsert(obj)

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    def pods_on(self) -> list[str]:
        return sorted(str(target_node(p)) for p in self.pods.list())


async def test_a_first_sync_plans_everything_then_only_what_changed() -> None:
    """Sync one plans all nodes; after a node joins, the next sync plans that node alone and creates its pod."""
    rig = Rig(nodes=5)
    assert isinstance(await rig.sync(), Done)
    assert rig.metric("dsctl_sync_planned_nodes_total", mode="full") == 5
    await rig.sync()  # observes the five pods
    rig.add_node("n9")
    await rig.sync()
    assert rig.pods_on() == ["n0", "n1", "n2", "n3", "n4", "n9"]
    assert rig.metric("dsctl_sync_plans_total", mode="incremental") == 2
    assert rig.metric("dsctl_sync_planned_nodes_total", mode="incremental") == 5 + 1


async def test_the_recount_catches_a_change_nobody_noted() -> None:
    """A node added without a note stays unplanned until the recount, which plans it and counts the miss."""
    rig = Rig(nodes=2)
    await rig.sync()
    await rig.sync()
    rig.add_node("n7", noted=False)
    await rig.sync()
    assert "n7" not in rig.pods_on()
    rig.clock.now += 301.0
    await rig.sync()
    assert "n7" in rig.pods_on()
    assert rig.metric("dsctl_sync_plan_mismatches_total") == 1


async def test_a_deleted_daemonset_forgets_its_table() -> None:
    """Gone from the cache: the next object under the key is planned from scratch."""
    rig = Rig(nodes=2)
    await rig.sync()
    rig.daemonsets.delete(KEY)
    assert isinstance(await rig.sync(), Done)
    rig.daemonsets.upsert(make_ds())
    await rig.sync()
    assert rig.metric("dsctl_sync_plans_total", mode="full") == 2


async def test_a_sync_waits_for_its_creates_while_the_status_is_fresh() -> None:
    """Creates in flight and a status written under two seconds ago: the sync is put off until
    the status is due, writing nothing and keeping the changes; once observed, the next sync acts."""
    rig = Rig(nodes=5, burst=2)
    await rig.syncer.sync(KEY)  # creates 2 (the burst), writes status; nothing observed yet
    writes = len(rig.fake.calls)
    rig.add_node("n9")
    rig.clock.now += 0.4
    outcome = await rig.syncer.sync(KEY)
    assert isinstance(outcome, Deferred)
    assert abs(outcome.requeue_after - 1.6) < 1e-9
    assert len(rig.fake.calls) == writes
    assert rig.changes.take(KEY) == frozenset({"n9"})  # still there for the sync that plans it
    rig.changes.node_changed("n9")
    rig.observe()
    assert not isinstance(await rig.sync(), Deferred)
    assert rig.pods_on() == ["n0", "n1", "n2", "n3"]


async def test_a_due_status_or_a_new_spec_is_not_put_off() -> None:
    """Creates still in flight, but the status is two seconds old, or the spec changed: sync now."""
    rig = Rig(nodes=5, burst=2)
    await rig.syncer.sync(KEY)
    rig.clock.now += 1.9
    assert isinstance(await rig.syncer.sync(KEY), Deferred)
    rig.clock.now += 0.1
    assert not isinstance(await rig.syncer.sync(KEY), Deferred)

    rig = Rig(nodes=5, burst=2)
    await rig.syncer.sync(KEY)
    changed = make_ds()
    changed["metadata"]["generation"] = 2
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "new"
    rig.daemonsets.upsert(changed)
    rig.clock.now += 0.1
    assert not isinstance(await rig.syncer.sync(KEY), Deferred)
    assert rig.metric("dsctl_sync_plans_total", mode="full") == 2  # the new spec was planned


async def test_a_held_back_sync_comes_back_when_its_expectations_expire() -> None:
    """Creates never observed: the status-only sync asks to be requeued when the record expires,
    so a lost event cannot leave the DaemonSet waiting for an event that never comes."""
    rig = Rig(nodes=5, burst=2)
    await rig.syncer.sync(KEY)  # two creates in flight, never observed here
    rig.clock.now += 2.0  # the status is due: not put off
    outcome = await rig.syncer.sync(KEY)
    assert isinstance(outcome, Done)
    assert outcome.requeue_after is not None and abs(outcome.requeue_after - (300.0 - 2.0)) < 1e-6


async def test_a_daemonset_the_api_says_is_gone_is_not_acted_on_from_a_stale_cache() -> None:
    """The status write answers 404 while the cache still holds the DaemonSet (its watch
    lagging): the next syncs create nothing until the cache hears, or ``GONE_SECONDS`` pass."""
    rig = Rig(nodes=5, burst=2)
    rig.fake.fail("update_status", DAEMONSETS, errors.NotFound(404, "NotFound", "daemonsets.apps foo not found"))
    assert isinstance(await rig.syncer.sync(KEY), Retry)  # created 2, then the 404
    rig.observe()
    created = rig.fake.verbs(PODS).count("create")
    outcome = await rig.syncer.sync(KEY)
    assert isinstance(outcome, Deferred) and abs(outcome.requeue_after - GONE_SECONDS) < 1e-6
    assert rig.fake.verbs(PODS).count("create") == created
    rig.clock.now += GONE_SECONDS  # no other answer confirmed it: act again
    assert not isinstance(await rig.syncer.sync(KEY), Deferred)
    assert rig.fake.verbs(PODS).count("create") > created


async def test_a_replaced_daemonset_gets_no_status_from_its_predecessor() -> None:
    """The status write conflicts and the name now holds another UID: nothing is written to
    the newcomer, and the old one is taken as gone."""
    rig = Rig(nodes=5, burst=2)
    cached = rig.daemonsets.get(KEY)
    assert cached is not None
    replacement = make_ds()
    replacement["metadata"]["uid"] = "another-uid"
    rig.fake.put(DAEMONSETS, replacement)  # the API's object changed; the cache still has the old
    outcome = await rig.syncer.sync(KEY)
    assert isinstance(outcome, Retry)
    last_write = [c for c in rig.fake.calls if c.verb == "update_status"][-1]
    assert last_write.body["metadata"]["uid"] == cached["metadata"]["uid"]
    assert isinstance(await rig.syncer.sync(KEY), Deferred)


async def test_creates_held_for_a_higher_priority_daemonset_come_back_in_a_recheck() -> None:
    """A node joined that a DaemonSet of higher priority also wants and has not synced for yet:
    the create there is left out, and the sync itself asks to come back in ``JOIN_RECHECK_SECONDS``.
    Another event may never come (this DaemonSet's pods may all be settled), so without that
    requeue the node would wait for the periodic resync."""
    rig = Rig(nodes=2)
    await rig.sync()
    assert rig.pods_on() == ["n0", "n1"]
    rig.state.join_order.node_wanted("n9", [(KEY, 0), ("default/critical", 100)], now=rig.clock())
    rig.add_node("n9")
    outcome = await rig.sync()
    assert isinstance(outcome, Done) and outcome.requeue_after == JOIN_RECHECK_SECONDS
    assert rig.pods_on() == ["n0", "n1"]
    rig.state.join_order.synced("default/critical", started=rig.clock())
    rig.clock.now += JOIN_RECHECK_SECONDS
    await rig.sync()
    assert rig.pods_on() == ["n0", "n1", "n9"]
