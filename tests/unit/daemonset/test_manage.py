"""The manage planner against upstream's scenarios (TestDealsWithExistingPods and family) and more.

Each scenario runs the same pipeline the controller runs before manage: claim the candidate
pods by selector and owner, group them by target node, then plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset.backoffview import backoff_key
from dsctl.daemonset.eligibility import Fit
from dsctl.daemonset.manage import allows_surge, cap_burst, plan_manage, slow_start_batches
from dsctl.daemonset.ownership import claim
from dsctl.daemonset.podplan import Event, Plan, PodRef
from dsctl.daemonset.podsort import group_by_node
from dsctl_api.labels import selector_from_label_selector

from .objects import (
    DS_UID,
    HASH,
    NODE_BLUE,
    NODE_RED,
    SIMPLE2,
    T0,
    make_ds,
    make_node,
    make_nodes,
    make_pod,
    make_pods,
    surge_strategy,
    taint,
)

ON_DELETE = {"type": "OnDelete"}
ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}


def run_manage(
    ds: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    now: float = T0,
    backoff: FailedPodBackoff | None = None,
) -> Plan:
    """Claim, group and plan, as one controller sync does."""
    selector = selector_from_label_selector(ds["spec"]["selector"])
    claimed = claim(pods, owner_uid=DS_UID, selector=selector, owner_namespace="default", owner_deleting=False)
    grouped = group_by_node([*claimed.owned, *claimed.to_adopt])
    return plan_manage(
        ds=ds, nodes=nodes, pods_by_node=grouped, hash=HASH, now=now, backoff=backoff or FailedPodBackoff()
    )


@dataclass
class Scenario:
    """What a scenario feeds the planner."""

    ds: dict[str, Any]
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]] = field(default_factory=list)
    now: float = T0


Build = Callable[[dict[str, Any]], Scenario]


def simple_launches(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy), make_nodes(0, 5))


def no_nodes(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy), [])


def one_node(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy), [make_node("only-node")])


def deals_with_existing_pods(strategy: dict[str, Any]) -> Scenario:
    pods = [
        *make_pods("node-1", 1),
        *make_pods("node-2", 2),
        *make_pods("node-3", 5),
        *make_pods("node-4", 2, labels=SIMPLE2),
    ]
    return Scenario(make_ds(strategy=strategy), make_nodes(0, 5), pods)


def selector_launches(strategy: dict[str, Any]) -> Scenario:
    nodes = make_nodes(0, 4) + make_nodes(4, 3, labels=NODE_BLUE)
    return Scenario(make_ds(strategy=strategy, pod_spec={"nodeSelector": NODE_BLUE}), nodes)


def selector_deletes_unselected(strategy: dict[str, Any]) -> Scenario:
    nodes = make_nodes(0, 5) + make_nodes(5, 5, labels=NODE_BLUE)
    pods = [
        *make_pods("node-0", 2, labels=SIMPLE2),
        *make_pods("node-1", 3),
        *make_pods("node-1", 1, labels=SIMPLE2),
        *make_pods("node-4", 1),
    ]
    return Scenario(make_ds(strategy=strategy, pod_spec={"nodeSelector": NODE_BLUE}), nodes, pods)


def selector_deals_with_existing(strategy: dict[str, Any]) -> Scenario:
    nodes = make_nodes(0, 5) + make_nodes(5, 5, labels=NODE_BLUE)
    pods = [
        *make_pods("node-0", 1),
        *make_pods("node-1", 3),
        *make_pods("node-1", 2, labels=SIMPLE2),
        *make_pods("node-2", 4),
        *make_pods("node-6", 13),
        *make_pods("node-7", 4, labels=SIMPLE2),
        *make_pods("node-9", 1),
        *make_pods("node-9", 1, labels=SIMPLE2),
    ]
    return Scenario(make_ds(strategy=strategy, pod_spec={"nodeSelector": NODE_BLUE}), nodes, pods)


def bad_selector(strategy: dict[str, Any]) -> Scenario:
    nodes = make_nodes(0, 4) + make_nodes(4, 3, labels=NODE_BLUE)
    return Scenario(make_ds(strategy=strategy, pod_spec={"nodeSelector": NODE_RED}), nodes)


def node_name(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy, pod_spec={"nodeName": "node-0"}), make_nodes(0, 5))


def bad_node_name(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy, pod_spec={"nodeName": "node-10"}), make_nodes(0, 5))


def name_and_selector(strategy: dict[str, Any]) -> Scenario:
    nodes = make_nodes(0, 4) + make_nodes(4, 3, labels=NODE_BLUE)
    ds = make_ds(strategy=strategy, pod_spec={"nodeSelector": NODE_BLUE, "nodeName": "node-6"})
    return Scenario(ds, nodes)


def inconsistent_name_and_selector(strategy: dict[str, Any]) -> Scenario:
    nodes = make_nodes(0, 4) + make_nodes(4, 3, labels=NODE_BLUE)
    ds = make_ds(strategy=strategy, pod_spec={"nodeSelector": NODE_BLUE, "nodeName": "node-0"})
    return Scenario(ds, nodes)


def node_affinity(strategy: dict[str, Any]) -> Scenario:
    term = {"matchExpressions": [{"key": "color", "operator": "In", "values": ["blue"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    nodes = make_nodes(0, 4) + make_nodes(4, 3, labels=NODE_BLUE)
    return Scenario(make_ds(strategy=strategy, pod_spec={"affinity": affinity}), nodes)


NO_SCHEDULE = [taint("dedicated", "NoSchedule", "user1")]
NO_EXECUTE = [taint("dedicated", "NoExecute", "user1")]
TOLERATE = {"tolerations": [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]}


def noschedule_keeps_running(strategy: dict[str, Any]) -> Scenario:
    node = make_node("tainted", taints=NO_SCHEDULE)
    return Scenario(make_ds(strategy=strategy), [node], [make_pod("tainted")])


def noexecute_evicts(strategy: dict[str, Any]) -> Scenario:
    node = make_node("tainted", taints=NO_EXECUTE)
    return Scenario(make_ds(strategy=strategy), [node], [make_pod("tainted")])


def tainted_no_launch(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy), [make_node("tainted", taints=NO_SCHEDULE)])


def tainted_tolerated_launch(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy, pod_spec=TOLERATE), [make_node("tainted", taints=NO_SCHEDULE)])


def not_ready_launch(strategy: dict[str, Any]) -> Scenario:
    node = make_node("nr", taints=[taint("node.kubernetes.io/not-ready", "NoExecute")], ready=False)
    return Scenario(make_ds(strategy=strategy), [node])


def unreachable_launch(strategy: dict[str, Any]) -> Scenario:
    return Scenario(
        make_ds(strategy=strategy), [make_node("u", taints=[taint("node.kubernetes.io/unreachable", "NoExecute")])]
    )


def tolerations_on_clean_node(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy, pod_spec=TOLERATE), make_nodes(0, 1))


def respects_termination(strategy: dict[str, Any]) -> Scenario:
    return Scenario(make_ds(strategy=strategy), make_nodes(0, 1), [make_pod("node-0", deleting=True)])


def pressure_launch(strategy: dict[str, Any]) -> Scenario:
    taints = [taint(f"node.kubernetes.io/{kind}-pressure", "NoSchedule") for kind in ("disk", "memory", "pid")]
    return Scenario(make_ds(strategy=strategy), [make_node("pressured", taints=taints)])


def unscheduled_pod_of_vanished_node(strategy: dict[str, Any]) -> Scenario:
    pods = [*make_pods("node-0", 1), *make_pods("node-1", 1), make_pod("node-2", bound=False)]
    return Scenario(make_ds(strategy=strategy), make_nodes(0, 1), pods)


UPSTREAM = [
    pytest.param(simple_launches, 5, 0, id="simple-launches"),
    pytest.param(no_nodes, 0, 0, id="no-nodes"),
    pytest.param(one_node, 1, 0, id="one-node"),
    pytest.param(deals_with_existing_pods, 2, 5, id="deals-with-existing-pods"),
    pytest.param(selector_launches, 3, 0, id="selector-launches"),
    pytest.param(selector_deletes_unselected, 5, 4, id="selector-deletes-unselected"),
    pytest.param(selector_deals_with_existing, 3, 20, id="selector-deals-with-existing"),
    pytest.param(bad_selector, 0, 0, id="bad-selector"),
    pytest.param(node_name, 1, 0, id="node-name"),
    pytest.param(bad_node_name, 0, 0, id="bad-node-name"),
    pytest.param(name_and_selector, 1, 0, id="name-and-selector"),
    pytest.param(inconsistent_name_and_selector, 0, 0, id="inconsistent-name-and-selector"),
    pytest.param(node_affinity, 3, 0, id="node-affinity"),
    pytest.param(noschedule_keeps_running, 0, 0, id="noschedule-keeps-running-pod"),
    pytest.param(noexecute_evicts, 0, 1, id="noexecute-evicts-running-pod"),
    pytest.param(tainted_no_launch, 0, 0, id="tainted-node-no-launch"),
    pytest.param(tainted_tolerated_launch, 1, 0, id="tainted-node-tolerated"),
    pytest.param(not_ready_launch, 1, 0, id="not-ready-node-launch"),
    pytest.param(unreachable_launch, 1, 0, id="unreachable-node-launch"),
    pytest.param(tolerations_on_clean_node, 1, 0, id="tolerations-on-clean-node"),
    pytest.param(respects_termination, 0, 0, id="respects-termination"),
    pytest.param(pressure_launch, 1, 0, id="pressure-taints-launch"),
    pytest.param(unscheduled_pod_of_vanished_node, 0, 1, id="unscheduled-pod-of-vanished-node"),
]


@pytest.mark.parametrize("strategy", [pytest.param(ON_DELETE, id="ondelete"), pytest.param(ROLLING, id="rolling")])
@pytest.mark.parametrize(("build", "creates", "deletes"), UPSTREAM)
def test_upstream_scenarios(build: Build, creates: int, deletes: int, strategy: dict[str, Any]) -> None:
    """The create and delete counts upstream's controller tests expect, under both strategies."""
    s = build(strategy)
    plan = run_manage(s.ds, s.nodes, s.pods, now=s.now)
    assert (len(plan.creates), len(plan.deletes)) == (creates, deletes)
    assert len(set(plan.creates)) == len(plan.creates)
    assert plan.events == ()


