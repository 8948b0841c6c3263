"""Which pod updates may be dropped by the pod handler: table-driven over ``same_for_planning``.

Each case changes one thing about a realistic projected daemon pod (as the informer caches it)
and states whether a sync could decide differently afterwards.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from dsctl.daemonset.podchange import planning_view, same_for_planning
from dsctl.informer.projections import project_pod

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
