"""Test-side knowledge of CRD schemas: the structural rules, and validating objects by them.

apiextensions.k8s.io/v1 accepts only *structural* schemas, and kube-apiserver checks that
when the CRD is created. We have no apiserver here, so ``structural_problems`` re-states
the rules that matter for a schema generated from a built-in type. ``strict_validator``
turns a CRD schema into a JSON Schema that also rejects unknown fields: the apiserver
would silently prune them, which for an example manifest is just as wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

__all__ = ["crd_schema", "strict_validator", "structural_problems"]

_TYPES = {"object", "array", "string", "integer", "number", "boolean"}
_SCALARS = _TYPES - {"object", "array"}
# The JSONSchemaProps fields a generated schema may use.
_ALLOWED_KEYS = {
    "description", "type", "format", "enum", "required", "items", "properties",
    "additionalProperties", "default", "anyOf", "nullable", "pattern",
    "maximum", "minimum", "maxLength", "minLength", "maxItems", "minItems",
    "maxProperties", "minProperties",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-embedded-resource", "x-kubernetes-validations",
}
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def crd_schema(crd: Mapping[str, Any], version: str = "v1") -> dict[str, Any]:
    """The openAPIV3Schema of one version of a CRD."""
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(f"{crd['metadata']['name']} has no version {version}")


def structural_problems(schema: Mapping[str, Any], *, path: str = "", root: bool = True) -> list[str]:
    """Every way this schema breaks the structural-schema rules; empty when it is fine."""
    problems: list[str] = []
    where = path or "<root>"
    unknown = set(schema) - _ALLOWED_KEYS
    if unknown:
        problems.append(f"{where}: keys a CRD schema does not have: {sorted(unknown)}")
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    kind = schema.get("type")
    if int_or_string:
        if kind is not None:
            problems.append(f"{where}: int-or-string must not also set a type")
        if schema.get("anyOf", _INT_OR_STRING_ANY_OF) != _INT_OR_STRING_ANY_OF:
            problems.append(f"{where}: int-or-string allows only anyOf integer/string")
    elif "anyOf" in schema:
        problems.append(f"{where}: anyOf is only used with int-or-string here")
    if kind is None and not (int_or_string or preserve):
        problems.append(f"{where}: no type")
    elif kind is not None and kind not in _TYPES:
        problems.append(f"{where}: type {kind!r} is not a single OpenAPI type")
    extra = schema.get("additionalProperties")
    if extra is not None and not isinstance(extra, Mapping):
        problems.append(f"{where}: additionalProperties must be a schema, not {extra!r}")
    if isinstance(extra, Mapping) and "properties" in schema:
        problems.append(f"{where}: properties and additionalProperties together")
    if kind == "array" and "items" not in schema:
        problems.append(f"{where}: array without items")
    problems += _list_problems(schema, where=where)
    for name, sub in schema.get("properties", {}).items():
        sub_path = f"{path}.{name}"
        if root and name == "metadata" and set(sub) - {"type", "description"}:
            problems.append(f"{sub_path}: the root metadata may only be a bare object")
        problems += structural_problems(sub, path=sub_path, root=False)
    if "items" in schema:
        problems += structural_problems(schema["items"], path=f"{path}[]", root=False)
    if isinstance(extra, Mapping):
        problems += structural_problems(extra, path=f"{path}{{}}", root=False)
    return problems


def _list_problems(schema: Mapping[str, Any], *, where: str) -> list[str]:
    list_type = schema.get("x-kubernetes-list-type")
    if list_type is None:
        return [f"{where}: list-map keys without list-type map"] if "x-kubernetes-list-map-keys" in schema else []
    items = schema.get("items", {})
    if list_type == "set" and items.get("type") not in _SCALARS:
        return [f"{where}: a set list needs scalar items"]
    if list_type != "map":
        return []
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if items.get("type") != "object" or not keys:
        return [f"{where}: a map list needs object items and list-map keys"]
    problems = []
    required = set(items.get("required", ()))
    for key in keys:
        prop = items.get("properties", {}).get(key)
        if prop is None:
            problems.append(f"{where}: list-map key {key!r} is not an item property")
        elif key not in required and "default" not in prop:
            problems.append(f"{where}: list-map key {key!r} is neither required nor defaulted")
    return problems


def _strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if "properties" in schema:
        out["properties"] = {name: _strict(sub) for name, sub in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if "items" in schema:
        out["items"] = _strict(schema["items"])
    if isinstance(schema.get("additionalProperties"), Mapping):
        out["additionalProperties"] = _strict(schema["additionalProperties"])
    if schema.get("nullable") is True and "type" in schema:
        out["type"] = [schema["type"], "null"]
    out.pop("nullable", None)
    return out


def strict_validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for a CRD schema that also rejects fields it would prune."""
    return jsonschema.Draft7Validator(_strict(schema))
