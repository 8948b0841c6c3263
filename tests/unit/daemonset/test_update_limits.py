"""Rolling-update budgets, pod classification and single-pass planner decisions."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.podplan import Plan
from dsctl.daemonset.template import GENERATION_ANNOTATION, GENERATION_LABEL, HASH_LABEL
from dsctl.daemonset.update import (
    AVAILABILITY_REQUEUE_MARGIN,
    InvalidRollout,
    RolloutLimits,
    find_updated_pods_on_node,
    is_pod_updated,
    max_surge,
    max_unavailable,
    plan_rolling_update,
    update_strategy_type,
    updated_desired_node_counts,
)
from dsctl_api.timefmt import format_rfc3339

NOW = 1_000.0
NEW = "h-new"
OLD = "h-old"


def make_ds(
    *,
    strategy_type: str | None = "RollingUpdate",
    max_unavailable: Any = None,
    max_surge: Any = None,
    min_ready: float | None = None,
    generation: str | None = None,
) -> dict[str, Any]:
    """A DaemonSet with the given update strategy (None leaves a field out)."""
    strategy: dict[str, Any] = {}
    if strategy_type is not None:
        strategy["type"] = strategy_type
    rolling: dict[str, Any] = {}
    if max_unavailable is not None:
        rolling["maxUnavailable"] = max_unavailable
    if max_surge is not None:
        rolling["maxSurge"] = max_surge
    if rolling:
        strategy["rollingUpdate"] = rolling
    spec: dict[str, Any] = {"updateStrategy": strategy}
    if min_ready is not None:
        spec["minReadySeconds"] = min_ready
    meta: dict[str, Any] = {"name": "agent", "namespace": "ops", "uid": "ds-uid"}
    if generation is not None:
        meta["annotations"] = {GENERATION_ANNOTATION: generation}
    return {"metadata": meta, "spec": spec}


def make_pod(
    name: str,
    node: str,
    hash_label: str | None,
    *,
    ready_since: float | None = 0.0,
    deleting: bool = False,
    generation: str | None = None,
) -> dict[str, Any]:
    """A pod on ``node``; ``ready_since`` None means not Ready, else Ready since that epoch time."""
    labels: dict[str, str] = {}
    if hash_label is not None:
        labels[HASH_LABEL] = hash_label
    if generation is not None:
        labels[GENERATION_LABEL] = generation
    meta: dict[str, Any] = {"name": name, "namespace": "ops", "uid": f"uid-{name}", "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = format_rfc3339(NOW)
    conditions = []
    if ready_since is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": format_rfc3339(ready_since)})
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {"phase": "Running", "conditions": conditions},
    }


# Upstream's TestGetUnavailableNumbers, restated: (maxSurge, maxUnavailable, desired).
@pytest.mark.parametrize(
    ("ds", "desired", "expected"),
    [
        pytest.param(make_ds(max_unavailable=0), 0, RolloutLimits(0, 0, 0), id="no-nodes-no-default"),
        pytest.param(make_ds(max_unavailable=1), 2, RolloutLimits(0, 1, 2), id="int"),
        pytest.param(make_ds(max_unavailable=0), 2, RolloutLimits(0, 1, 2), id="both-zero-defaults-to-1"),
        pytest.param(make_ds(max_unavailable=0, max_surge=0), 2, RolloutLimits(0, 1, 2), id="surge-zero-defaults-to-1"),
        pytest.param(make_ds(max_unavailable="50%"), 2, RolloutLimits(0, 1, 2), id="percent"),
        pytest.param(make_ds(max_unavailable="50%"), 3, RolloutLimits(0, 2, 3), id="percent-rounds-up"),
        pytest.param(make_ds(max_unavailable=0, max_surge="50%"), 2, RolloutLimits(1, 0, 2), id="surge-percent"),
        pytest.param(make_ds(max_unavailable=0, max_surge="100%"), 2, RolloutLimits(2, 0, 2), id="surge-100"),
        pytest.param(make_ds(max_unavailable="10%"), 1, RolloutLimits(0, 1, 1), id="tiny-percent-rounds-up"),
        pytest.param(make_ds(), 4, RolloutLimits(0, 1, 4), id="rolling-update-unset-defaults-to-1"),
        pytest.param(make_ds(strategy_type=None), 4, RolloutLimits(0, 1, 4), id="type-unset-is-rolling"),
        pytest.param(
            make_ds(strategy_type="OnDelete", max_surge=3),
            4,
            RolloutLimits(0, 1, 4),
            id="on-delete-ignores-surge",
        ),
    ],
)
def test_updated_desired_node_counts(ds: dict[str, Any], desired: int, expected: RolloutLimits) -> None:
    """Budgets are ints or percentages rounded up against desired nodes; 0/0 becomes maxUnavailable 1."""
    nodes = [f"node-{i}" for i in range(desired)]
    assert updated_desired_node_counts(ds, nodes) == expected


@pytest.mark.parametrize(
    ("ds", "field"),
    [
        pytest.param(make_ds(max_unavailable="abc"), "spec.updateStrategy.rollingUpdate.maxUnavailable", id="word"),
        pytest.param(make_ds(max_unavailable="-5%"), "spec.updateStrategy.rollingUpdate.maxUnavailable", id="neg-pct"),
        pytest.param(make_ds(max_unavailable=-1), "spec.updateStrategy.rollingUpdate.maxUnavailable", id="negative"),
        pytest.param(make_ds(max_surge="1.5"), "spec.updateStrategy.rollingUpdate.maxSurge", id="surge-float-str"),
        pytest.param(make_ds(max_surge=True), "spec.updateStrategy.rollingUpdate.maxSurge", id="surge-bool"),
        pytest.param(make_ds(strategy_type="Recreate"), "spec.updateStrategy.type", id="unknown-type"),
    ],
)
def test_invalid_rollout_names_the_field(ds: dict[str, Any], field: str) -> None:
    """A malformed strategy raises InvalidRollout naming the field, from counts and from the planner."""
    with pytest.raises(InvalidRollout) as caught:
        updated_desired_node_counts(ds, ["node-0"])
    assert caught.value.field == field
    assert field in str(caught.value)
    with pytest.raises(InvalidRollout):
        plan_rolling_update(ds=ds, nodes_should_run={"node-0"}, pods_by_node={}, hash=NEW, now=NOW)


def test_max_surge_and_unavailable_scale_independently() -> None:
    """max_surge and max_unavailable report raw values, before the 0/0 rule."""
    ds = make_ds(max_unavailable="25%", max_surge="30%")
    assert (max_surge(ds, 10), max_unavailable(ds, 10)) == (3, 3)
    assert (max_surge(make_ds(), 10), max_unavailable(make_ds(), 10)) == (0, 0)


@pytest.mark.parametrize(
    ("ds", "expected"),
    [
        pytest.param(make_ds(), "RollingUpdate", id="rolling"),
        pytest.param(make_ds(strategy_type=None), "RollingUpdate", id="default"),
        pytest.param(make_ds(strategy_type="OnDelete"), "OnDelete", id="on-delete"),
    ],
)
def test_update_strategy_type(ds: dict[str, Any], expected: str) -> None:
    """The strategy type defaults to RollingUpdate, as the API server defaults it."""
    assert update_strategy_type(ds) == expected


@pytest.mark.parametrize(
    ("pod", "generation", "expected"),
    [
        pytest.param(make_pod("p", "n", NEW), None, True, id="hash-matches"),
        pytest.param(make_pod("p", "n", OLD), None, False, id="hash-differs"),
        pytest.param(make_pod("p", "n", OLD, generation="3"), 3, True, id="generation-matches"),
        pytest.param(make_pod("p", "n", OLD, generation="2"), 3, False, id="generation-differs"),
        pytest.param(make_pod("p", "n", None), None, False, id="no-labels"),
    ],
)
def test_is_pod_updated(pod: dict[str, Any], generation: int | None, expected: bool) -> None:
    """A pod is updated when its hash label or its template-generation label is current."""
    assert is_pod_updated(pod, NEW, generation) is expected


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([], (None, None, True), id="empty"),
        pytest.param([make_pod("a", "n", NEW)], ("a", None, True), id="new-only"),
        pytest.param([make_pod("a", "n", OLD)], (None, "a", True), id="old-only"),
        pytest.param([make_pod("a", "n", OLD), make_pod("b", "n", NEW)], ("b", "a", True), id="one-each"),
        pytest.param([make_pod("a", "n", NEW), make_pod("b", "n", NEW)], (None, None, False), id="two-new"),
        pytest.param([make_pod("a", "n", OLD), make_pod("b", "n", OLD)], (None, None, False), id="two-old"),
        pytest.param(
            [make_pod("a", "n", OLD, deleting=True), make_pod("b", "n", OLD)],
            (None, "b", True),
            id="terminating-ignored",
        ),
    ],
)
def test_find_updated_pods_on_node(pods: list[dict[str, Any]], expected: tuple[Any, Any, bool]) -> None:
    """Each node yields at most one new and one old live pod; two of a kind means 'let manage prune'."""
    found = find_updated_pods_on_node(pods, NEW, None)
    names = (
        found.new["metadata"]["name"] if found.new else None,
        found.old["metadata"]["name"] if found.old else None,
        found.ok,
    )
    assert names == expected


def test_generation_annotation_marks_pods_updated_in_the_planner() -> None:
    """Pods made before hashes count as updated through the template-generation label."""
    ds = make_ds(max_unavailable=1, generation="7")
    pods = {
        "n0": [make_pod("a", "n0", None, generation="7")],
        "n1": [make_pod("b", "n1", None, generation="6")],
    }
    plan = plan_rolling_update(ds=ds, nodes_should_run={"n0", "n1"}, pods_by_node=pods, hash=NEW, now=NOW)
    assert [ref.name for ref in plan.deletes] == ["b"]


def deleted(plan: Plan) -> list[str]:
    """Names of the pods a plan deletes, in plan order."""
    return [ref.name for ref in plan.deletes]


@pytest.mark.parametrize(
    ("ds", "pods", "expected_deletes"),
    [
        pytest.param(
            make_ds(max_unavailable=1),
            {"n0": [make_pod("a", "n0", OLD)], "n1": [make_pod("b", "n1", OLD)]},
            ["a"],
            id="one-at-a-time-in-node-order",
        ),
        pytest.param(
            make_ds(max_unavailable=1),
            {"n0": [make_pod("a", "n0", OLD)], "n1": [make_pod("b", "n1", OLD, ready_since=None)]},
            ["b"],
            id="unavailable-old-first-and-uses-budget",
        ),
        pytest.param(
            make_ds(max_unavailable=1),
            {"n0": [make_pod("a", "n0", OLD)], "n1": [make_pod("b", "n1", NEW, ready_since=None)]},
            [],
            id="unready-new-pod-uses-the-budget",
        ),
        pytest.param(
            make_ds(max_unavailable=1),
            {"n0": [make_pod("a", "n0", OLD)], "n1": [make_pod("b", "n1", OLD, deleting=True)]},
            [],
            id="node-with-only-a-terminating-pod-counts-unavailable",
        ),
        pytest.param(
            make_ds(max_unavailable=2),
            {"n0": [make_pod("a", "n0", OLD)], "n1": [make_pod("b", "n1", OLD, deleting=True)]},
            ["a"],
            id="terminating-pod-is-never-deleted-again",
        ),
        pytest.param(
            make_ds(max_unavailable=3),
            {"n0": [make_pod("a", "n0", OLD), make_pod("b", "n0", OLD)], "n1": [make_pod("c", "n1", OLD)]},
            ["c"],
            id="excess-pods-left-to-manage-and-counted",
        ),
        pytest.param(
            make_ds(max_unavailable=1),
            {"n0": [make_pod("a", "n0", OLD)]},
            [],
            id="empty-desired-node-counts-unavailable",
        ),
        pytest.param(
            make_ds(max_unavailable=2),
            {"n0": [make_pod("a", "n0", OLD)]},
            ["a"],
            id="empty-desired-node-leaves-the-rest-of-the-budget",
        ),
        pytest.param(
            make_ds(max_unavailable=1),
            {
                "n0": [make_pod("a", "n0", OLD)],
                "n1": [make_pod("b", "n1", OLD)],
                "x": [make_pod("c", "x", OLD)],
            },
            ["a"],
            id="pods-on-ineligible-nodes-are-candidates-too",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=30),
            {"n0": [make_pod("a", "n0", OLD, ready_since=NOW - 10)], "n1": [make_pod("b", "n1", OLD)]},
            ["a"],
            id="old-pod-ready-too-recently-is-unavailable",
        ),
    ],
)
def test_no_surge_pass(ds: dict[str, Any], pods: dict[str, list[dict[str, Any]]], expected_deletes: list[str]) -> None:
    """Without surge: unavailable old pods go first, then available ones within maxUnavailable; no creates."""
    plan = plan_rolling_update(ds=ds, nodes_should_run={"n0", "n1"}, pods_by_node=pods, hash=NEW, now=NOW)
    assert plan.creates == ()
    assert deleted(plan) == expected_deletes


def test_on_delete_plans_nothing() -> None:
    """OnDelete never replaces a pod, however outdated or unavailable."""
    pods = {"n0": [make_pod("a", "n0", OLD, ready_since=None)], "n1": [make_pod("b", "n1", OLD)]}
    plan = plan_rolling_update(
        ds=make_ds(strategy_type="OnDelete"),
        nodes_should_run={"n0", "n1"},
        pods_by_node=pods,
        hash=NEW,
        now=NOW,
    )
    assert plan == Plan()


@pytest.mark.parametrize(
    ("ds", "pods", "creates", "deletes"),
    [
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1),
            {"n0": [make_pod("a", "n0", OLD)], "n1": [make_pod("b", "n1", OLD)]},
            ["n0"],
            [],
            id="surge-one-node",
        ),
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1),
            {
                "n0": [make_pod("a", "n0", OLD, ready_since=None)],
                "n1": [make_pod("b", "n1", OLD, ready_since=None)],
            },
            ["n0", "n1"],
            [],
            id="unavailable-old-pods-surge-beyond-budget",
        ),
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1),
            {"n0": [make_pod("a", "n0", OLD), make_pod("b", "n0", NEW)], "n1": [make_pod("c", "n1", OLD)]},
            ["n1"],
            ["a"],
            id="available-new-pod-releases-old-and-budget",
        ),
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1),
            {
                "n0": [make_pod("a", "n0", OLD), make_pod("b", "n0", NEW, ready_since=None)],
                "n1": [make_pod("c", "n1", OLD)],
            },
            [],
            [],
            id="waiting-new-pod-holds-the-budget",
        ),
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1),
            {"n0": [make_pod("a", "n0", OLD), make_pod("b", "n0", OLD)], "n1": [make_pod("c", "n1", OLD)]},
            [],
            [],
            id="excess-pods-count-as-surging",
        ),
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1),
            {"n0": [make_pod("a", "n0", NEW)], "n1": [make_pod("c", "n1", OLD, deleting=True)]},
            [],
            [],
            id="terminating-old-pod-is-left-alone",
        ),
    ],
)
def test_surge_pass(
    ds: dict[str, Any], pods: dict[str, list[dict[str, Any]]], creates: list[str], deletes: list[str]
) -> None:
    """With surge: create beside old pods within maxSurge; delete old pods whose new pod is available."""
    plan = plan_rolling_update(ds=ds, nodes_should_run={"n0", "n1"}, pods_by_node=pods, hash=NEW, now=NOW)
    assert list(plan.creates) == creates
    assert deleted(plan) == deletes


@pytest.mark.parametrize(
    ("pods", "deletes"),
    [
        pytest.param(
            {
                "gone": [make_pod("a", "gone", OLD)],
                "n0": [make_pod("b", "n0", NEW)],
                "n1": [make_pod("c", "n1", NEW)],
            },
            ["a"],
            id="enough-available-elsewhere",
        ),
        pytest.param(
            {"gone": [make_pod("a", "gone", OLD)], "n0": [make_pod("b", "n0", NEW)], "n1": []},
            [],
            id="kept-while-replacement-not-available",
        ),
        pytest.param(
            {
                "gone": [make_pod("a", "gone", OLD, ready_since=None)],
                "n0": [make_pod("b", "n0", NEW)],
                "n1": [],
            },
            ["a"],
            id="unavailable-pod-on-ineligible-node-goes-at-once",
        ),
    ],
)
def test_surge_retires_ineligible_nodes_only_when_availability_allows(
    pods: dict[str, list[dict[str, Any]]], deletes: list[str]
) -> None:
    """With surge, an available old pod on an ineligible node goes only once desired nodes are covered."""
    ds = make_ds(max_unavailable=0, max_surge=1)
    plan = plan_rolling_update(ds=ds, nodes_should_run={"n0", "n1"}, pods_by_node=pods, hash=NEW, now=NOW)
    assert deleted(plan) == deletes
    assert "gone" not in plan.creates


STILL_ROLLING = {"n9": [make_pod("z", "n9", OLD, ready_since=NOW - 600)]}
"""An old, available pod elsewhere: the rollout is in progress, so availability matters to it.