def test_deals_with_existing_pods_details() -> None:
    """Creates go to the empty nodes and the oldest pod of each crowded node survives."""
    s = deals_with_existing_pods(ROLLING)
    plan = run_manage(s.ds, s.nodes, s.pods)
    assert plan.creates == ("node-0", "node-4")
    survivors = {p["metadata"]["name"] for p in s.pods} - {d.name for d in plan.deletes}
    oldest_on_2 = min((p for p in s.pods if p["spec"]["nodeName"] == "node-2"), key=lambda p: p["metadata"]["name"])
    assert oldest_on_2["metadata"]["name"] in survivors
    assert all(d.uid and d.namespace == "default" for d in plan.deletes)
    assert {d.node for d in plan.deletes} == {"node-2", "node-3"}


def test_duplicate_keeps_bound_then_oldest() -> None:
    """Without surge the bound pod wins over an older unbound one; ties go by name."""
    older_unbound = make_pod("n", name="a", created=T0 - 100, bound=False)
    bound = make_pod("n", name="b", created=T0 - 50)
    bound_same_second = make_pod("n", name="c", created=T0 - 50)
    plan = run_manage(make_ds(), [make_node("n")], [bound_same_second, older_unbound, bound])
    assert sorted(d.name for d in plan.deletes) == ["a", "c"]


