"""Pod and node projections keep the fields the controller reads, in the original shape."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl.api.pods import controller_ref, is_pod_ready
from dsctl.informer.projections import make_pod_projection, project_node, project_pod

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
        "containerStatuses": [{"name": "c", "ready": True}],
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
        },
    }


def test_domain_helpers_read_projected_pods_like_full_ones() -> None:
    """dsctl.api helpers give the same answers on the projection."""
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


def _changed(change: Any) -> dict[str, Any]:
    pod = copy.deepcopy(FULL_POD)
    change(pod)
    return pod


@pytest.mark.parametrize("change", [
    pytest.param(lambda p: None, id="unchanged"),
    pytest.param(lambda p: p["metadata"]["labels"].update(app="y"), id="label-changed"),
    pytest.param(lambda p: p["metadata"].pop("labels"), id="labels-removed"),
    pytest.param(lambda p: p["metadata"]["ownerReferences"][0].update(controller=False), id="owner-released"),
    pytest.param(lambda p: p["metadata"].pop("ownerReferences"), id="owners-removed"),
    pytest.param(lambda p: p["status"]["conditions"][1].update(status="False"), id="ready-flipped"),
    pytest.param(lambda p: p["status"]["conditions"][1].update(lastTransitionTime="t2"), id="ready-since"),
    pytest.param(lambda p: p["status"].pop("conditions"), id="conditions-removed"),
    pytest.param(lambda p: p["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0].update(
            values=["n2"]), id="target-node-changed"),
    pytest.param(lambda p: p["spec"].pop("affinity"), id="affinity-removed"),
    pytest.param(lambda p: p["spec"].update(nodeName="n9"), id="bound-elsewhere"),
])
def test_update_projects_like_a_fresh_projection(change: Any) -> None:
    """Projecting a new version against the cached one gives exactly the fresh projection,
    and reuses the cached sub-objects that did not change."""
    projection = make_pod_projection(keep_annotations=("other",))
    cached = projection(copy.deepcopy(FULL_POD))
    new = _changed(change)
    updated = projection.update(copy.deepcopy(new), cached)
    assert updated == projection(copy.deepcopy(new))
    labels = updated["metadata"].get("labels")
    if labels == cached["metadata"]["labels"]:
        assert labels is cached["metadata"]["labels"]
    conditions = updated["status"].get("conditions")
    if conditions == cached["status"]["conditions"]:
        assert conditions is cached["status"]["conditions"]


def test_update_ignores_a_previous_of_another_shape() -> None:
    """A previous version that is not a projection (full object) is never reused wholesale."""
    projection = make_pod_projection()
    updated = projection.update(copy.deepcopy(FULL_POD), copy.deepcopy(FULL_POD))
    assert updated == projection(copy.deepcopy(FULL_POD))