Once no old pod is left the planner returns at once (nothing to roll), and the status
requeue (``status.availability_requeue``) is what revisits pods inside minReadySeconds.
"""


@pytest.mark.parametrize(
    ("ds", "pods", "expected"),
    [
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15),
            {"n0": [make_pod("a", "n0", NEW, ready_since=NOW - 10)], **STILL_ROLLING},
            5 + AVAILABILITY_REQUEUE_MARGIN,
            id="new-pod-waits-out-min-ready",
        ),
        pytest.param(
            make_ds(max_unavailable=0, max_surge=1, min_ready=15),
            {"n0": [make_pod("a", "n0", OLD), make_pod("b", "n0", NEW, ready_since=NOW - 3)]},
            12 + AVAILABILITY_REQUEUE_MARGIN,
            id="surge-new-pod-waits-out-min-ready",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15),
            {
                "n0": [make_pod("a", "n0", NEW, ready_since=NOW - 10)],
                "n1": [make_pod("b", "n1", NEW, ready_since=NOW - 1)],
                **STILL_ROLLING,
            },
            5 + AVAILABILITY_REQUEUE_MARGIN,
            id="soonest-of-several",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15),
            {"n0": [make_pod("a", "n0", NEW, ready_since=NOW + 3600)], **STILL_ROLLING},
            15 + AVAILABILITY_REQUEUE_MARGIN,
            id="future-transition-capped-at-min-ready",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15),
            {"n0": [make_pod("a", "n0", NEW, ready_since=NOW - 10)]},
            None,
            id="no-old-pods-left-nothing-to-wait-for",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15),
            {"n0": [make_pod("a", "n0", NEW, ready_since=NOW - 60)]},
            None,
            id="already-available",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15),
            {"n0": [make_pod("a", "n0", NEW, ready_since=None)]},
            None,
            id="not-ready-waits-for-an-event",
        ),
        pytest.param(
            make_ds(max_unavailable=1),
            {"n0": [make_pod("a", "n0", NEW, ready_since=NOW)]},
            None,
            id="no-min-ready",
        ),
        pytest.param(
            make_ds(max_unavailable=1, min_ready=15.5),
            {"n0": [make_pod("a", "n0", NEW, ready_since=NOW - 10)], **STILL_ROLLING},
            None,
            id="non-integer-min-ready-is-absent-as-in-manage-and-status",
        ),
    ],
)
def test_requeue_after_min_ready_seconds(
    ds: dict[str, Any], pods: dict[str, list[dict[str, Any]]], expected: float | None
) -> None:
    """A Ready pod still inside minReadySeconds asks for a requeue when it becomes available."""
    plan = plan_rolling_update(ds=ds, nodes_should_run=set(pods), pods_by_node=pods, hash=NEW, now=NOW)
    assert plan.requeue_after == expected
