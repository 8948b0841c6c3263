"""Pod validation: spec rules on create, the narrow set of changes allowed on update."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl_sim.validation import apply_defaults, validate

Obj = dict[str, Any]


def pod(**spec: Any) -> Obj:
    """A valid defaulted pod; keyword arguments replace spec fields."""
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "env": [{"name": "MODE", "value": "x"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }
    obj["spec"].update(spec)
    apply_defaults("pods", obj)
    return obj


def container(**fields: Any) -> Obj:
    """The baseline container with some fields replaced."""
    base: Obj = copy.deepcopy(pod()["spec"]["containers"][0])
    base.update(fields)
    return base


DS_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]
        }
    }
}


def test_valid_pod_and_daemonset_style_affinity() -> None:
    """The baseline pod, and one with the DaemonSet controller's matchFields affinity, are valid."""
    assert validate("pods", pod(), None) == []
    assert validate("pods", pod(affinity=DS_AFFINITY), None) == []


@pytest.mark.parametrize(
    ("obj", "field", "reason"),
    [
        pytest.param(pod(containers=[]), "spec.containers", "FieldValueRequired", id="no-containers"),
        pytest.param(pod(containers=[container(image="")]), "spec.containers[0].image", "FieldValueRequired",
                     id="empty-image"),
        pytest.param(pod(containers=[container(name="")]), "spec.containers[0].name", "FieldValueRequired",
                     id="empty-name"),
        pytest.param(pod(containers=[container(), container()]), "spec.containers[1].name", "FieldValueDuplicate",
                     id="duplicate-name"),
        pytest.param(pod(restartPolicy="Sometimes"), "spec.restartPolicy", "FieldValueNotSupported",
                     id="restart-policy"),
        pytest.param(pod(dnsPolicy="Google"), "spec.dnsPolicy", "FieldValueNotSupported", id="dns-policy"),
        pytest.param(pod(containers=[container(imagePullPolicy="Sometimes")]), "spec.containers[0].imagePullPolicy",
                     "FieldValueNotSupported", id="pull-policy"),
        pytest.param(pod(containers=[container(ports=[{"containerPort": 70000}])]),
                     "spec.containers[0].ports[0].containerPort", "FieldValueInvalid", id="port-range"),
        pytest.param(pod(containers=[container(ports=[{"containerPort": 80, "protocol": "HTTP"}])]),
                     "spec.containers[0].ports[0].protocol", "FieldValueNotSupported", id="port-protocol"),
        pytest.param(pod(containers=[container(env=[{"name": "A=B"}])]), "spec.containers[0].env[0].name",
                     "FieldValueInvalid", id="env-name"),
        pytest.param(pod(containers=[container(volumeMounts=[{"name": "nope", "mountPath": "/x"}])]),
                     "spec.containers[0].volumeMounts[0].name", "FieldValueNotFound", id="mount-unknown-volume"),
        pytest.param(pod(volumes=[{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]),
                     "spec.volumes[1].name", "FieldValueDuplicate", id="duplicate-volume"),
        pytest.param(pod(tolerations=[{"key": "k", "operator": "Maybe"}]), "spec.tolerations[0].operator",
                     "FieldValueNotSupported", id="toleration-operator"),
        pytest.param(pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoWay"}]),
                     "spec.tolerations[0].effect", "FieldValueNotSupported", id="toleration-effect"),
        pytest.param(pod(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
                     "spec.tolerations[0].operator", "FieldValueInvalid", id="exists-with-value"),
        pytest.param(pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule",
                                       "tolerationSeconds": 5}]),
                     "spec.tolerations[0].effect", "FieldValueInvalid", id="seconds-without-noexecute"),
        pytest.param(pod(nodeSelector={"disk": "not ok!"}), "spec.nodeSelector", "FieldValueInvalid",
                     id="node-selector-value"),
        pytest.param(
            pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]}}}),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchFields[0].key",
            "FieldValueInvalid",
            id="match-fields-key",
        ),
        pytest.param(pod(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds", "FieldValueInvalid",
                     id="deadline-zero"),
    ],
)
def test_invalid_pods(obj: Obj, field: str, reason: str) -> None:
    """Each broken pod gets a cause for exactly the offending field."""
    causes = validate("pods", obj, None)
    assert [(c["field"], c["reason"]) for c in causes] == [(field, reason)], causes


@pytest.mark.parametrize(
    ("change", "allowed"),
    [
        pytest.param(lambda p: p["spec"]["containers"][0].update(image="nginx:1.28"), True, id="image"),
        pytest.param(lambda p: p["spec"].update(activeDeadlineSeconds=60), True, id="deadline"),
        pytest.param(lambda p: p["spec"]["tolerations"].append({"key": "x", "operator": "Exists"}), True,
                     id="add-toleration"),
        pytest.param(lambda p: p["metadata"]["labels"].update(extra="1"), True, id="labels"),
        pytest.param(lambda p: p["spec"]["tolerations"].pop(), False, id="remove-toleration"),
        pytest.param(lambda p: p["spec"].update(nodeSelector={"a": "b"}), False, id="node-selector"),
        pytest.param(lambda p: p["spec"]["containers"][0].update(name="other"), False, id="container-name"),
        pytest.param(lambda p: p["spec"]["containers"].append(container(name="more")), False, id="add-container"),
    ],
)
def test_pod_updates(change: Any, allowed: bool) -> None:
    """Pod spec updates are limited to images, deadlines and added tolerations."""
    old = pod()
    new = copy.deepcopy(old)
    change(new)
    causes = validate("pods", new, old)
    if allowed:
        assert causes == []
    else:
        assert [(c["field"], c["reason"]) for c in causes] == [("spec", "FieldValueForbidden")]


def test_binding_subresource_skips_spec_immutability() -> None:
    """Setting nodeName through the binding path is not a forbidden pod update."""
    old = pod()
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "node-1"
    assert validate("pods", new, old)[0]["field"] == "spec"
    assert validate("pods", new, old, subresource="binding") == []
