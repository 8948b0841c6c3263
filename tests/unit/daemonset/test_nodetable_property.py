"""Incremental planning equals planning from scratch, over random sequences of cluster events.

Each step changes the cluster the way informers would report it (nodes join, leave, relabel
and taint, turn NotReady and Ready again, shut down, get a departing taint or a deletion mark;
pods appear, become Ready, fail, start terminating, vanish; orphans appear; time passes), names
the nodes it touched, and plans twice: incrementally from the previous
table, and from scratch. The two plans must agree on everything a sync acts on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset import history as hist
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.nodetable import NodeTable
from dsctl.daemonset.podplan import Plan, merge_plans
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.daemonset.template import HASH_LABEL, target_node
from dsctl.daemonset.update import plan_no_surge, plan_rolling_update
from dsctl_api.pods import controller_ref
from tests.support.profiles import examples
from tests.unit.daemonset.objects import T0, make_ds, make_node, make_pod, surge_strategy, taint

Obj = Mapping[str, Any]
NODE_NAMES = [f"n{i}" for i in range(8)]


class DictView:
    """A ``ClusterView`` over plain dicts."""

    def __init__(self) -> None:
        self.node_objs: dict[str, dict[str, Any]] = {}
        self.pod_objs: dict[str, dict[str, Any]] = {}
        self.revisions: list[dict[str, Any]] = []

    def nodes(self) -> Iterable[Obj]:
        return list(self.node_objs.values())

    def node(self, name: str) -> Obj | None:
        return self.node_objs.get(name)

    def pods_on_node(self, node: str) -> Iterable[Obj]:
        return [p for p in self.pod_objs.values() if target_node(p) == node]

    def owned_pods(self, uid: str) -> Iterable[Obj]:
        return [p for p in self.pod_objs.values() if (controller_ref(p) or {}).get("uid") == uid]

    def orphan_pods(self, namespace: str) -> Iterable[Obj]:
        return [p for p in self.pod_objs.values()
                if controller_ref(p) is None and p["metadata"]["namespace"] == namespace]

    def owned_revisions(self, uid: str) -> Iterable[Obj]:
        return [r for r in self.revisions if (controller_ref(r) or {}).get("uid") == uid]

    def orphan_revisions(self, namespace: str) -> Iterable[Obj]:
        return []


_node = st.sampled_from(NODE_NAMES)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("node_add"), _node, st.sampled_from(["plain", "blue", "tainted", "noexec"])),
        st.tuples(st.just("node_delete"), _node, st.just("")),
        st.tuples(st.just("pod_add"), _node, st.sampled_from(["current", "old", "failed", "succeeded",
                                                              "ready", "deleting", "unbound", "orphan",
                                                              "foreign", "ready_recent", "old_ready"])),
        st.tuples(st.just("pod_change"), _node, st.sampled_from(["ready", "fail", "delete", "terminate"])),
        st.tuples(st.just("time"), st.just(""), st.sampled_from(["1", "10", "100"])),
        st.tuples(st.just("node_life"), _node, st.sampled_from(["unready", "ready", "shutdown", "karpenter",
                                                                "deleting"])),
        # The controller's own status write: it names no node, yet moves the backoff keys.
        st.tuples(st.just("status"), st.just(""), st.sampled_from(["1", "2"])),
    ),
    min_size=1,
    max_size=25,
)


def _daemonset(kind: str) -> dict[str, Any]:
    if kind == "surge":
        ds = make_ds(strategy=surge_strategy(1), min_ready_seconds=5)
    elif kind == "selector":
        ds = make_ds(pod_spec={"nodeSelector": {"color": "blue"}}, min_ready_seconds=3)
    elif kind == "skip":
        ds = make_ds(annotations={"dsctl.io/unhealthy-node-policy": "Skip", "dsctl.io/unhealthy-node-seconds": "30",
                                  "dsctl.io/max-disruptions": "1"},
                     pod_spec={"tolerations": [{"operator": "Exists"}]}, strategy=surge_strategy(1))
    elif kind == "skip_no_surge":
        ds = make_ds(annotations={"dsctl.io/unhealthy-node-policy": "Skip", "dsctl.io/unhealthy-node-seconds": "30"},
                     pod_spec={"tolerations": [{"operator": "Exists"}]},
                     strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 3}})
    elif kind == "budget":
        ds = make_ds(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}, min_ready_seconds=5)
    else:
        ds = make_ds()
    return ds


class World:
    """The cluster, the clock and the planner's previous table."""

    def __init__(self, ds: dict[str, Any]) -> None:
        self.ds = ds
        self.view = DictView()
        created = hist.plan_history(ds=ds, revisions=[]).create
        assert created is not None
        self.view.revisions.append(created)
        self.hash = created["metadata"]["labels"][HASH_LABEL]
        self.now = T0
        self.backoff = FailedPodBackoff(maximum=60.0)
        self.rules = Eligibility.of(ds)
        self.table: NodeTable | None = None
        self.serial = 0

    def apply(self, step: tuple[str, str, str]) -> set[str]:
        """Change the cluster; return the nodes an informer would report as changed."""
        op, node, arg = step
        view = self.view
        if op == "node_add":
            labels = {"color": "blue"} if arg == "blue" else {}
            taints = [taint("k", "NoSchedule")] if arg == "tainted" else ([taint("k", "NoExecute")]
                                                                             if arg == "noexec" else None)
            obj = make_node(node, labels=labels, taints=taints)
            self.serial += 1
            obj["metadata"]["resourceVersion"] = str(self.serial)
            view.node_objs[node] = obj
            return {node}
        if op == "node_delete":
            view.node_objs.pop(node, None)
            return {node}
        if op == "node_life":
            if node not in view.node_objs:
                return set()
            before = view.node_objs[node]
            life: dict[str, Any] = {"labels": before["metadata"]["labels"], "taints": before["spec"].get("taints")}
            if arg == "unready":
                life.update(ready=False, ready_since=self.now)
            elif arg == "ready":
                life.update(ready_since=self.now)
            elif arg == "shutdown":
                life.update(ready=False, ready_since=self.now, ready_message="node is shutting down")
            elif arg == "karpenter":
                life["taints"] = [*(life["taints"] or []), taint("karpenter.sh/disrupted", "NoSchedule")]
            else:
                life["deleting"] = True
            obj = make_node(node, **life)
            self.serial += 1
            obj["metadata"]["resourceVersion"] = str(self.serial)
            view.node_objs[node] = obj
            return {node}
        if op == "time":
            self.now += float(arg)
            return set()
        if op == "status":
            status = self.ds.get("status") or {}
            observed = int(status.get("observedGeneration") or 0) + int(arg)
            self.ds = {**self.ds, "status": {**status, "observedGeneration": observed}}
            return set()
        if op == "pod_add":
            kwargs: dict[str, Any] = {"hash": self.hash, "created": self.now - 100 + self.serial}
            if arg == "old":
                kwargs["hash"] = "old-hash"
            elif arg == "old_ready":
                kwargs.update(hash="old-hash", ready=True, ready_since=self.now - 50)
            elif arg == "failed":
                kwargs["phase"] = "Failed"
            elif arg == "succeeded":
                kwargs["phase"] = "Succeeded"
            elif arg == "ready":
                kwargs.update(ready=True, ready_since=self.now - 50)
            elif arg == "ready_recent":
                kwargs.update(ready=True, ready_since=self.now - 1)
            elif arg == "deleting":
                kwargs["deleting"] = True
            elif arg == "unbound":
                kwargs["bound"] = False
            elif arg == "orphan":
                kwargs["owner_uid"] = None
            elif arg == "foreign":
                kwargs["owner_uid"] = "someone-else"
            pod = make_pod(node, **kwargs)
            view.pod_objs[pod["metadata"]["name"]] = pod
            self.serial += 1
            return {node}
        pods = [p for p in view.pod_objs.values() if target_node(p) == node]
        if not pods:
            return set()
        pod = pods[0]
        name = pod["metadata"]["name"]
        if arg == "delete":
            del view.pod_objs[name]
        else:
            if arg == "ready":
                replacement = make_pod(node, name=name, hash=pod["metadata"]["labels"].get(HASH_LABEL),
                                       ready=True, ready_since=self.now,
                                       owner_uid=(controller_ref(pod) or {}).get("uid"))
            elif arg == "fail":
                replacement = {**pod, "status": {**pod.get("status", {}), "phase": "Failed"}}
            else:
                replacement = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2023-11-14T22:13:20Z"}}
            view.pod_objs[name] = replacement
        return {node}

    def plan(self, changed: set[str] | None) -> SyncPlan:
        snapshot = SyncSnapshot(ds=self.ds, view=self.view, satisfied=True, now=self.now, backoff=self.backoff,
                                fit=self.rules.check, previous=self.table,
                                changed=frozenset(changed) if changed is not None else None)
        return plan_sync(snapshot)


