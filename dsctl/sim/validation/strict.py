"""Unknown-field detection for ``fieldValidation=Strict`` and pruning for the other modes.

kube-apiserver decodes built-in objects into Go structs, so a field the type does not declare
never reaches storage: with ``fieldValidation=Strict`` (what plain ``kubectl apply`` sends) the
write fails with 400 ``strict decoding error: unknown field "spec.templat"``; with ``Warn`` or
``Ignore`` the field is silently dropped. The simulator keeps dicts, so it needs the list of
declared fields: ``fields.json`` holds the field tree of each served built-in type (names
and nesting only, no descriptions), generated from the Kubernetes v1.36 OpenAPI definitions;
``tests/sim/test_validation_strict.py`` regenerates it and fails when it drifts.

In the table a field's value is ``0`` (a leaf or free-form value: strings, quantities,
int-or-string, ``RawExtension``, JSON), a type name (a nested struct), ``[type]`` (a list of
structs) or ``{"*": type}`` (a map whose values are structs).
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["prune_unknown_fields", "strict_decoding_message", "unknown_fields"]


@functools.cache
def _table() -> dict[str, Any]:
    raw = importlib.resources.files("dsctl.sim.validation").joinpath("fields.json").read_bytes()
    table: dict[str, Any] = orjson.loads(raw)
    return table


def unknown_fields(key: str, obj: Mapping[str, Any]) -> list[str]:
    """Paths (``spec.template.spec.containers[0].imagee``) of fields the type does not declare.

    ``key`` is the storage key; custom resources and other unknown keys report nothing.
    """
    found: list[str] = []
    root = _table()["roots"].get(key)
    if root is not None:
        _walk(obj, root, "", found, prune=False)
    return found


def prune_unknown_fields(key: str, obj: dict[str, Any]) -> list[str]:
    """Remove undeclared fields from ``obj`` in place; returns the paths removed."""
    found: list[str] = []
    root = _table()["roots"].get(key)
    if root is not None:
        _walk(obj, root, "", found, prune=True)
    return found


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(value: Any, spec: Any, path: str, found: list[str], *, prune: bool) -> None:
    if spec == 0 or value is None:
        return
    if isinstance(spec, str):
        if not isinstance(value, dict):
            return
        fields = _table()["types"][spec]
        for name in list(value):
            here = _join(path, name)
            if name not in fields:
                found.append(here)
                if prune:
                    del value[name]
            else:
                _walk(value[name], fields[name], here, found, prune=prune)
    elif isinstance(spec, list):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _walk(item, spec[0], f"{path}[{i}]", found, prune=prune)
    elif isinstance(spec, dict) and isinstance(value, dict):
        for name, item in value.items():
            _walk(item, spec["*"], _join(path, name), found, prune=prune)


def strict_decoding_message(paths: list[str]) -> str:
    """The 400 message kube-apiserver gives under ``fieldValidation=Strict``."""
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
