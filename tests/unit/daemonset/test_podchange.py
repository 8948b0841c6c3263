"""Which pod updates may be dropped by the pod handler: table-driven over ``same_for_planning``.

Each case changes one thing about a realistic projected daemon pod (as the informer caches it)
and states whether a sync could decide differently afterwards.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
from dsctl.daemonset.podchange import planning_view, same_for_planning
from dsctl.informer.projections import project_pod
from tests.support.profiles import examples

Pod = dict[str, Any]
T_READY = "2026-12-01T00:00:05Z"


def _pod() -> Pod:
    """A bound, Running, not yet Ready daemon pod, in full (the projection is applied per case)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "agent-x1", "namespace": "default", "uid": "pod-uid", "resourceVersion": "100",
            "creationTimestamp": "2026-12-01T00:00:00Z",
            "labels": {"app": "agent", "controller-revision-hash": "h1", "pod-template-generation": "1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-uid",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "nodeName": "node-1",
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}},
            "containers": [{"name": "agent", "image": "agent:1"}],
        },
        "status": {
            "phase": "Running", "podIP": "10.0.0.1", "startTime": "2026-12-01T00:00:01Z",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z"},
                {"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-01T00:00:01Z"},
            ],
            "containerStatuses": [{"name": "agent", "ready": False, "restartCount": 0}],
        },
    }


def _ready(pod: Pod, status: str = "True", since: str = T_READY) -> None:
    for condition in pod["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition.update(status=status, lastTransitionTime=since)


def _set(path: str, value: Any) -> Callable[[Pod], None]:
    def change(pod: Pod) -> None:
        *parents, leaf = path.split(".")
        target = pod
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = value
    return change


def _unbind(pod: Pod) -> None:
    del pod["spec"]["nodeName"]


def _pending_without_ready(pod: Pod) -> None:
    pod["status"] = {"phase": "Pending"}


def _restart(pod: Pod) -> None:
    pod["status"]["containerStatuses"][0]["restartCount"] = 3


# (case id, change applied to the new version, whether planning may differ)
CASES: list[tuple[str, Callable[[Pod], None], bool]] = [
    ("resourceVersion only", _set("metadata.resourceVersion", "101"), False),
    ("Pending to Running", _set("status.phase", "Pending"), False),
    ("a not-Ready pod's Ready transition time", _set("status.conditions", [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-01T00:00:09Z"}]), False),
    ("no Ready condition and Ready False", _pending_without_ready, False),
    ("container restarts, IPs, other conditions", _restart, False),
    ("pod IP", _set("status.podIP", "10.0.0.2"), False),
    ("Ready becomes True", _ready, True),
    ("phase Failed", _set("status.phase", "Failed"), True),
    ("phase Succeeded", _set("status.phase", "Succeeded"), True),
    ("revision hash label", _set("metadata.labels", {"app": "agent", "controller-revision-hash": "h2"}), True),
    ("owner released", _set("metadata.ownerReferences", []), True),
    ("deletion started", _set("metadata.deletionTimestamp", "2026-12-01T00:01:00Z"), True),
    ("unbound", _unbind, True),
    ("target node affinity", _set("spec.affinity", {}), True),
]


@pytest.mark.parametrize(("change", "differs"), [pytest.param(c, d, id=i) for i, c, d in CASES])
@pytest.mark.parametrize("projected", [True, False], ids=["projected", "full"])
def test_an_update_is_dropped_only_when_no_planner_can_see_it(
    change: Callable[[Pod], None], differs: bool, projected: bool
) -> None:
    old = _pod()
    new = copy.deepcopy(old)
    change(new)
    if projected:
        old, new = project_pod(old), project_pod(new)
    assert same_for_planning(old, new) is not differs
    assert (planning_view(old) == planning_view(new)) is not differs


def test_metadata_the_projection_keeps_is_seen() -> None:
    """Metadata is compared whole: an annotation on a full object counts, though the controller's
    default projection drops it (the view errs on the side of a sync)."""
    old = _pod()
    new = copy.deepcopy(old)
    new["metadata"]["annotations"] = {"x": "y"}
    assert not same_for_planning(old, new)
    assert same_for_planning(project_pod(old), project_pod(new))


def test_the_ready_transition_time_matters_while_ready() -> None:
    """Availability counts minReadySeconds from it: a new time on a Ready pod is a change."""
    old, new = _pod(), _pod()
    _ready(old, since=T_READY)
    _ready(new, since="2026-12-01T00:00:07Z")
    assert not same_for_planning(old, new)


def test_malformed_pods_never_raise() -> None:
    broken: list[dict[str, Any]] = [{}, {"metadata": None, "spec": [], "status": "x"},
                                     {"status": {"conditions": [None, 3]}}]
    for pod in broken:
        assert planning_view(pod) == planning_view(dict(pod))


# A pod is drawn as a few fields, each from a handful of values (malformed shapes included);
# the second pod of a pair takes each field from the first or from a fresh draw, so pairs that
# differ in a single field, the ones that test each check, come up often.
_ODD: st.SearchStrategy[Any] = st.sampled_from([None, "", 1, [], {}])
_CONDITION = st.fixed_dictionaries({"type": st.sampled_from(["Ready", "Ready", "PodScheduled"]),
                                    "status": st.sampled_from(["True", "False"]),
                                    "lastTransitionTime": st.sampled_from(["t1", "t2"])})
_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "resourceVersion": st.sampled_from(["1", "2"]),
    "labels": st.sampled_from([{"app": "a"}, {"app": "b"}]),
    "annotations": st.sampled_from([{}, {IN_PLACE_ANNOTATION: "x"}]),
    "deletionTimestamp": st.sampled_from([None, "t"]),
    "spec": st.one_of(_ODD, st.fixed_dictionaries({"nodeName": st.sampled_from(["n1", "n2"])})),
    "phase": st.sampled_from(["Running", "Failed", "Succeeded", "Pending"]),
    "conditions": st.one_of(st.tuples(_CONDITION).map(list), st.tuples(_CONDITION).map(list),
                            st.lists(st.one_of(_CONDITION, _ODD), max_size=2), _ODD),
    "containerStatuses": st.one_of(_ODD, st.lists(st.fixed_dictionaries(
        {"name": st.just("c"), "restartCount": st.sampled_from([0, 1])}), max_size=1)),
    "malformed": st.sampled_from([None, "metadata", "status"]),
}
_DRAW = st.fixed_dictionaries(_FIELDS)


def _build(fields: dict[str, Any]) -> Pod:
    metadata: Any = {k: fields[k] for k in ("resourceVersion", "labels", "annotations")}
    if fields["deletionTimestamp"] is not None:
        metadata["deletionTimestamp"] = fields["deletionTimestamp"]
    status: Any = {k: fields[k] for k in ("phase", "conditions", "containerStatuses")}
    if fields["malformed"] == "metadata":
        metadata = "x"
    if fields["malformed"] == "status":
        status = ["x"]
    return {"metadata": metadata, "spec": fields["spec"], "status": status}


@settings(max_examples=examples(1000), deadline=None, database=None)
@given(first=_DRAW, second=_DRAW, take=st.lists(st.sampled_from(sorted(_FIELDS)), min_size=1, max_size=2))
def test_the_fast_comparison_agrees_with_the_views(first: dict[str, Any], second: dict[str, Any],
                                                   take: list[str]) -> None:
    """``same_for_planning`` is exactly the comparison of the two planning views."""
    old = _build(first)
    new = _build({**first, **{k: second[k] for k in take}})
    assert same_for_planning(old, new) == (planning_view(old) == planning_view(new))