@pytest.mark.parametrize(
    ("failed", "normal", "expected"),
    [
        pytest.param(0, 1, (0, 0, 0), id="normal-do-nothing"),
        pytest.param(0, 0, (1, 0, 0), id="no-pods-create"),
        pytest.param(1, 0, (0, 1, 1), id="one-failed-kill-create-next-sync"),
        pytest.param(1, 3, (0, 3, 1), id="one-failed-three-normal-kill-three"),
        pytest.param(2, 0, (0, 1, 1), id="two-failed-only-one-per-sync"),
    ],
)
@pytest.mark.parametrize("strategy", [pytest.param(ON_DELETE, id="ondelete"), pytest.param(ROLLING, id="rolling")])
def test_kill_failed_pods(failed: int, normal: int, expected: tuple[int, int, int], strategy: dict[str, Any]) -> None:
    """Failed pods are deleted with a warning, duplicates pruned, and no create until the node is empty."""
    pods = [*make_pods("node-0", failed, phase="Failed"), *make_pods("node-0", normal)]
    plan = run_manage(make_ds(strategy=strategy), make_nodes(0, 1), pods)
    assert (len(plan.creates), len(plan.deletes), len(plan.events)) == expected
    assert all(e.type == "Warning" and e.reason == "FailedDaemonPod" for e in plan.events)
    assert len(plan.backoff_steps) == (1 if failed else 0)