def _acts(plan: SyncPlan) -> tuple[Any, ...]:
    """What a sync does with a plan, order-insensitive where the executor does not care."""
    assert plan.table is not None and plan.status is not None
    pods = plan.pods
    return (
        plan.status.counters,
        sorted(pods.creates),
        sorted((r.uid, r.node) for r in pods.deletes),
        sorted((e.type, e.reason, e.message) for e in pods.events),
        sorted(pods.backoff_steps),
        pods.requeue_after,
        plan.requeue_after,
        sorted((w.kind, w.name, w.adopt) for w in plan.ownership),
        plan.table.totals,
        plan.table.old,
        plan.skipped,
        plan.status.held_departing,
        plan.status.conditions,
        plan.status.hold,
        plan.table.extra,
        plan.table.departing,
        plan.budget,
    )


def _merged_in_node_order(table: NodeTable) -> Plan:
    """The reference for ``NodeTable.manage_plan``: every node's manage plan, merged by node name."""
    return merge_plans(outcome.manage for _, outcome in sorted(table.outcomes.items()))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["plain", "surge", "selector", "skip", "budget", "skip_no_surge"]), steps=_steps)
def test_incremental_plan_equals_full_plan(kind: str, steps: list[tuple[str, str, str]]) -> None:
    """After any event sequence, re-planning only the changed nodes gives the plan made from scratch."""
    world = World(_daemonset(kind))
    world.table = world.plan(None).table
    for step in steps:
        changed = world.apply(step)
        incremental = world.plan(changed)
        full = world.plan(None)
        assert not incremental.full
        assert _acts(incremental) == _acts(full), step
        for plan in (incremental, full):
            assert plan.table is not None
            assert plan.table.manage_plan() == _merged_in_node_order(plan.table), step
            _assert_roles_plan_as_the_walk(world, plan)
        world.table = incremental.table
        for key in full.pods.backoff_steps:  # as the executor does
            world.backoff.next(key, now=world.now)


