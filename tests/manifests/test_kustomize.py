"""`kubectl kustomize manifests/` builds, installs the expected objects, and they all validate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.manifests.conftest import Build, Obj, find, overlay, validate_object

NAMESPACE = "dsctl-system"
INSTALLED = [
    ("Namespace", "dsctl-system"),
    ("CustomResourceDefinition", "daemonsets.dsctl.io"),
    ("ServiceAccount", "dsctl"),
    ("ClusterRole", "dsctl"),
    ("ClusterRoleBinding", "dsctl"),
    ("Role", "dsctl-leader-election"),
    ("RoleBinding", "dsctl-leader-election"),
    ("Deployment", "dsctl"),
    ("Service", "dsctl-metrics"),
    ("PodDisruptionBudget", "dsctl"),
]
EXPECTED = [pytest.param(kind, name, id=f"{kind}/{name}") for kind, name in INSTALLED]
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}


def test_base_builds_exactly_the_expected_objects(base_objects: list[Obj]) -> None:
    """The base renders these ten objects and nothing else."""
    built = sorted((o["kind"], o["metadata"]["name"]) for o in base_objects)
    assert built == sorted(INSTALLED)


@pytest.mark.parametrize(("kind", "name"), EXPECTED)
def test_object_validates_against_kubernetes_schema(base_objects: list[Obj], kind: str, name: str) -> None:
    """Each installed object passes strict schema validation for the pinned Kubernetes release."""
    validate_object(find(base_objects, kind, name))


@pytest.mark.parametrize(("kind", "name"), EXPECTED)
def test_object_is_in_dsctl_namespace(base_objects: list[Obj], kind: str, name: str) -> None:
    """Namespaced objects land in dsctl-system; cluster-scoped ones carry no namespace."""
    obj = find(base_objects, kind, name)
    expected = None if kind in CLUSTER_SCOPED else NAMESPACE
    assert obj["metadata"].get("namespace") == expected


def test_bindings_name_the_serviceaccount_the_deployment_runs_as(base_objects: list[Obj]) -> None:
    """Both bindings grant to dsctl-system/dsctl, which is the Deployment's service account."""
    deployment = find(base_objects, "Deployment", "dsctl")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    for kind, name, role_kind in [
        ("ClusterRoleBinding", "dsctl", "ClusterRole"),
        ("RoleBinding", "dsctl-leader-election", "Role"),
    ]:
        binding = find(base_objects, kind, name)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
        assert binding["roleRef"]["kind"] == role_kind
        find(base_objects, role_kind, binding["roleRef"]["name"])


def daemonset_rule_groups(role: Obj) -> set[str]:
    """The API groups the ClusterRole's DaemonSet rules name."""
    return {
        group
        for rule in role["rules"]
        if any(r.split("/")[0] == "daemonsets" for r in rule["resources"])
        for group in rule["apiGroups"]
    }


def test_base_serves_the_crd_kind(base_objects: list[Obj]) -> None:
    """The base runs in CRD mode: the flag and the RBAC both name dsctl.io."""
    args = find(base_objects, "Deployment", "dsctl")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--resource=dsctl.io/v1" in args
    assert daemonset_rule_groups(find(base_objects, "ClusterRole", "dsctl")) == {"dsctl.io"}


def test_apps_v1_component_switches_flag_and_rbac(build: Build, base_objects: list[Obj], tmp_path: Path) -> None:
    """The apps-v1-mode component moves the flag and the DaemonSet rules to apps, changing nothing else."""
    objects = build(overlay(tmp_path, components=["apps-v1-mode"]))
    deployment = find(objects, "Deployment", "dsctl")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--resource=apps/v1" in args and "--resource=dsctl.io/v1" not in args
    role = find(objects, "ClusterRole", "dsctl")
    assert daemonset_rule_groups(role) == {"apps"}
    base_role = find(base_objects, "ClusterRole", "dsctl")
    assert [(r["resources"], r["verbs"]) for r in role["rules"]] == [
        (r["resources"], r["verbs"]) for r in base_role["rules"]
    ]
    unchanged = [o for o in objects if (o["kind"], o["metadata"]["name"]) not in {
        ("Deployment", "dsctl"), ("ClusterRole", "dsctl")}]
    assert len(unchanged) == len(base_objects) - 2
    for obj in unchanged:
        assert obj == find(base_objects, obj["kind"], obj["metadata"]["name"])
    for obj in objects:
        validate_object(obj)


def test_servicemonitor_component_scrapes_the_metrics_service(build: Build, tmp_path: Path) -> None:
    """The optional ServiceMonitor selects the metrics Service and scrapes its named port."""
    objects = build(overlay(tmp_path, components=["servicemonitor"]))
    monitor: dict[str, Any] = find(objects, "ServiceMonitor", "dsctl")
    service = find(objects, "Service", "dsctl-metrics")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    port_names = {p["name"] for p in service["spec"]["ports"]}
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    assert "metrics" in port_names
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