def test_failed_pod_backoff_timing() -> None:
    """Replacing a failed pod starts a 1 s backoff; inside it the pod is left and a requeue asked for."""
    ds = make_ds()
    backoff = FailedPodBackoff(initial=1.0, maximum=900.0)
    failed = make_pod("node-0", phase="Failed")
    key = backoff_key(ds, "node-0")

    first = run_manage(ds, make_nodes(0, 1), [failed], now=T0, backoff=backoff)
    assert [d.name for d in first.deletes] == [failed["metadata"]["name"]]
    assert first.backoff_steps == (key,)
    name = failed["metadata"]["name"]
    assert first.events[0].message == f"Found failed daemon pod default/{name} on node node-0, will try to kill it"
    for step in first.backoff_steps:
        backoff.next(step, now=T0)

    again = run_manage(ds, make_nodes(0, 1), [failed], now=T0, backoff=backoff)
    assert again.deletes == () and again.events == () and again.backoff_steps == ()
    assert again.requeue_after == pytest.approx(1.0)
    assert backoff.get(key) == 1.0, "waiting must not raise the delay"

    just_before = run_manage(ds, make_nodes(0, 1), [failed], now=T0 + 0.999, backoff=backoff)
    assert just_before.deletes == ()
    assert just_before.requeue_after == pytest.approx(0.001, abs=1e-6)

    after = run_manage(ds, make_nodes(0, 1), [failed], now=T0 + 1.0, backoff=backoff)
    assert len(after.deletes) == 1 and after.backoff_steps == (key,)
    assert backoff.next(key, now=T0 + 1.0) == 2.0


def test_second_failed_pod_requeues_for_the_new_delay() -> None:
    """Two failed pods on a node: one deleted, the other waits for the backoff that delete starts."""
    backoff = FailedPodBackoff(initial=1.0, maximum=900.0)
    key = backoff_key(make_ds(), "node-0")
    backoff.next(key, now=T0 - 10)
    plan = run_manage(make_ds(), make_nodes(0, 1), make_pods("node-0", 2, phase="Failed"), backoff=backoff)
    assert len(plan.deletes) == 1
    assert plan.requeue_after == pytest.approx(2.0)