def _assert_roles_plan_as_the_walk(world: World, plan: SyncPlan) -> None:
    """The rolling update read from the table's per-node roles is exactly the pass over every node."""
    table = plan.table
    assert table is not None and table.basis is not None
    if table.basis.surge or not table.old:
        return
    excluded = plan.skipped | table.departing
    walked = plan_rolling_update(ds=world.ds, nodes_should_run=table.should_run(), pods_by_node=table.pods_by_node(),
                                 hash=table.basis.hash, now=world.now, excluded=excluded)
    by_roles = plan_no_surge(ds=world.ds, nodes=table.no_surge_nodes(excluded), hash=table.basis.hash)
    assert by_roles == walked


_OLD_EVERYWHERE = [step for n in NODE_NAMES for step in (("node_add", n, "plain"), ("pod_add", n, "old_ready"))]


@pytest.mark.parametrize(("kind", "steps", "deletes", "requeue"), [
    pytest.param("budget", _OLD_EVERYWHERE, ["n0", "n1"], None, id="first-old-pods-by-name-within-budget"),
    pytest.param("budget", [*_OLD_EVERYWHERE, ("pod_change", "n0", "delete"), ("pod_add", "n0", "ready_recent")],
                 ["n1"], 5.0, id="a-new-pod-waiting-out-min-ready-takes-budget-and-asks-a-requeue"),
    pytest.param("budget", [*_OLD_EVERYWHERE, ("pod_add", "n5", "old")], ["n0"], None,
                 id="an-excess-counts-unavailable"),
    pytest.param("skip_no_surge", [*_OLD_EVERYWHERE, ("pod_change", "n1", "delete"), ("node_life", "n1", "unready"),
                                   ("time", "", "100")], ["n0", "n2", "n3"], None,
                 id="a-skipped-node-neither-counts-nor-is-picked"),
    pytest.param("plain", [*_OLD_EVERYWHERE, ("node_life", "n0", "karpenter")], ["n1"], None,
                 id="a-departing-node-is-left-out"),
])
def test_rolling_update_from_roles_cases(kind: str, steps: list[tuple[str, str, str]], deletes: list[str],
                                         requeue: float | None) -> None:
    """Read from the table's roles, step by step, the rolling update picks what the pass over every node picks."""
    world = World(_daemonset(kind))
    world.table = world.plan(None).table
    for step in steps:
        plan = world.plan(world.apply(step))
        world.table = plan.table
    plan = world.plan(set())
    _assert_roles_plan_as_the_walk(world, plan)
    assert plan.table is not None and plan.table.basis is not None
    by_roles = plan_no_surge(ds=world.ds, nodes=plan.table.no_surge_nodes(plan.skipped | plan.table.departing),
                             hash=plan.table.basis.hash)
    assert [r.node for r in by_roles.deletes] == deletes
    assert by_roles.requeue_after == (None if requeue is None else pytest.approx(requeue))


