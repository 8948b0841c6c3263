"""CustomResourceDefinitions become served resources with list, watch and status, and go away on delete."""

from __future__ import annotations

from typing import Any

from simapi import Api
from tests.support.poll import eventually
from watchclient import read_watch

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.dsctl.io/v1/namespaces/default/widgets"


def crd(*, status: bool = True, plural: str = "widgets") -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1", "served": True, "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.dsctl.io"},
        "spec": {"group": "example.dsctl.io", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                           "shortNames": ["wd"]},
                 "versions": [version]},
    }


def widget(name: str, size: int = 1) -> dict[str, Any]:
    return {"apiVersion": "example.dsctl.io/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"size": size}}


async def test_crd_is_established_and_served(api: Api) -> None:
    """Creating a CRD sets Established/NamesAccepted and serves its resource with CRUD and list."""
    await api.ok("POST", CRDS, crd())
    got = await api.ok("GET", f"{CRDS}/widgets.example.dsctl.io")
    conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    created = await api.ok("POST", WIDGETS, widget("w1"))
    assert created["metadata"]["generation"] == 1 and created["kind"] == "Widget"
    listed = await api.ok("GET", WIDGETS)
    assert listed["kind"] == "WidgetList" and [w["metadata"]["name"] for w in listed["items"]] == ["w1"]
    everywhere = await api.ok("GET", "/apis/example.dsctl.io/v1/widgets")
    assert len(everywhere["items"]) == 1


async def test_custom_resource_status_subresource(api: Api) -> None:
    """With a status subresource, spec and status are split and generation follows spec."""
    await api.ok("POST", CRDS, crd())
    w = await api.ok("POST", WIDGETS, widget("w1"))
    with_status = await api.ok("PUT", f"{WIDGETS}/w1/status", {**w, "status": {"ready": True}, "spec": {"size": 9}})
    assert with_status["status"] == {"ready": True} and with_status["spec"] == {"size": 1}
    bigger = await api.ok("PUT", f"{WIDGETS}/w1", {**with_status, "spec": {"size": 2}, "status": {}})
    assert bigger["metadata"]["generation"] == 2 and bigger["status"] == {"ready": True}


async def test_custom_resource_watch(api: Api) -> None:
    """Custom resources are watchable from a resourceVersion like built-ins."""
    await api.ok("POST", CRDS, crd())
    rv = (await api.ok("GET", WIDGETS))["metadata"]["resourceVersion"]
    await api.ok("POST", WIDGETS, widget("w1"))
    await api.ok("DELETE", f"{WIDGETS}/w1")
    _, events = await read_watch(api.http, f"{api.url}{WIDGETS}?watch=1&resourceVersion={rv}",
                                 stop=lambda evs: len(evs) >= 2)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


async def test_deleting_crd_unserves_and_deletes_objects(api: Api) -> None:
    """Deleting the CRD removes its objects (open watches see DELETED) and the resource 404s."""
    await api.ok("POST", CRDS, crd())
    await api.ok("POST", WIDGETS, widget("w1"))
    rv = (await api.ok("GET", WIDGETS))["metadata"]["resourceVersion"]
    await api.ok("DELETE", f"{CRDS}/widgets.example.dsctl.io")
    status, _ = await api.call("GET", WIDGETS)
    assert status == 404
    await api.ok("POST", CRDS, crd())
    assert (await api.ok("GET", WIDGETS))["items"] == []
    assert int((await api.ok("GET", WIDGETS))["metadata"]["resourceVersion"]) > int(rv)


async def test_crd_shadowing_a_builtin_is_not_served(api: Api) -> None:
    """A CRD for a resource already served by a built-in is stored with NamesAccepted=False."""
    shadow = crd(plural="leases")
    shadow["metadata"]["name"] = "leases.coordination.k8s.io"
    shadow["spec"]["group"] = "coordination.k8s.io"
    shadow["spec"]["names"].update(kind="Shadow", listKind="ShadowList", singular="shadow", shortNames=[])
    await api.ok("POST", CRDS, shadow)

    async def rejected() -> bool:
        got = await api.ok("GET", f"{CRDS}/leases.coordination.k8s.io")
        return any(c["type"] == "NamesAccepted" and c["status"] == "False"
                   for c in (got.get("status") or {}).get("conditions", []))

    await eventually(rejected, timeout=5, message="NamesAccepted=False")
    listed = await api.ok("GET", "/apis/coordination.k8s.io/v1/leases")
    assert listed["kind"] == "LeaseList"


async def test_crd_without_status_subresource(api: Api) -> None:
    """Without a status subresource, status is written through the main resource and /status is 404."""
    await api.ok("POST", CRDS, crd(status=False))
    w = await api.ok("POST", WIDGETS, widget("w1"))
    out = await api.ok("PUT", f"{WIDGETS}/w1", {**w, "status": {"ready": True}})
    assert out["status"] == {"ready": True}
    status, _ = await api.call("PUT", f"{WIDGETS}/w1/status", out)
    assert status == 404


async def test_custom_resource_refuses_a_strategic_merge_patch(api: Api) -> None:
    """A custom resource takes merge and JSON patches; a strategic merge patch is 415, as on kube-apiserver."""
    await api.ok("POST", CRDS, crd())
    await api.ok("POST", WIDGETS, widget("w1"))
    patch = {"spec": {"size": 2}}
    status, body = await api.call("PATCH", f"{WIDGETS}/w1", patch,
                                  headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    assert "application/merge-patch+json" in body["message"]
    merged = await api.ok("PATCH", f"{WIDGETS}/w1", patch, headers={"Content-Type": "application/merge-patch+json"})
    assert merged["spec"] == {"size": 2}