def test_new_generation_escapes_old_backoff() -> None:
    """The backoff key carries observedGeneration, so a new generation is not held back."""
    backoff = FailedPodBackoff()
    backoff.next(backoff_key(make_ds(observed_generation=1), "node-0"), now=T0)
    pods = [make_pod("node-0", phase="Failed")]
    assert run_manage(make_ds(observed_generation=1), make_nodes(0, 1), pods, backoff=backoff).deletes == ()
    assert len(run_manage(make_ds(observed_generation=2), make_nodes(0, 1), pods, backoff=backoff).deletes) == 1


def test_succeeded_pod_deleted_with_normal_event() -> None:
    """A daemon pod that exited is deleted with a Normal SucceededDaemonPod event."""
    pod = make_pod("node-0", phase="Succeeded")
    plan = run_manage(make_ds(), make_nodes(0, 1), [pod])
    assert plan.deletes == (PodRef("default", pod["metadata"]["name"], pod["metadata"]["uid"], "node-0"),)
    assert plan.creates == ()
    (event,) = plan.events
    assert (event.type, event.reason, event.regarding) == ("Normal", "SucceededDaemonPod", None)
    assert event.message == (f"Found succeeded daemon pod default/{pod['metadata']['name']} on node node-0, "
                             "will try to delete it")
    assert plan.backoff_steps == ()


def test_ineligible_node_deletes_every_live_pod() -> None:
    """On a node the DS may not run on, every pod not already terminating goes, failed or not."""
    pods = [
        make_pod("n", name="running"),
        make_pod("n", name="failed", phase="Failed"),
        make_pod("n", name="terminating", deleting=True),
    ]
    plan = run_manage(make_ds(pod_spec={"nodeSelector": NODE_BLUE}), [make_node("n")], pods)
    assert sorted(d.name for d in plan.deletes) == ["failed", "running"]
    assert plan.events == ()


def test_vanished_node_keeps_terminating_and_bound_pods() -> None:
    """Of a vanished node's pods, only live unbound ones are deleted; bound ones are pod GC's."""
    pods = [
        make_pod("gone", name="unbound", bound=False),
        make_pod("gone", name="unbound-terminating", bound=False, deleting=True),
        make_pod("gone", name="bound"),
    ]
    plan = run_manage(make_ds(), [], pods)
    assert [(d.name, d.node) for d in plan.deletes] == [("unbound", "gone")]


