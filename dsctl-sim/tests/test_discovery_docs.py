"""Discovery and OpenAPI documents built from the served resource types."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from dsctl_sim.discovery import (
    aggregated_discovery,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
    openapi_v3_doc,
    openapi_v3_root,
)
from dsctl_sim.discovery.apis import version_priority
from dsctl_sim.registry import BUILTIN_TYPES, ResourceType

WIDGETS = ResourceType(
    "example.com", "v1", "Widget", "widgets", True, short_names=("wd",), has_status=True, builtin=False,
    extra_versions=("v1beta1", "v2"),
)
TYPES: tuple[ResourceType, ...] = (*BUILTIN_TYPES, WIDGETS)


def _by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in doc["resources"]}


def test_api_versions() -> None:
    """`/api` lists v1 and, when given, the server address."""
    assert api_versions() == {"kind": "APIVersions", "versions": ["v1"]}
    assert api_versions(server_address="127.0.0.1:6443")["serverAddressByClientCIDRs"][0]["serverAddress"] == (
        "127.0.0.1:6443"
    )


def test_group_list_order_and_preferred_versions() -> None:
    """Groups come in apiserver priority order; a CRD's preferred version is its most stable, newest one."""
    groups = api_group_list(TYPES)["groups"]
    assert [g["name"] for g in groups] == [
        "apps", "events.k8s.io", "policy", "rbac.authorization.k8s.io", "scheduling.k8s.io", "coordination.k8s.io",
        "apiextensions.k8s.io", "example.com",
    ]
    widgets = groups[-1]
    assert [v["version"] for v in widgets["versions"]] == ["v2", "v1", "v1beta1"]
    assert widgets["preferredVersion"] == {"groupVersion": "example.com/v2", "version": "v2"}
    assert api_group(TYPES, "apps") == {"kind": "APIGroup", "apiVersion": "v1", **groups[0]}
    assert api_group(TYPES, "nope.io") is None


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        pytest.param(["v1beta1", "v1", "v1alpha1", "v2"], ["v2", "v1", "v1beta1", "v1alpha1"], id="stability"),
        pytest.param(["v1beta1", "v1beta2", "v2alpha1"], ["v1beta2", "v1beta1", "v2alpha1"], id="betas"),
    ],
)
def test_version_priority(versions: list[str], expected: list[str]) -> None:
    """Versions sort GA first, then beta, then alpha, newest first within each."""
    assert sorted(versions, key=version_priority) == expected


def test_core_resource_list() -> None:
    """`/api/v1` has short names, categories and the pods/status and pods/binding subresources."""
    doc = api_resource_list(TYPES, "", "v1")
    assert doc["groupVersion"] == "v1"
    names = _by_name(doc)
    assert names["pods"]["shortNames"] == ["po"] and names["pods"]["categories"] == ["all"]
    assert names["nodes"]["shortNames"] == ["no"] and names["nodes"]["namespaced"] is False
    assert names["namespaces"]["shortNames"] == ["ns"]
    assert names["events"]["shortNames"] == ["ev"]
    assert names["pods/status"] == {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod",
                                    "verbs": ["get", "patch", "update"]}
    assert names["pods/binding"]["kind"] == "Binding" and names["pods/binding"]["verbs"] == ["create"]
    assert "watch" in names["pods"]["verbs"] and "deletecollection" in names["pods"]["verbs"]


def test_apps_resource_list() -> None:
    """`/apis/apps/v1` serves daemonsets (ds, category all, status), controllerrevisions and deployments."""
    names = _by_name(api_resource_list(TYPES, "apps", "v1"))
    assert set(names) == {"daemonsets", "daemonsets/status", "controllerrevisions", "deployments",
                          "deployments/status"}
    assert names["daemonsets"]["shortNames"] == ["ds"]
    assert names["daemonsets"]["categories"] == ["all"]
    assert "shortNames" not in names["controllerrevisions"]


def test_custom_resource_every_version() -> None:
    """A CRD type appears under each served version with its status subresource."""
    for version in ("v1", "v1beta1", "v2"):
        names = _by_name(api_resource_list(TYPES, "example.com", version))
        assert set(names) == {"widgets", "widgets/status"}
    assert api_resource_list(TYPES, "example.com", "v3")["resources"] == []


