"""ObjectMeta rules for every kind, and the Node, Namespace, Lease, Event and CRD rules."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl_sim.validation import apply_defaults, validate

Obj = dict[str, Any]


def lease(**meta: Any) -> Obj:
    """A valid Lease with metadata fields replaced."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "dsctl", "namespace": "kube-system", **meta},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
    }


@pytest.mark.parametrize(
    ("meta", "field", "reason"),
    [
        pytest.param({"name": "UPPER"}, "metadata.name", "FieldValueInvalid", id="uppercase-name"),
        pytest.param({"name": "a" * 254}, "metadata.name", "FieldValueInvalid", id="long-name"),
        pytest.param({"name": "", "generateName": "Bad_"}, "metadata.generateName", "FieldValueInvalid",
                     id="bad-generate-name"),
        pytest.param({"namespace": "Bad_NS"}, "metadata.namespace", "FieldValueInvalid", id="bad-namespace"),
        pytest.param({"labels": {"a/b/c": "x"}}, "metadata.labels", "FieldValueInvalid", id="label-key-slashes"),
        pytest.param({"labels": {"ok": "x" * 64}}, "metadata.labels", "FieldValueInvalid", id="label-value-long"),
        pytest.param({"labels": {"ok": "-bad"}}, "metadata.labels", "FieldValueInvalid", id="label-value-dash"),
        pytest.param({"annotations": {"bad key": "x"}}, "metadata.annotations", "FieldValueInvalid",
                     id="annotation-key"),
        pytest.param({"annotations": {"big": "x" * (256 * 1024)}}, "metadata.annotations", "FieldValueTooLong",
                     id="annotations-too-big"),
        pytest.param({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x"}]},
                     "metadata.ownerReferences[0].uid", "FieldValueInvalid", id="owner-without-uid"),
        pytest.param({"ownerReferences": [
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True}]},
            "metadata.ownerReferences", "FieldValueInvalid", id="two-controllers"),
        pytest.param({"finalizers": ["bad finalizer"]}, "metadata.finalizers", "FieldValueInvalid",
                     id="finalizer-name"),
    ],
)
def test_object_meta(meta: Obj, field: str, reason: str) -> None:
    """Name, namespace, label, annotation, owner and finalizer syntax apply to every kind."""
    causes = validate("coordination.k8s.io/leases", lease(**meta), None)
    assert (field, reason) in [(c["field"], c["reason"]) for c in causes], causes


def test_unknown_keys_get_metadata_checks_only() -> None:
    """Custom resources: metadata is checked, the body is not."""
    widget: dict[str, Any] = {"metadata": {"name": "w", "namespace": "default"}, "spec": {"anything": [1, "x"]}}
    assert validate("example.com/widgets", widget, None) == []
    widget["metadata"]["name"] = "W!"
    assert [c["field"] for c in validate("example.com/widgets", widget, None)] == ["metadata.name"]


def test_cluster_scoped_objects_refuse_a_namespace() -> None:
    """A namespace on a Node is forbidden."""
    node = {"metadata": {"name": "n", "namespace": "default"}}
    assert [(c["field"], c["reason"]) for c in validate("nodes", node, None)] == [
        ("metadata.namespace", "FieldValueForbidden")
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [pytest.param("name", "other", id="name"), pytest.param("uid", "u-2", id="uid")],
)
def test_identity_is_immutable(field: str, value: str) -> None:
    """Updates cannot rename an object or change its uid."""
    old = lease(uid="u-1")
    new = lease(uid="u-1")
    new["metadata"][field] = value
    causes = validate("coordination.k8s.io/leases", new, old)
    assert [(c["field"], c["message"]) for c in causes] == [
        (f"metadata.{field}", f'Invalid value: "{value}": field is immutable')
    ]


def test_no_new_finalizers_while_deleting() -> None:
    """An object being deleted may lose finalizers but not gain them."""
    old = lease(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["a.io/x"])
    shrink = lease(deletionTimestamp="2026-01-01T00:00:00Z")
    grow = lease(deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["a.io/x", "b.io/y"])
    assert validate("coordination.k8s.io/leases", shrink, old) == []
    assert [c["field"] for c in validate("coordination.k8s.io/leases", grow, old)] == ["metadata.finalizers"]