# Surge: upstream TestSurge* scenarios. Old pods lack the current hash.
def _surge_scenario(*, min_ready: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    ds = make_ds(strategy=surge_strategy(1), min_ready_seconds=min_ready)
    return ds, make_nodes(0, 5)


def test_surge_deals_with_existing_pods() -> None:
    """With surge, duplicates of the current hash are pruned to one, as without."""
    ds, nodes = _surge_scenario()
    pods = [
        *make_pods("node-1", 1),
        *make_pods("node-2", 2),
        *make_pods("node-3", 5),
        *make_pods("node-4", 2, labels=SIMPLE2),
    ]
    plan = run_manage(ds, nodes, pods)
    assert (len(plan.creates), len(plan.deletes)) == (2, 5)


@pytest.mark.parametrize(
    ("old_ready", "excess_deleted"),
    [
        pytest.param(True, ["node-1-excess"], id="preserves-ready-old-pod"),
        # Upstream (TestSurgeDeletesUnreadyOldPods) deletes both old pods here, leaving the node
        # with only an unready new pod; dsctl keeps the Ready old pod instead (ADR 0011).
        pytest.param(False, ["node-1-old"], id="keeps-the-ready-old-pod-over-an-older-unready-one"),
    ],
)
def test_surge_old_pod(old_ready: bool, excess_deleted: list[str]) -> None:
    """One old pod stays beside an unavailable new pod, the Ready one first; the other old pods go."""
    ds, nodes = _surge_scenario()
    pods = [
        make_pod("node-1", name="node-1-new", created=T0 - 100),
        make_pod("node-1", name="node-1-old", hash=None, created=T0 - 150, ready=old_ready),
        make_pod("node-1", name="node-1-excess", hash=None, created=T0 - 140, ready=True),
        *make_pods("node-2", 1),
    ]
    plan = run_manage(ds, nodes, pods)
    assert len(plan.creates) == 3
    assert sorted(d.name for d in plan.deletes) == sorted(excess_deleted)


def test_surge_creates_when_only_a_terminating_pod_is_left() -> None:
    """With surge a node whose only pod is terminating gets a new pod at once."""
    ds, nodes = _surge_scenario()
    pods = [
        make_pod("node-0", name="new", created=T0 - 10, ready=False),
        make_pod("node-0", name="old-ready", hash=None, created=T0 - 50, ready=True),
        *[make_pod(f"node-{i}", hash=None, created=T0 - 99, ready=True) for i in (1, 2, 3)],
        make_pod("node-4", hash=None, created=T0 - 99, ready=True, deleting=True),
    ]
    plan = run_manage(ds, nodes, pods)
    assert (plan.creates, plan.deletes) == (("node-4",), ())


@pytest.mark.parametrize(
    ("pods", "in_backoff", "creates", "deletes"),
    [
        pytest.param([("old", "Failed")], False, ("node-0",), 1, id="one-failed-replaced-at-once"),
        pytest.param([("old", "Failed"), ("new", "Failed")], False, (), 1, id="two-failed-one-stays-no-create"),
        pytest.param([("new", "Failed")], True, (), 0, id="failed-in-backoff-no-create"),
        pytest.param([("old", "Succeeded")], False, ("node-0",), 1, id="succeeded-replaced-at-once"),
    ],
)
def test_surge_creates_nothing_beside_a_failed_pod_that_stays(
        pods: list[tuple[str, str]], in_backoff: bool, creates: tuple[str, ...], deletes: int) -> None:
    """With surge, a node that keeps a failed pod for its backoff gets no new pod beside it."""
    ds, _ = _surge_scenario()
    objects = [make_pod("node-0", name=name, phase=phase, hash=None if name == "old" else HASH,
                        created=T0 - (50 if name == "old" else 10)) for name, phase in pods]
    backoff = FailedPodBackoff(initial=1.0, maximum=900.0)
    if in_backoff:
        backoff.next(backoff_key(ds, "node-0"), now=T0)
    plan = run_manage(ds, make_nodes(0, 1), objects, backoff=backoff)
    assert (plan.creates, len(plan.deletes)) == (creates, deletes)


def test_no_surge_leaves_node_with_only_terminating_pod_alone() -> None:
    """Without surge the replacement waits until the terminating pod is gone."""
    plan = run_manage(make_ds(), make_nodes(0, 1), [make_pod("node-0", deleting=True)])
    assert plan.creates == ()


@pytest.mark.parametrize(
    ("seconds_since_ready", "deleted", "requeue"),
    [
        pytest.param(10, ["node-1-excess"], 6.0, id="new-not-yet-available-keeps-old"),
        pytest.param(20, ["node-1-excess", "node-1-old"], None, id="new-available-replaces-old"),
    ],
)
def test_surge_min_ready_seconds(seconds_since_ready: int, deleted: list[str], requeue: float | None) -> None:
    """The old pod goes once the new one has been Ready for minReadySeconds; until then a requeue is asked."""
    ds, nodes = _surge_scenario(min_ready=15)
    ready_at = T0 - seconds_since_ready
    pods = [
        make_pod("node-1", name="node-1-new", created=T0 - 100, ready=True, ready_since=ready_at),
        make_pod("node-1", name="node-1-old", hash=None, created=T0 - 150, ready=True),
        make_pod("node-1", name="node-1-excess", hash=None, created=T0 - 140, ready=True),
        *make_pods("node-2", 1),
    ]
    plan = run_manage(ds, nodes, pods)
    assert len(plan.creates) == 3
    assert sorted(d.name for d in plan.deletes) == sorted(deleted)
    assert plan.requeue_after == (pytest.approx(requeue) if requeue is not None else None)


def test_surge_keeps_oldest_new_pod_only() -> None:
    """Among several pods of the current hash the oldest is kept."""
    ds, nodes = _surge_scenario()
    pods = [make_pod("node-0", name="n2", created=T0 - 5), make_pod("node-0", name="n1", created=T0 - 9)]
    plan = run_manage(ds, nodes[:1], pods)
    assert [d.name for d in plan.deletes] == ["n2"]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param({"type": "OnDelete", "rollingUpdate": {"maxSurge": 1}}, False, id="ondelete"),
        pytest.param(surge_strategy(0), False, id="zero"),
        pytest.param(surge_strategy(1), True, id="one"),
        pytest.param(surge_strategy("10%"), True, id="percent-rounds-up"),
        pytest.param(surge_strategy("0%"), False, id="zero-percent"),
        pytest.param(surge_strategy("abc"), False, id="malformed"),
        pytest.param({"type": "RollingUpdate"}, False, id="no-rolling-update-block"),
        pytest.param({"rollingUpdate": {"maxSurge": 2}}, True, id="type-defaults-to-rolling"),
    ],
)
def test_allows_surge(strategy: dict[str, Any], expected: bool) -> None:
    """Surge needs RollingUpdate with a maxSurge that scales to at least one pod."""
    assert allows_surge(make_ds(strategy=strategy)) is expected


