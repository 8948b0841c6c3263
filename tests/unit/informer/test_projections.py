"""Pod and node projections keep the fields the controller reads, in the original shape."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl.informer.projections import SharedValues, make_pod_projection, project_node, project_pod
from dsctl_api.pods import controller_ref, is_pod_ready

FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "ds-abc",
        "namespace": "d",
        "uid": "pod-uid",
        "resourceVersion": "42",
        "generateName": "ds-",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "deletionTimestamp": "2026-01-01T00:01:00Z",
        "labels": {"app": "x", "controller-revision-hash": "h1"},
        "annotations": {"sim.dsctl.io/startup-seconds": "1", "other": "y"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                             "uid": "ds-uid", "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "x"}],
    },
    "spec": {
        "nodeName": "n1",
        "containers": [{"name": "c", "image": "busybox"}],
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
            "podAntiAffinity": {"x": 1},
        },
        "tolerations": [{"operator": "Exists"}],
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z",
             "reason": "r"},
        ],
        "containerStatuses": [{"name": "c", "ready": True, "restartCount": 2, "image": "busybox"}],
    },
}


def test_pod_projection_shape() -> None:
    """The projected pod is exactly the documented subset, nested as in the API."""
    assert project_pod(FULL_POD) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "ds-abc", "namespace": "d", "uid": "pod-uid", "resourceVersion": "42",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": "2026-01-01T00:01:00Z",
            "labels": {"app": "x", "controller-revision-hash": "h1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                 "uid": "ds-uid", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "nodeName": "n1",
            "affinity": {"nodeAffinity": FULL_POD["spec"]["affinity"]["nodeAffinity"]},
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": "2026-01-01T00:00:05Z"}],
            "containerStatuses": [{"name": "c", "restartCount": 2}],
        },
    }


def test_domain_helpers_read_projected_pods_like_full_ones() -> None:
    """dsctl_api helpers give the same answers on the projection."""
    slim = project_pod(FULL_POD)
    assert is_pod_ready(slim) is is_pod_ready(FULL_POD) is True
    assert controller_ref(slim) == controller_ref(FULL_POD)


def test_kept_annotations() -> None:
    """make_pod_projection keeps only the named annotations."""
    slim = make_pod_projection(keep_annotations=("other",))(FULL_POD)
    assert slim["metadata"]["annotations"] == {"other": "y"}


def test_projection_of_sparse_pod() -> None:
    """A pod without spec/status details projects without inventing fields."""
    assert project_pod({"metadata": {"name": "p", "namespace": "d"}}) == {
        "metadata": {"name": "p", "namespace": "d"}}


def test_node_projection_shape() -> None:
    """Nodes keep labels, taints, unschedulable and the Ready condition only."""
    node = {
        "metadata": {"name": "n1", "uid": "u", "resourceVersion": "3", "labels": {"a": "b"},
                     "annotations": {"x": "y"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True,
                 "podCIDR": "10.0.0.0/24"},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                  {"type": "Ready", "status": "False"}],
                   "capacity": {"cpu": "4"}, "nodeInfo": {"kubeletVersion": "v1"}},
    }
    assert project_node(node) == {
        "metadata": {"name": "n1", "uid": "u", "resourceVersion": "3", "labels": {"a": "b"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }


def test_label_strings_are_interned() -> None:
    """Equal label values across projected pods are one string object."""
    a = project_pod({"metadata": {"name": "a", "labels": {"k": "".join(["v", "1"])}}})
    b = project_pod({"metadata": {"name": "b", "labels": {"k": "".join(["v", "1"])}}})
    assert a["metadata"]["labels"]["k"] is b["metadata"]["labels"]["k"]



def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}


TARGET = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}


@pytest.mark.parametrize("affinity", [
    pytest.param(_affinity(TARGET), id="daemon-target-node"),
    pytest.param(_affinity({"matchFields": [{"key": "metadata.name", "operator": "In",
                                             "values": ["n1", "n2"]}]}), id="two-nodes"),
    pytest.param(_affinity({"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                             "values": ["n1"]}]}), id="not-in"),
    pytest.param(_affinity(TARGET, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
                 id="two-terms"),
])
def test_required_affinity_kept_exactly_and_shared(affinity: dict[str, Any]) -> None:
    """Any required node affinity is kept as is; equal ones are one shared object, and a
    different one never takes another's place."""
    def pod(aff: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": "p"}, "spec": {"affinity": copy.deepcopy(aff)}}

    first, second = project_pod(pod(affinity)), project_pod(pod(affinity))
    assert first["spec"]["affinity"] == affinity
    assert first["spec"]["affinity"] is second["spec"]["affinity"]
    other = project_pod(pod(_affinity(TARGET) if affinity != _affinity(TARGET)
                            else _affinity({"matchFields": []})))
    assert other["spec"]["affinity"] != first["spec"]["affinity"]


def _daemon_pod(name: str, node: str, *, ready_since: str = "2026-01-01T00:00:05Z",
                restarts: int = 0) -> dict[str, Any]:
    pod = copy.deepcopy(FULL_POD)
    pod["metadata"]["name"] = name
    pod["spec"]["nodeName"] = node
    pod["spec"]["affinity"] = _affinity({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                          "values": [node]}]})
    pod["status"]["conditions"][1]["lastTransitionTime"] = ready_since
    pod["status"]["containerStatuses"][0]["restartCount"] = restarts
    return pod


