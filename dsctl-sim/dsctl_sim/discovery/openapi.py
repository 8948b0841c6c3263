"""A minimal OpenAPI v3 that lets plain ``kubectl apply`` (``--validate=strict``) pass.

What kubectl needs, and why the documents look the way they do:

- ``/openapi/v3`` lists one document per group-version (``apis/apps/v1``) with a
  ``serverRelativeURL`` carrying a content hash, which kubectl uses as a cache key.
- In that document kubectl looks for a path whose ``patch`` operation carries
  ``x-kubernetes-group-version-kind`` for the object's kind and a ``fieldValidation`` query
  parameter. Finding it, kubectl leaves field validation to the server
  (``fieldValidation=Strict``) instead of downloading schemas for client-side validation.
  For a custom resource whose group-version is missing, kubectl checks ``Namespace`` in
  ``api/v1`` instead, which is always present here.
- The ``patch`` request bodies deliberately do not list
  ``application/strategic-merge-patch+json``: if they did, kubectl would compute its apply
  patch from these schemas, which carry no patch-merge keys. Without it kubectl falls back to
  its compiled-in Go types for built-in kinds and sends the same strategic merge patch as
  against a real cluster, and a JSON merge patch for custom resources, exactly like a real
  apiserver's CRD documents make it do.
- Schemas are permissive (``x-kubernetes-preserve-unknown-fields``) but named and tagged
  with ``x-kubernetes-group-version-kind`` like kube-apiserver's, for tools that look kinds up.
  A custom resource whose CRD has a schema is published with that schema (its ``metadata``
  pointing to ObjectMeta), as kube-apiserver does, so ``kubectl explain`` can walk its fields.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

from dsctl_sim.discovery.apis import served_versions

__all__ = ["group_versions", "openapi_v3_doc", "openapi_v3_root", "schema_name"]

_OPENAPI_VERSION = "3.0.0"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_BUILTIN_PACKAGES = {
    "": "io.k8s.api.core",
    "apps": "io.k8s.api.apps",
    "events.k8s.io": "io.k8s.api.events",
    "coordination.k8s.io": "io.k8s.api.coordination",
    "policy": "io.k8s.api.policy",
    "scheduling.k8s.io": "io.k8s.api.scheduling",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac",
}
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json")


def schema_name(group: str, version: str, kind: str) -> str:
    """The component name kube-apiserver uses: ``io.k8s.api.apps.v1.DaemonSet``, ``com.example.v1.Widget``."""
    package = _BUILTIN_PACKAGES.get(group)
    if package is None:
        package = ".".join(reversed(group.split(".")))
    return f"{package}.{version}.{kind}"


def _document_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def group_versions(resources: Iterable[Any]) -> list[tuple[str, str]]:
    """Every served (group, version), core first."""
    pairs = {(rt.group, v) for rt in resources for v in served_versions(rt)}
    return sorted(pairs, key=lambda gv: (gv[0] != "", gv))


def openapi_v3_root(resources: Iterable[Any]) -> dict[str, Any]:
    """``GET /openapi/v3``: one entry per served group-version, URL hashed by content."""
    types = list(resources)
    paths = {}
    for group, version in group_versions(types):
        doc = openapi_v3_doc(types, group, version)
        digest = hashlib.sha512(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest().upper()
        path = _document_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _query(name: str, description: str, *, boolean: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": "boolean" if boolean else "string", "uniqueItems": True},
    }


_DRY_RUN = _query("dryRun", "When present, modifications are not persisted (All).")
_FIELD_MANAGER = _query("fieldManager", "A name for the actor making these changes.")
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "How to treat unknown or duplicate fields in the request body: Ignore, Warn or Strict.",
)
_FORCE = _query("force", "Force an apply request (server-side apply only).", boolean=True)
_WRITE_PARAMS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]


def _operation(
    rt: Any,
    version: str,
    action: str,
    *,
    response: str,
    body: str | None = None,
    content: Iterable[str] = ("application/json",),
    params: list[dict[str, Any]] | None = None,
    op_id: str,
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": op_id,
        "tags": [_document_path(rt.group, version)],
        "parameters": params or [],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": _ref(response)}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": version, "kind": rt.kind},
    }
    if body is not None:
        operation["requestBody"] = {"content": {c: {"schema": _ref(body)} for c in content}, "required": True}
    return operation


def _paths_for(rt: Any, version: str) -> dict[str, Any]:
    base = f"/{_document_path(rt.group, version)}"
    collection = f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    item = f"{collection}/{{name}}"
    name = schema_name(rt.group, version, rt.kind)
    list_name = schema_name(rt.group, version, getattr(rt, "list_kind", "") or rt.kind + "List")
    op = f"{rt.kind}{version}"
    path_params = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
    if rt.namespaced:
        path_params.append({"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
    item_ops = {
        "get": _operation(rt, version, "get", response=name, op_id=f"read{op}"),
        "put": _operation(rt, version, "put", response=name, body=name, params=_WRITE_PARAMS, op_id=f"replace{op}"),
        "patch": _operation(
            rt,
            version,
            "patch",
            response=name,
            body=f"{_META}.Patch",
            content=_PATCH_TYPES,
            params=[*_WRITE_PARAMS, _FORCE],
            op_id=f"patch{op}",
        ),
        "delete": _operation(rt, version, "delete", response=f"{_META}.Status", op_id=f"delete{op}"),
        "parameters": path_params,
    }
    paths: dict[str, Any] = {
        collection: {
            "get": _operation(rt, version, "list", response=list_name, op_id=f"list{op}"),
            "post": _operation(
                rt, version, "post", response=name, body=name, params=_WRITE_PARAMS, op_id=f"create{op}"
            ),
            "parameters": path_params[1:],
        },
        item: item_ops,
    }
    if rt.namespaced:
        paths[f"{base}/{rt.plural}"] = {
            "get": _operation(rt, version, "list", response=list_name, op_id=f"list{op}ForAllNamespaces")
        }
    if getattr(rt, "has_status", False):
        paths[f"{item}/status"] = {
            "get": _operation(rt, version, "get", response=name, op_id=f"read{op}Status"),
            "put": _operation(
                rt, version, "put", response=name, body=name, params=_WRITE_PARAMS, op_id=f"replace{op}Status"
            ),
            "patch": _operation(
                rt,
                version,
                "patch",
                response=name,
                body=f"{_META}.Patch",
                content=_PATCH_TYPES,
                params=[*_WRITE_PARAMS, _FORCE],
                op_id=f"patch{op}Status",
            ),
            "parameters": path_params,
        }
    return paths


def _kind_schema(rt: Any, version: str, kind: str, *, is_list: bool) -> dict[str, Any]:
    gvk = [{"group": rt.group, "version": version, "kind": kind}]
    schema = getattr(rt, "schema", None)
    if schema is not None and not is_list:
        return _custom_kind_schema(schema.openapi, gvk)
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string", "description": "The versioned schema of this object."},
        "kind": {"type": "string", "description": "The REST resource this object represents."},
    }
    if is_list:
        properties["metadata"] = _ref(f"{_META}.ListMeta")
        properties["items"] = {"type": "array", "items": _ref(schema_name(rt.group, version, rt.kind))}
    else:
        properties["metadata"] = _ref(f"{_META}.ObjectMeta")
    return {
        "type": "object",
        "description": f"{kind} ({rt.group or 'core'}/{version}); fields are validated by the server.",
        "properties": properties,
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": gvk,
    }


def _custom_kind_schema(openapi: dict[str, Any], gvk: list[dict[str, str]]) -> dict[str, Any]:
    # A CRD's schema as kube-apiserver publishes it: metadata points to ObjectMeta, and the
    # kind is tagged, which is how `kubectl explain` finds it.
    properties = dict(openapi.get("properties") or {})
    properties["metadata"] = {**_ref(f"{_META}.ObjectMeta"), "description": "Standard object's metadata."}
    return {**openapi, "properties": properties, "x-kubernetes-group-version-kind": gvk}


def _meta_schemas() -> dict[str, Any]:
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        f"{_META}.ObjectMeta": {**loose, "description": "Standard object metadata."},
        f"{_META}.ListMeta": {**loose, "description": "Standard list metadata."},
        f"{_META}.Status": {**loose, "description": "The result of an operation that returns no object."},
        f"{_META}.Patch": {"type": "object", "description": "A patch document; its format follows the content type."},
    }


def openapi_v3_doc(resources: Iterable[Any], group: str, version: str) -> dict[str, Any]:
    """``GET /openapi/v3/apis/<group>/<version>`` (or ``api/v1``): paths and schemas of that version."""
    paths: dict[str, Any] = {}
    schemas = _meta_schemas()
    for rt in resources:
        if rt.group != group or version not in served_versions(rt):
            continue
        paths.update(_paths_for(rt, version))
        list_kind = getattr(rt, "list_kind", "") or rt.kind + "List"
        schemas[schema_name(group, version, rt.kind)] = _kind_schema(rt, version, rt.kind, is_list=False)
        schemas[schema_name(group, version, list_kind)] = _kind_schema(rt, version, list_kind, is_list=True)
    return {
        "openapi": _OPENAPI_VERSION,
        "info": {"title": "Kubernetes (dsctl simulator)", "version": "v1.36.0"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }
