"""What the API server does to a custom resource with its CRD's structural schema: defaulting
and strict field checking, for ``dsctl.io/v1`` manifests.

apiextensions-apiserver prunes every field its ``openAPIV3Schema`` does not specify (KEP 2332),
except under ``x-kubernetes-preserve-unknown-fields: true``; with ``fieldValidation=Strict``
(what ``kubectl apply`` asks for) such a field is an error instead. It fills a property's
``default`` when the property is absent from an object that is present, at every depth, on
every write (the defaulting KEP). The revision hash is computed over the template as stored,
so a plan for a custom resource must default it with the very schema the cluster serves: the
schema is read from the cluster's CRD, never from a copy shipped with dsctl.

Pure: schemas and objects are plain JSON dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from dsctl_api.objects import as_list, as_map

__all__ = ["apply_defaults", "served_schema", "unknown_fields"]

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_EMBEDDED = "x-kubernetes-embedded-resource"
_EMBEDDED_FIELDS = ("apiVersion", "kind", "metadata")


def served_schema(crd: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    """The ``openAPIV3Schema`` of ``version`` in a CRD, or None when it has none."""
    for entry in as_list(as_map(crd.get("spec")).get("versions")):
        if as_map(entry).get("name") == version:
            schema = as_map(as_map(as_map(entry).get("schema")).get("openAPIV3Schema"))
            return schema or None
    return None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def unknown_fields(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Paths of the fields of ``value`` that ``schema`` does not specify, in document order."""
    found: list[str] = []
    _unknown(schema, value, path, found)
    return found


def _unknown(schema: Mapping[str, Any], value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, list):
        items = as_map(schema.get("items"))
        for index, item in enumerate(value):
            if item is not None:
                _unknown(items, item, f"{path}[{index}]", found)
        return
    if not isinstance(value, Mapping):
        return
    properties = as_map(schema.get("properties"))
    extra = schema.get("additionalProperties")
    preserve = schema.get(_PRESERVE) is True
    embedded = schema.get(_EMBEDDED) is True
    for name, item in value.items():
        sub = properties.get(name)
        if isinstance(sub, Mapping):
            if item is not None:
                _unknown(sub, item, _join(path, name), found)
        elif isinstance(extra, Mapping):
            if item is not None:
                _unknown(extra, item, f"{path}[{name}]", found)
        elif not (preserve or extra is True or (embedded and name in _EMBEDDED_FIELDS)):
            found.append(_join(path, name))


def apply_defaults(schema: Mapping[str, Any], value: Any) -> None:
    """Fill every absent property that has a ``default``, in place, at every depth."""
    if isinstance(value, list):
        items = as_map(schema.get("items"))
        for item in value:
            apply_defaults(items, item)
        return
    if not isinstance(value, dict):
        return
    properties = as_map(schema.get("properties"))
    for name, sub in properties.items():
        if isinstance(sub, Mapping) and name not in value and "default" in sub:
            value[name] = copy.deepcopy(sub["default"])
    for name, item in value.items():
        sub = properties.get(name)
        if isinstance(sub, Mapping):
            apply_defaults(sub, item)
        elif isinstance(schema.get("additionalProperties"), Mapping):
            apply_defaults(schema["additionalProperties"], item)
