"""Node lifecycle: the facts read from a node, and what a sync does with them (Skip, departing nodes)."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset import history as hist
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.nodelifecycle import (
    DEPARTING_AUTOSCALER,
    DEPARTING_DELETING,
    DEPARTING_KARPENTER,
    DEPARTING_SHUTDOWN,
    HEALTHY,
    NodeFacts,
    counts_when_unhealthy,
    lifecycle_signature,
    node_facts,
    skipped_message,
    skipped_on,
)
from dsctl.daemonset.reasons import DEPARTING_NODES, ROLLOUT_SKIPPED_NODES, UNHEALTHY_NODES
from dsctl.daemonset.syncplan import SyncPlan, SyncSnapshot, plan_sync
from dsctl.daemonset.template import HASH_LABEL
from dsctl_api.timefmt import format_rfc3339
from tests.unit.daemonset.objects import DS_UID, T0, make_ds, make_node, make_pod, taint
from tests.unit.daemonset.test_nodetable_property import DictView

SHUTDOWN = "node is shutting down"
SKIP = {"dsctl.io/unhealthy-node-policy": "Skip", "dsctl.io/unhealthy-node-seconds": "60"}


@pytest.mark.parametrize(
    ("node", "facts"),
    [
        pytest.param(make_node("n"), HEALTHY, id="ready"),
        pytest.param(make_node("n", ready=False, ready_since=T0 - 5), NodeFacts(T0 - 5, None), id="not-ready"),
        pytest.param(make_node("n", ready="Unknown", ready_since=T0 - 9), NodeFacts(T0 - 9, None), id="unknown"),
        pytest.param(make_node("n", ready=False), HEALTHY, id="not-ready-undated-counts-as-ready"),
        pytest.param(make_node("n", ready=False, ready_since=T0 - 2, ready_message=SHUTDOWN),
                     NodeFacts(T0 - 2, DEPARTING_SHUTDOWN), id="graceful-shutdown"),
        pytest.param(make_node("n", ready=False, ready_since=T0 - 2,
                               ready_message="[container runtime is down, node is shutting down]"),
                     NodeFacts(T0 - 2, DEPARTING_SHUTDOWN), id="graceful-shutdown-among-other-errors"),
        pytest.param(make_node("n", ready="Unknown", ready_since=T0 - 2, ready_message=SHUTDOWN),
                     NodeFacts(T0 - 2, None), id="unknown-after-shutdown-is-not-departing"),
        pytest.param(make_node("n", taints=[taint("ToBeDeletedByClusterAutoscaler", "NoSchedule", "1700000000")]),
                     NodeFacts(None, DEPARTING_AUTOSCALER), id="cluster-autoscaler"),
        pytest.param(make_node("n", taints=[taint("karpenter.sh/disrupted", "NoSchedule")]),
                     NodeFacts(None, DEPARTING_KARPENTER), id="karpenter"),
        pytest.param(make_node("n", deleting=True, taints=[taint("karpenter.sh/disrupted", "NoSchedule")]),
                     NodeFacts(None, DEPARTING_DELETING), id="deleting-wins"),
        pytest.param(make_node("n", taints=[taint("DeletionCandidateOfClusterAutoscaler", "PreferNoSchedule")]),
                     HEALTHY, id="deletion-candidate-is-not-departing"),
    ],
)
def test_node_facts(node: dict[str, Any], facts: NodeFacts) -> None:
    """Unhealthy-since comes from the Ready condition; departing from shutdown, the two taints, deletion."""
    assert node_facts(node) == facts


def test_a_never_posted_node_is_unhealthy_since_its_creation() -> None:
    """Without a Ready condition a node is unhealthy since it was created."""
    node = make_node("n")
    node["status"] = {}
    node["metadata"]["creationTimestamp"] = format_rfc3339(T0 - 30)
    assert node_facts(node) == NodeFacts(T0 - 30, None)


def test_a_heartbeat_leaves_the_lifecycle_signature_alone() -> None:
    """Only lastHeartbeatTime moves on a heartbeat; a Ready flip or a departing taint changes the signature."""
    node = make_node("n", ready_since=T0 - 100)
    beat = make_node("n", ready_since=T0 - 100)
    beat["status"]["conditions"][0]["lastHeartbeatTime"] = format_rfc3339(T0)
    assert lifecycle_signature(node) == lifecycle_signature(beat)
    assert lifecycle_signature(node) != lifecycle_signature(make_node("n", ready=False, ready_since=T0))
    tainted = make_node("n", ready_since=T0 - 100, taints=[taint("karpenter.sh/disrupted", "NoSchedule")])
    assert lifecycle_signature(node) != lifecycle_signature(tainted)


@pytest.mark.parametrize(
    ("pods", "counts"),
    [
        pytest.param([("new", T0 - 200)], True, id="updated-before-it-failed-counts"),
        pytest.param([("new", T0 - 50)], False, id="updated-after-it-failed-skipped"),
        pytest.param([("old", T0 - 200)], False, id="old-pod-skipped"),
        pytest.param([], False, id="no-pod-skipped"),
        pytest.param([("old", T0 - 300), ("new", T0 - 200)], True, id="surge-pair-counts"),
    ],
)
def test_counts_when_unhealthy(pods: list[tuple[str, float]], counts: bool) -> None:
    """A node counts when its pod was of the current revision before it turned unhealthy."""
    objects = [make_pod("n", hash="cur" if kind == "new" else "old", created=created) for kind, created in pods]
    assert counts_when_unhealthy(objects, since=T0 - 100, hash="cur", generation=None) is counts


def test_the_skipped_message_names_up_to_ten() -> None:
    """The condition's message has the count and the first ten names by name."""
    message = skipped_message([f"node-{i:02d}" for i in range(12)], seconds=60)
    assert message.startswith("12 nodes are left out of the rolling update, not Ready for 60s or more: node-00,")
    assert "node-09" in message and "node-10" not in message and message.endswith(" and 2 more")