@pytest.mark.parametrize(
    ("n", "initial", "expected"),
    [
        pytest.param(0, 1, [], id="none"),
        pytest.param(1, 1, [1], id="one"),
        pytest.param(2, 1, [1, 1], id="two"),
        pytest.param(3, 1, [1, 2], id="three"),
        pytest.param(10, 1, [1, 2, 4, 3], id="ten-remainder"),
        pytest.param(15, 1, [1, 2, 4, 8], id="fifteen-exact"),
        pytest.param(250, 1, [1, 2, 4, 8, 16, 32, 64, 123], id="burst"),
        pytest.param(12, 5, [5, 7], id="larger-initial"),
        pytest.param(3, 0, [1, 2], id="zero-initial-means-one"),
    ],
)
def test_slow_start_batches(n: int, initial: int, expected: list[int]) -> None:
    """Batches double from the initial size and the last is the remainder."""
    assert slow_start_batches(n, initial=initial) == expected


def test_cap_burst() -> None:
    """At most burst creates and burst deletes go out; events, steps and requeue survive."""
    refs = tuple(PodRef("ns", f"p{i}", f"u{i}", "n") for i in range(300))
    plan = Plan(
        creates=tuple(f"n{i}" for i in range(260)),
        deletes=refs,
        events=(Event("Warning", "FailedDaemonPod", "m"),),
        requeue_after=3.0,
        backoff_steps=("k",),
    )
    capped = cap_burst(plan, burst=250)
    assert (len(capped.creates), len(capped.deletes)) == (250, 250)
    assert capped.creates[-1] == "n249" and capped.deletes[0] == refs[0]
    assert (capped.events, capped.requeue_after, capped.backoff_steps) == (plan.events, 3.0, ("k",))
    small = Plan(creates=("a",))
    assert cap_burst(small) is small


def test_precomputed_fits_are_used() -> None:
    """Verdicts passed in are trusted; nodes missing from them are evaluated."""
    nodes = make_nodes(0, 2)
    plan = plan_manage(
        ds=make_ds(),
        nodes=nodes,
        pods_by_node={},
        hash=HASH,
        now=T0,
        backoff=FailedPodBackoff(),
        fits={"node-0": Fit(False, False)},
    )
    assert plan.creates == ("node-1",)
