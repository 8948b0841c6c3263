"""Status counters, per node over the kept pod, and when a status write is due."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.podsort import group_by_node
from dsctl.daemonset.status import Status, availability_requeue, compute_status, status_changed, status_with
from dsctl.daemonset.template import GENERATION_ANNOTATION, GENERATION_LABEL

from .objects import HASH, NODE_BLUE, T0, make_ds, make_node, make_nodes, make_pod, taint


def _status(ds: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Status:
    return compute_status(ds=ds, nodes=nodes, pods_by_node=group_by_node(pods), hash=HASH, now=T0)


def test_every_counter() -> None:
    """Desired, current, misscheduled, ready, available, unavailable and updated, all in one cluster."""
    ds = make_ds(pod_spec={"nodeSelector": NODE_BLUE}, min_ready_seconds=30)
    nodes = [
        *[make_node(f"blue-{i}", labels=NODE_BLUE) for i in range(5)],
        make_node("red"),
        make_node("blue-tainted", labels=NODE_BLUE, taints=[taint("k", "NoSchedule")]),
    ]
    pods = [
        make_pod("blue-0", ready=True, ready_since=T0 - 60),  # available, updated
        make_pod("blue-1", ready=True, ready_since=T0 - 10),  # ready, not yet available
        make_pod("blue-2", hash="old", ready=True, ready_since=T0 - 60),  # available, not updated
        make_pod("blue-3", ready=False),  # scheduled only
        make_pod("red"),  # misscheduled
        make_pod("blue-tainted", ready=True, ready_since=T0 - 60),  # kept under NoSchedule: misscheduled
        make_pod("unknown-node", ready=True),  # node not in the list: not counted
    ]
    assert _status(ds, nodes, pods) == Status(
        desired_number_scheduled=5,
        current_number_scheduled=4,
        number_misscheduled=2,
        number_ready=3,
        number_available=2,
        number_unavailable=3,
        updated_number_scheduled=3,
    )


def test_counts_the_oldest_pod_of_a_node() -> None:
    """With two pods on a node only the first in keep order counts."""
    pods = [
        make_pod("n", name="old", hash="old", created=T0 - 100, ready=False),
        make_pod("n", name="new", created=T0 - 10, ready=True),
    ]
    status = _status(make_ds(), [make_node("n")], pods)
    assert (status.current_number_scheduled, status.number_ready, status.updated_number_scheduled) == (1, 0, 0)


@pytest.mark.parametrize(
    ("ready", "expected_ready"),
    [pytest.param(False, 0, id="not-ready"), pytest.param(True, 2, id="ready")],
)
def test_number_ready(ready: bool, expected_ready: int) -> None:
    """Upstream TestNumberReadyStatus: numberReady follows the pods' Ready condition."""
    nodes = make_nodes(0, 2, labels=NODE_BLUE)
    pods = [make_pod("node-0", ready=ready), make_pod("node-1", ready=ready)]
    status = _status(make_ds(), nodes, pods)
    assert status.number_ready == expected_ready
    assert status.number_available == expected_ready
    assert status.number_unavailable == 2 - expected_ready


def test_updated_by_template_generation() -> None:
    """A pod without the current hash still counts as updated by its pod-template-generation."""
    ds = make_ds(annotations={GENERATION_ANNOTATION: "4"})
    pod = make_pod("n", hash="other")
    pod["metadata"]["labels"][GENERATION_LABEL] = "4"
    assert _status(ds, [make_node("n")], [pod]).updated_number_scheduled == 1


def test_failed_and_terminating_pods_still_count_as_scheduled() -> None:
    """Status sees the same pods manage does: a failed or terminating pod occupies its node."""
    pods = [make_pod("a", phase="Failed"), make_pod("b", deleting=True)]
    status = _status(make_ds(), [make_node("a"), make_node("b"), make_node("c")], pods)
    assert (status.desired_number_scheduled, status.current_number_scheduled) == (3, 2)


def test_empty_cluster() -> None:
    """No nodes, all zero."""
    assert _status(make_ds(), [], []) == Status()


SAME = Status(
    desired_number_scheduled=2,
    current_number_scheduled=2,
    number_ready=1,
    number_available=1,
    number_unavailable=1,
    updated_number_scheduled=2,
)


@pytest.mark.parametrize(
    ("old", "generation", "changed"),
    [
        pytest.param({**SAME.as_fields(), "observedGeneration": 3}, 3, False, id="same"),
        pytest.param({**SAME.as_fields(), "observedGeneration": 4}, 3, False, id="observed-ahead"),
        pytest.param({**SAME.as_fields(), "observedGeneration": 2}, 3, True, id="generation-behind"),
        pytest.param({**SAME.as_fields(), "numberReady": 2, "observedGeneration": 3}, 3, True, id="counter-differs"),
        pytest.param({"observedGeneration": 3}, 3, True, id="counters-missing"),
        pytest.param(None, 0, True, id="no-status"),
        pytest.param(
            {**SAME.as_fields(), "observedGeneration": 3, "collisionCount": 9}, 3, False, id="other-fields-ignored"
        ),
    ],
)
def test_status_changed(old: dict[str, Any] | None, generation: int, changed: bool) -> None:
    """A write is due when a counter differs or observedGeneration lags the generation."""
    assert status_changed(old, SAME, generation=generation) is changed


def test_status_with() -> None:
    """The written status keeps unrelated fields and sets observedGeneration only when told."""
    old = {"collisionCount": 2, "numberReady": 7, "observedGeneration": 1, "conditions": []}
    kept = status_with(old, SAME, observed_generation=None)
    assert kept["collisionCount"] == 2 and kept["observedGeneration"] == 1 and kept["numberReady"] == 1
    assert kept["conditions"] == []
    raised = status_with(old, SAME, observed_generation=5)
    assert raised["observedGeneration"] == 5
    assert old["numberReady"] == 7, "the cached status is not modified"


@pytest.mark.parametrize(
    ("min_ready", "ready", "available", "expected"),
    [
        pytest.param(0, 2, 1, None, id="no-min-ready"),
        pytest.param(10, 2, 2, None, id="all-available"),
        pytest.param(10, 2, 1, 10.0, id="waiting-out-min-ready"),
    ],
)
def test_availability_requeue(min_ready: int, ready: int, available: int, expected: float | None) -> None:
    """Requeue after minReadySeconds while Ready pods are not yet available."""
    status = Status(number_ready=ready, number_available=available)
    assert availability_requeue(make_ds(min_ready_seconds=min_ready), status) == expected