# -- plan_sync --------------------------------------------------------------------------------


def _world(ds: dict[str, Any], nodes: list[dict[str, Any]]) -> tuple[DictView, str]:
    view = DictView()
    for node in nodes:
        view.node_objs[node["metadata"]["name"]] = node
    created = hist.plan_history(ds=ds, revisions=[]).create
    assert created is not None
    created["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo",
                                               "uid": DS_UID, "controller": True}]
    created["metadata"]["namespace"] = "default"
    view.revisions.append(created)
    return view, created["metadata"]["labels"][HASH_LABEL]


def _add(view: DictView, pod: dict[str, Any]) -> dict[str, Any]:
    view.pod_objs[pod["metadata"]["name"]] = pod
    return pod


def _plan(ds: dict[str, Any], view: DictView, *, now: float = T0, budget: dict[str, Any] | None = None) -> SyncPlan:
    return plan_sync(SyncSnapshot(ds=ds, view=view, satisfied=True, now=now, backoff=FailedPodBackoff(),
                                  fit=Eligibility.of(ds).check, budget=budget))


def _rollout(annotations: dict[str, str] | None, *, dead_since: float, dead_pod: str = "old",
             dead_created: float = T0 - 1000) -> tuple[SyncPlan, dict[str, dict[str, Any]]]:
    """Four nodes with Ready old pods, but n0 is NotReady since ``dead_since`` with a not-Ready pod."""
    ds = make_ds(annotations=annotations)
    nodes = [make_node("n0", ready=False, ready_since=dead_since), *(make_node(f"n{i}") for i in (1, 2, 3))]
    view, current = _world(ds, nodes)
    pods = {"n0": _add(view, make_pod("n0", hash=current if dead_pod == "new" else "old", created=dead_created))}
    for i in (1, 2, 3):
        pods[f"n{i}"] = _add(view, make_pod(f"n{i}", hash="old", ready=True, ready_since=T0 - 900))
    return _plan(ds, view), pods


