"""Defaulting: DaemonSet and pod-template defaults, pod admission defaults, idempotence."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl_sim.validation import apply_defaults, pull_policy_for, validate

Obj = dict[str, Any]


def _ds() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [
                        {
                            "name": "agent",
                            "image": "busybox",
                            "ports": [{"containerPort": 9100}],
                            "readinessProbe": {"httpGet": {"port": 9100}},
                            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                            "resources": {"limits": {"cpu": "100m"}},
                        }
                    ],
                    "volumes": [{"name": "root", "hostPath": {"path": "/"}}, {"name": "scratch"}],
                },
            },
        },
    }


def test_daemonset_defaults() -> None:
    """RollingUpdate 1/0, history 10, and the full pod-template defaults."""
    ds = _ds()
    apply_defaults("apps/daemonsets", ds)
    spec = ds["spec"]
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert spec["revisionHistoryLimit"] == 10
    pod_spec = spec["template"]["spec"]
    assert {
        k: pod_spec[k] for k in ("restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds")
    } == {
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
    }
    assert pod_spec["securityContext"] == {}
    c = pod_spec["containers"][0]
    assert c["imagePullPolicy"] == "Always"
    assert c["terminationMessagePath"] == "/dev/termination-log"
    assert c["terminationMessagePolicy"] == "File"
    assert c["ports"] == [{"containerPort": 9100, "protocol": "TCP"}]
    assert c["readinessProbe"] == {
        "httpGet": {"port": 9100, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    assert pod_spec["volumes"] == [
        {"name": "root", "hostPath": {"path": "/", "type": ""}},
        {"name": "scratch", "emptyDir": {}},
    ]


def test_template_gets_no_pod_only_defaults() -> None:
    """Templates never get priority, enableServiceLinks, default tolerations or requests from limits."""
    ds = _ds()
    apply_defaults("apps/daemonsets", ds)
    pod_spec = ds["spec"]["template"]["spec"]
    for field in ("priority", "enableServiceLinks", "preemptionPolicy", "tolerations", "serviceAccountName"):
        assert field not in pod_spec
    assert pod_spec["containers"][0]["resources"] == {"limits": {"cpu": "100m"}}


def test_on_delete_strategy_gets_no_rolling_update() -> None:
    """An explicit OnDelete strategy stays without a rollingUpdate block."""
    ds = _ds()
    ds["spec"]["updateStrategy"] = {"type": "OnDelete"}
    apply_defaults("apps/daemonsets", ds)
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_partial_rolling_update_keeps_given_values() -> None:
    """A user-set maxSurge survives; only the missing maxUnavailable is filled."""
    ds = _ds()
    ds["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}
    apply_defaults("apps/daemonsets", ds)
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": 1}


def test_pod_admission_defaults() -> None:
    """Pods get priority, preemption policy, service links, service account and 300s NoExecute tolerations."""
    pod: Obj = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"limits": {"memory": "1Gi"}}}]},
    }
    apply_defaults("pods", pod)
    spec = pod["spec"]
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["enableServiceLinks"] is True
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["containers"][0]["resources"]["requests"] == {"memory": "1Gi"}
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    assert validate("pods", pod, None) == []


def test_daemon_pods_keep_their_own_tolerations() -> None:
    """A pod that already tolerates not-ready/unreachable (as DaemonSet pods do) gets no 300s ones."""
    tolerations = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    ]
    pod: Obj = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "tolerations": copy.deepcopy(tolerations)},
    }
    apply_defaults("pods", pod)
    assert pod["spec"]["tolerations"] == tolerations


def test_pod_from_defaulted_template_round_trips() -> None:
    """A pod built from a defaulted template keeps every template field unchanged through pod defaulting."""
    ds = _ds()
    apply_defaults("apps/daemonsets", ds)
    template_spec = copy.deepcopy(ds["spec"]["template"]["spec"])
    pod = {"metadata": {"name": "agent-x", "namespace": "default"}, "spec": copy.deepcopy(template_spec)}
    apply_defaults("pods", pod)
    for key, value in template_spec.items():
        if key != "containers":
            assert pod["spec"][key] == value, key
    for key, value in template_spec["containers"][0].items():
        if key != "resources":
            assert pod["spec"]["containers"][0][key] == value, key


@pytest.mark.parametrize(
    "key", ["apps/daemonsets", "pods", "nodes", "namespaces", "apiextensions.k8s.io/customresourcedefinitions"]
)
def test_defaulting_is_idempotent(key: str) -> None:
    """Defaulting twice equals defaulting once, so re-applied stored objects (rollout undo) keep their hash."""
    objects: dict[str, Obj] = {
        "apps/daemonsets": _ds(),
        "pods": {"metadata": {"name": "p"}, "spec": _ds()["spec"]["template"]["spec"]},
        "nodes": {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}},
        "namespaces": {"metadata": {"name": "team-a"}},
        "apiextensions.k8s.io/customresourcedefinitions": {
            "metadata": {"name": "w.example.com"},
            "spec": {"names": {"kind": "Widget", "plural": "w"}},
        },
    }
    once = objects[key]
    apply_defaults(key, once)
    twice = copy.deepcopy(once)
    apply_defaults(key, twice)
    assert twice == once


def test_other_kind_defaults() -> None:
    """Nodes get allocatable from capacity, namespaces their name label, CRDs singular and listKind."""
    node: Obj = {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}}
    apply_defaults("nodes", node)
    assert node["status"]["allocatable"] == {"cpu": "4"}
    namespace: Obj = {"metadata": {"name": "team-a"}}
    apply_defaults("namespaces", namespace)
    assert namespace["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    crd: Obj = {"spec": {"names": {"kind": "Widget", "plural": "widgets"}}}
    apply_defaults("apiextensions.k8s.io/customresourcedefinitions", crd)
    assert crd["spec"]["names"] == {
        "kind": "Widget",
        "plural": "widgets",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    lease: Obj = {"metadata": {"name": "l"}}
    apply_defaults("coordination.k8s.io/leases", lease)
    assert lease == {"metadata": {"name": "l"}}


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        pytest.param("nginx", "Always", id="untagged"),
        pytest.param("nginx:latest", "Always", id="latest"),
        pytest.param("nginx:1.27", "IfNotPresent", id="tagged"),
        pytest.param("registry:5000/team/nginx", "Always", id="registry-port-untagged"),
        pytest.param("registry:5000/team/nginx:2", "IfNotPresent", id="registry-port-tagged"),
        pytest.param("nginx@sha256:" + "a" * 64, "IfNotPresent", id="digest"),
        pytest.param("nginx:latest@sha256:" + "a" * 64, "Always", id="latest-with-digest"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    """imagePullPolicy defaults to Always only for untagged or :latest images."""
    assert pull_policy_for(image) == policy