def test_pods_on_one_node_share_their_spec() -> None:
    """The pods of different DaemonSets on one node hold one spec object; another node's
    pods hold another, equal to what each pod says."""
    a, b = project_pod(_daemon_pod("a-1", "n7")), project_pod(_daemon_pod("b-1", "n7"))
    other = project_pod(_daemon_pod("a-2", "n8"))
    assert a["spec"] is b["spec"]
    assert other["spec"] is not a["spec"]
    assert other["spec"]["nodeName"] == "n8"
    assert other["spec"]["affinity"] == _affinity(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n8"]}]})
    assert project_pod({"metadata": {"name": "p"}, "spec": {"nodeName": ["odd"]}})["spec"] == {
        "nodeName": ["odd"]}


def test_pods_ready_alike_share_their_status() -> None:
    """Pods Ready since the same moment with equal restart counts hold one status object;
    any difference gives another, equal to what each pod says."""
    a, b = project_pod(_daemon_pod("a-1", "n1")), project_pod(_daemon_pod("b-1", "n2"))
    later = project_pod(_daemon_pod("c-1", "n3", ready_since="2026-01-01T00:00:06Z"))
    restarted = project_pod(_daemon_pod("d-1", "n4", restarts=3))
    assert a["status"] is b["status"]
    assert later["status"] is not a["status"]
    assert later["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:06Z"
    assert restarted["status"] is not a["status"]
    assert restarted["status"]["containerStatuses"] == [{"name": "c", "restartCount": 3}]


def test_a_full_shared_table_keeps_what_is_held_and_grows() -> None:
    """A table at its bound drops only the values nothing else holds and doubles its bound
    past what it kept, so sharing per node survives at any cluster size."""
    table = SharedValues(max_entries=4)
    held = [table.get(("held", i), dict) for i in range(3)]
    table.get("dropped", dict)
    table.get("next", dict)  # the bound is reached: a sweep
    assert set(table.table) == {("held", 0), ("held", 1), ("held", 2), "next"}
    assert table.max_entries == 6
    assert table.get(("held", 1), dict) is held[1]


def test_a_sweep_is_spread_over_the_insertions_that_follow() -> None:
    """No insertion examines more than a step of a large table; the sweep ends after a
    sixty-fourth of its entries in insertions, with the same result as one pass."""
    table = SharedValues(max_entries=6400)
    held = [table.get(("held", i), dict) for i in range(3200)]
    for i in range(3200):
        table.get(("dropped", i), dict)
    table.get("first", dict)  # the bound is reached: the sweep begins
    assert table.sweeping and len(table) > 6400 - 64
    insertions = 1
    while table.sweeping:
        table.get(("later", insertions), dict)
        insertions += 1
    assert insertions == 6400 // 64
    assert not any(key[0] == "dropped" for key in table.table if isinstance(key, tuple))
    assert all(table.table[("held", i)] is held[i] for i in range(0, 3200, 97))
    assert table.max_entries == 2 * (len(table) - 1)  # set before the insertion that ended it


def test_sweep_finishes_at_once_when_asked() -> None:
    """``sweep`` completes a running sweep in one call."""
    table = SharedValues(max_entries=1000)
    held = [table.get(("held", i), dict) for i in range(10)]
    for i in range(990):
        table.get(("dropped", i), dict)
    table.get("first", dict)
    assert table.sweeping
    table.sweep()
    assert not table.sweeping
    assert len(held) == 10 and set(table.table) >= {("held", i) for i in range(10)}
    assert not any(isinstance(key, tuple) and key[0] == "dropped" for key in table.table)