def test_count_spends_the_budget_on_the_dead_node() -> None:
    """Count (upstream): the dead node's unavailable old pod is replaced and fills maxUnavailable 1."""
    plan, pods = _rollout(None, dead_since=T0 - 300)
    assert {d.uid for d in plan.pods.deletes} == {pods["n0"]["metadata"]["uid"]}
    assert plan.skipped == frozenset() and plan.status is not None and plan.status.conditions == ()


def test_skip_leaves_the_dead_node_out_and_updates_a_healthy_one() -> None:
    """Skip: the node NotReady for 60 s is left alone and does not count; a healthy node is updated."""
    plan, pods = _rollout(SKIP, dead_since=T0 - 300)
    deleted = {d.uid for d in plan.pods.deletes}
    assert len(deleted) == 1 and pods["n0"]["metadata"]["uid"] not in deleted
    assert plan.skipped == frozenset({"n0"})
    assert plan.status is not None and plan.status.skipped == 1
    (condition,) = plan.status.conditions
    assert (condition.type, condition.reason) == (ROLLOUT_SKIPPED_NODES, UNHEALTHY_NODES)
    assert "n0" in condition.message


def test_skip_waits_for_the_threshold_and_asks_to_be_woken() -> None:
    """A node NotReady for 10 s of 60 still counts; the plan requeues for when it crosses."""
    plan, pods = _rollout(SKIP, dead_since=T0 - 10)
    assert {d.uid for d in plan.pods.deletes} == {pods["n0"]["metadata"]["uid"]}
    assert plan.skipped == frozenset()
    assert plan.requeue_after == pytest.approx(50.5)


def test_a_node_that_failed_after_its_update_still_counts() -> None:
    """Skip: a node whose current pod predates its failure counts against maxUnavailable, as upstream."""
    plan, _ = _rollout(SKIP, dead_since=T0 - 300, dead_pod="new", dead_created=T0 - 400)
    assert plan.pods.deletes == () and plan.skipped == frozenset()


def test_a_pod_created_after_the_node_failed_is_skipped() -> None:
    """Skip: a current pod created on an already dead node does not make the node count."""
    plan, _ = _rollout(SKIP, dead_since=T0 - 300, dead_pod="new", dead_created=T0 - 200)
    assert plan.skipped == frozenset({"n0"}) and len(plan.pods.deletes) == 1


def test_once_only_skipped_nodes_are_left_the_rollout_is_held_without_a_deadline() -> None:
    """Every healthy node updated: Progressing is held (Unknown / UnhealthyNodes), no deadline runs."""
    ds = make_ds(annotations=SKIP)
    view, current = _world(ds, [make_node("n0", ready=False, ready_since=T0 - 300), make_node("n1")])
    _add(view, make_pod("n0", hash="old"))
    _add(view, make_pod("n1", hash=current, ready=True, ready_since=T0 - 100))
    plan = _plan(ds, view)
    assert plan.status is not None and plan.status.hold is not None
    assert plan.status.hold.reason == UNHEALTHY_NODES
    assert "1 node skipped as unhealthy (dsctl.io/unhealthy-node-policy Skip)" in plan.status.hold.why


@pytest.mark.parametrize(
    "node",
    [
        pytest.param(make_node("n0", ready=False, ready_since=T0 - 1, ready_message=SHUTDOWN), id="shutdown"),
        pytest.param(make_node("n0", taints=[taint("ToBeDeletedByClusterAutoscaler", "NoSchedule", "1")]),
                     id="cluster-autoscaler"),
        pytest.param(make_node("n0", taints=[taint("karpenter.sh/disrupted", "NoSchedule")]), id="karpenter"),
        pytest.param(make_node("n0", deleting=True), id="deleting"),
    ],
)
@pytest.mark.parametrize("pod", [pytest.param(None, id="no-pod"), pytest.param("Failed", id="failed-pod"),
                                 pytest.param("Succeeded", id="succeeded-pod")])