def node(*taints: Obj) -> Obj:
    """A node with these taints."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}, "spec": {"taints": list(taints)}}


@pytest.mark.parametrize(
    ("obj", "field", "reason"),
    [
        pytest.param(node({"key": "k", "effect": "Sometimes"}), "spec.taints[0].effect", "FieldValueNotSupported",
                     id="taint-effect"),
        pytest.param(node({"key": "k"}), "spec.taints[0].effect", "FieldValueRequired", id="taint-no-effect"),
        pytest.param(node({"effect": "NoSchedule"}), "spec.taints[0].key", "FieldValueRequired", id="taint-no-key"),
        pytest.param(node({"key": "k", "value": "bad value", "effect": "NoSchedule"}), "spec.taints[0].value",
                     "FieldValueInvalid", id="taint-value"),
        pytest.param(node({"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"}),
                     "spec.taints[1]", "FieldValueDuplicate", id="taint-duplicate"),
    ],
)
def test_invalid_nodes(obj: Obj, field: str, reason: str) -> None:
    """Taint effects are an enum, keys are qualified names, (key, effect) pairs are unique."""
    causes = validate("nodes", obj, None)
    assert [(c["field"], c["reason"]) for c in causes] == [(field, reason)]


def test_valid_node_taints_and_cordon() -> None:
    """What `kubectl taint` and `kubectl cordon` write is valid."""
    obj = node({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, {"key": "k", "effect": "NoExecute"})
    obj["spec"]["unschedulable"] = True
    assert validate("nodes", obj, None) == []


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"leaseDurationSeconds": 0}, "spec.leaseDurationSeconds", id="zero-duration"),
        pytest.param({"leaseTransitions": -1}, "spec.leaseTransitions", id="negative-transitions"),
        pytest.param({"renewTime": "yesterday"}, "spec.renewTime", id="bad-time"),
    ],
)
def test_invalid_leases(spec: Obj, field: str) -> None:
    """Lease durations are positive, transitions non-negative, times RFC 3339."""
    obj = lease()
    obj["spec"] = spec
    assert [c["field"] for c in validate("coordination.k8s.io/leases", obj, None)] == [field]


def test_valid_lease_with_micro_times() -> None:
    """A lease as leader election writes it is valid."""
    obj = lease()
    obj["spec"].update(acquireTime="2026-01-01T00:00:00.000000Z", renewTime="2026-01-01T00:00:10.123456Z")
    assert validate("coordination.k8s.io/leases", obj, None) == []


def test_namespace_names_are_dns_labels() -> None:
    """Namespaces use the stricter DNS-1123 label rule: no dots."""
    ok = {"metadata": {"name": "team-a"}}
    apply_defaults("namespaces", ok)
    assert validate("namespaces", ok, None) == []
    assert [c["field"] for c in validate("namespaces", {"metadata": {"name": "team.a"}}, None)] == ["metadata.name"]


CORE_EVENT: Obj = {
    "metadata": {"name": "agent.1", "namespace": "default"},
    "involvedObject": {"kind": "DaemonSet", "namespace": "default", "name": "agent"},
    "reason": "SuccessfulCreate",
    "message": "Created pod",
    "type": "Normal",
}


@pytest.mark.parametrize(
    ("changes", "fields"),
    [
        pytest.param({}, [], id="valid-legacy"),
        pytest.param({"involvedObject": {"kind": "Pod", "namespace": "other", "name": "p"}},
                     ["involvedObject.namespace"], id="namespace-mismatch"),
        pytest.param({"eventTime": "2026-01-01T00:00:00.000000Z"},
                     ["reportingComponent", "reportingInstance", "action"], id="new-style-needs-reporter"),
        pytest.param({"eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "dsctl",
                      "reportingInstance": "dsctl-0", "action": "Create"}, [], id="valid-new-style"),
    ],
)
def test_core_events(changes: Obj, fields: list[str]) -> None:
    """core/v1 events: namespaces agree; eventTime-style events name their reporter."""
    event = {**CORE_EVENT, **changes}
    assert [c["field"] for c in validate("events", event, None)] == fields


def test_events_k8s_io_requires_reporting_fields() -> None:
    """events.k8s.io/v1 events need eventTime, reporter, action, reason and a known type."""
    event = {"metadata": {"name": "e", "namespace": "default"}, "regarding": {"namespace": "default"}}
    fields = {c["field"] for c in validate("events.k8s.io/events", event, None)}
    assert fields == {"eventTime", "reportingController", "reportingInstance", "action", "reason", "type"}


def crd(**spec: Any) -> Obj:
    """A valid CRD for widgets.example.com with spec fields replaced."""
    obj: Obj = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {}}}],
        },
    }
    obj["spec"].update(spec)
    apply_defaults("apiextensions.k8s.io/customresourcedefinitions", obj)
    return obj


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param(crd(group="example.org"), "metadata.name", id="name-mismatch"),
        pytest.param(crd(scope="Global"), "spec.scope", id="scope"),
        pytest.param(crd(versions=[]), "spec.versions", id="no-versions"),
        pytest.param(crd(versions=[{"name": "v1", "served": True, "storage": False}]), "spec.versions",
                     id="no-storage-version"),
    ],
)
def test_invalid_crds(obj: Obj, field: str) -> None:
    """CRDs need a <plural>.<group> name, a known scope and exactly one storage version."""
    assert validate("apiextensions.k8s.io/customresourcedefinitions", crd(), None) == []
    assert field in [c["field"] for c in validate("apiextensions.k8s.io/customresourcedefinitions", obj, None)]