def test_a_changed_basis_plans_every_node() -> None:
    """A new revision hash (a template change) cannot reuse the table: every node is planned."""
    world = World(make_ds())
    world.apply(("node_add", "n1", "plain"))
    world.apply(("node_add", "n2", "plain"))
    world.table = world.plan(None).table
    world.ds = make_ds(pod_spec={"containers": [{"name": "c", "image": "img2"}]})
    world.view.revisions.clear()
    plan = world.plan(set())
    assert plan.full and plan.replanned == 2


def test_only_changed_and_volatile_nodes_are_replanned() -> None:
    """One changed node among many costs one node's planning."""
    world = World(make_ds())
    for name in NODE_NAMES:
        world.apply(("node_add", name, "plain"))
        world.apply(("pod_add", name, "ready"))
    world.table = world.plan(None).table
    plan = world.plan(world.apply(("pod_change", "n3", "fail")))
    assert not plan.full and plan.replanned == 1
    assert [r.node for r in plan.pods.deletes] == ["n3"]


def test_time_alone_changes_a_volatile_node() -> None:
    """A Ready pod waiting out minReadySeconds becomes available with no event: its node is re-planned anyway."""
    world = World(make_ds(min_ready_seconds=5))
    world.apply(("node_add", "n1", "plain"))
    world.apply(("pod_add", "n1", "ready_recent"))
    world.table = world.plan(None).table
    assert world.table is not None and world.table.totals[4] == 0
    world.apply(("time", "", "10"))
    plan = world.plan(set())
    assert plan.table is not None and plan.table.totals[4] == 1 and plan.replanned == 1


def test_a_failed_pod_in_backoff_is_replaced_when_the_backoff_ends() -> None:
    """A failed pod left alone during its node's backoff is deleted once it ends, with no event."""
    world = World(make_ds())
    world.apply(("node_add", "n1", "plain"))
    world.apply(("pod_add", "n1", "failed"))
    first = world.plan(None)
    for key in first.pods.backoff_steps:
        world.backoff.next(key, now=world.now)
    world.table = first.table
    world.apply(("pod_add", "n1", "failed"))  # the replacement failed too
    held = world.plan({"n1"})
    assert not held.pods.deletes and held.pods.requeue_after is not None
    world.table = held.table
    world.apply(("time", "", "100"))
    plan = world.plan(set())
    assert [r.node for r in plan.pods.deletes] == ["n1"]