def test_aggregated_discovery() -> None:
    """apidiscovery.k8s.io/v2: core alone for /api, every other group for /apis, with scopes and subresources."""
    core = aggregated_discovery(TYPES, core=True)
    assert core["kind"] == "APIGroupDiscoveryList" and core["apiVersion"] == "apidiscovery.k8s.io/v2"
    assert [item["metadata"]["name"] for item in core["items"]] == [""]
    resources = {r["resource"]: r for r in core["items"][0]["versions"][0]["resources"]}
    assert resources["nodes"]["scope"] == "Cluster"
    subresources = {s["subresource"]: s for s in resources["pods"]["subresources"]}
    assert set(subresources) == {"status", "binding", "eviction"}
    # kubectl drain looks for exactly this to decide it may evict with policy/v1.
    assert subresources["eviction"]["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert subresources["eviction"]["verbs"] == ["create"]
    others = aggregated_discovery(TYPES, core=False)
    apps = next(item for item in others["items"] if item["metadata"]["name"] == "apps")
    ds = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "daemonsets")
    assert ds["responseKind"] == {"group": "apps", "version": "v1", "kind": "DaemonSet"}
    assert ds["scope"] == "Namespaced" and ds["shortNames"] == ["ds"] and ds["categories"] == ["all"]
    assert all(v["freshness"] == "Current" for item in others["items"] for v in item["versions"])


def test_openapi_root_lists_every_group_version_with_stable_hashes() -> None:
    """`/openapi/v3` points at one document per group-version; the hash changes only with content."""
    root = openapi_v3_root(TYPES)["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/example.com/v1", "apis/example.com/v2"} <= set(root)
    url = root["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    assert openapi_v3_root(TYPES)["paths"]["apis/apps/v1"] == root["apis/apps/v1"]
    changed = (*TYPES[:-1], replace(WIDGETS, kind="Gadget"))
    changed_root = openapi_v3_root(changed)["paths"]
    assert changed_root["apis/example.com/v1"] != root["apis/example.com/v1"]
    assert changed_root["apis/apps/v1"] == root["apis/apps/v1"]


def _patch_ops(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for path, item in doc["paths"].items():
        if "patch" in item and not path.endswith("/status"):
            found[item["patch"]["x-kubernetes-group-version-kind"]["kind"]] = item["patch"]
    return found


@pytest.mark.parametrize(
    ("group", "version", "kind"),
    [
        pytest.param("apps", "v1", "DaemonSet", id="daemonset"),
        pytest.param("", "v1", "Node", id="node"),
        pytest.param("", "v1", "Pod", id="pod"),
        pytest.param("", "v1", "Namespace", id="namespace-used-for-crds"),
        pytest.param("example.com", "v2", "Widget", id="custom-resource"),
    ],
)
def test_openapi_doc_has_what_kubectl_apply_checks(group: str, version: str, kind: str) -> None:
    """Each kind has a patch op with its GVK and a fieldValidation parameter, and no strategic-merge body."""
    doc = openapi_v3_doc(TYPES, group, version)
    op = _patch_ops(doc)[kind]
    assert op["x-kubernetes-group-version-kind"] == {"group": group, "version": version, "kind": kind}
    assert "fieldValidation" in [p["name"] for p in op["parameters"]]
    assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]
    schemas = doc["components"]["schemas"]
    tagged = [s for s in schemas.values() if {"group": group, "version": version, "kind": kind}
              in s.get("x-kubernetes-group-version-kind", [])]
    assert len(tagged) == 1 and tagged[0]["x-kubernetes-preserve-unknown-fields"] is True


def test_openapi_paths_follow_scope() -> None:
    """Namespaced kinds live under /namespaces/{namespace}; cluster-scoped ones do not."""
    core = openapi_v3_doc(TYPES, "", "v1")["paths"]
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in core
    assert "/api/v1/pods" in core
    assert "/api/v1/nodes/{name}/status" in core
    assert "/api/v1/namespaces/{namespace}/nodes/{name}" not in core