def test_a_departing_node_gets_no_new_pod_even_when_every_taint_is_tolerated(node: dict[str, Any],
                                                                             pod: str | None) -> None:
    """A departing node: no create, no replacement of a failed pod, counted as held."""
    ds = make_ds(pod_spec={"tolerations": [{"operator": "Exists"}]})
    view, current = _world(ds, [node, make_node("n1")])
    if pod is not None:
        _add(view, make_pod("n0", hash=current, phase=pod))
    plan = _plan(ds, view)
    assert plan.pods.creates == ("n1",) and plan.pods.deletes == () and plan.pods.events == ()
    assert plan.status is not None and plan.status.held_departing == 1


def test_a_departing_node_keeps_its_running_pod_through_a_rollout() -> None:
    """The running pod stays: the rolling update leaves a departing node out, and holds once it alone is left."""
    ds = make_ds(pod_spec={"tolerations": [{"operator": "Exists"}]})
    node = make_node("n0", taints=[taint("karpenter.sh/disrupted", "NoSchedule")])
    view, current = _world(ds, [node, make_node("n1")])
    _add(view, make_pod("n0", hash="old", ready=True, ready_since=T0 - 500))
    _add(view, make_pod("n1", hash=current, ready=True, ready_since=T0 - 100))
    plan = _plan(ds, view)
    assert plan.pods.deletes == () and plan.pods.creates == ()
    assert plan.status is not None and plan.status.held_departing == 0
    assert plan.status.hold is not None and plan.status.hold.reason == DEPARTING_NODES


def test_a_node_that_stops_departing_gets_its_pod() -> None:
    """The taint removed (or the shutdown cancelled), the node is ordinary again."""
    ds = make_ds(pod_spec={"tolerations": [{"operator": "Exists"}]})
    view, _ = _world(ds, [make_node("n0", taints=[taint("karpenter.sh/disrupted", "NoSchedule")])])
    assert _plan(ds, view).pods.creates == ()
    view.node_objs["n0"] = make_node("n0")
    assert _plan(ds, view).pods.creates == ("n0",)



@pytest.mark.parametrize(
    ("dead_since", "dead_pod", "dead_created"),
    [
        pytest.param(T0 - 300, "old", T0 - 1000, id="old-pod-skipped"),
        pytest.param(T0 - 10, "old", T0 - 1000, id="under-the-threshold"),
        pytest.param(T0 - 300, "new", T0 - 400, id="updated-before-it-failed"),
        pytest.param(T0 - 300, "new", T0 - 200, id="updated-after-it-failed"),
        pytest.param(T0 - 300, "none", T0, id="no-pod"),
    ],
)
def test_readers_without_a_table_skip_what_the_planner_skips(dead_since: float, dead_pod: str,
                                                           dead_created: float) -> None:
    """skipped_on (what dsctl view reads the Skip policy with) names exactly the nodes plan_sync skips."""
    ds = make_ds(annotations=SKIP)
    nodes = [make_node("n0", ready=False, ready_since=dead_since), make_node("n1")]
    view, current = _world(ds, nodes)
    if dead_pod != "none":
        _add(view, make_pod("n0", hash=current if dead_pod == "new" else "old", created=dead_created))
    _add(view, make_pod("n1", hash="old", ready=True, ready_since=T0 - 900))
    plan = _plan(ds, view)
    assert plan.table is not None
    pods: dict[str, list[dict[str, Any]]] = {}
    for pod in view.pod_objs.values():
        pods.setdefault(pod["spec"]["nodeName"], []).append(pod)
    assert skipped_on(view.node_objs, pods, should_run=plan.table.should_run(), hash=current, generation=None,
                      seconds=60, now=T0) == plan.skipped
