"""Unknown-field detection for ``fieldValidation=Strict`` and pruning for the other modes.

kube-apiserver decodes built-in objects into Go structs, so a field the type does not declare
never reaches storage: with ``fieldValidation=Strict`` (what plain ``kubectl apply`` sends) the
write fails with ``strict decoding error: unknown field "spec.templat"``; with ``Warn`` the
field is dropped and reported in a ``Warning`` header, with ``Ignore`` it is dropped silently
(the simulator's ``fieldvalidation`` applies the modes; ``dsctl plan`` refuses a manifest with
any). Both keep dicts, so they need the list of declared fields: ``fields.json`` holds the
field tree of each served built-in type (names and nesting only, no descriptions), generated
from the Kubernetes v1.36 OpenAPI definitions; ``dsctl-sim/tests/test_validation_strict.py``
regenerates it and fails when it drifts. ``key`` is the simulator's storage key
(``apps/daemonsets``, ``pods``...).

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
    raw = importlib.resources.files("dsctl_api").joinpath("fields.json").read_bytes()
    table: dict[str, Any] = orjson.loads(raw)
    return table


def unknown_fields(key: str, obj: Mapping[str, Any]) -> list[str]:
    """Paths (``spec.template.spec.containers[0].imagee``) of fields the type does not declare.

    ``key`` is the storage key; custom resources and other unknown keys report nothing.
    Paths come in document order.
    """
    found: list[str] = []
    table = _table()
    root = table["roots"].get(key)
    if root is not None:
        _walk(obj, root, table["types"], [], found, prune=False)
    return found


def prune_unknown_fields(key: str, obj: dict[str, Any]) -> list[str]:
    """Remove undeclared fields from ``obj`` in place; returns the paths removed."""
    found: list[str] = []
    table = _table()
    root = table["roots"].get(key)
    if root is not None:
        _walk(obj, root, table["types"], [], found, prune=True)
    return found


def _path(trail: list[str | int], name: str) -> str:
    out = ""
    for part in (*trail, name):
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else part
    return out


def _walk(  # noqa: PLR0917
    value: Any, spec: Any, types: dict[str, Any], trail: list[str | int], found: list[str], prune: bool
) -> None:
    # Runs on every write (pod creates included), so the path of a field is built only when
    # the field turns out to be unknown; ``trail`` holds the way down meanwhile.
    if isinstance(spec, str):
        if not isinstance(value, dict):
            return
        fields = types[spec]
        unknown: list[str] = []
        for name, item in value.items():
            sub = fields.get(name)
            if sub is None:
                found.append(_path(trail, name))
                unknown.append(name)
            elif sub != 0 and item is not None:
                trail.append(name)
                _walk(item, sub, types, trail, found, prune)
                trail.pop()
        if prune:
            for name in unknown:
                del value[name]
    elif isinstance(spec, list):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if item is not None:
                    trail.append(index)
                    _walk(item, spec[0], types, trail, found, prune)
                    trail.pop()
    elif isinstance(spec, dict) and isinstance(value, dict):
        for name, item in value.items():
            if item is not None:
                trail.append(name)
                _walk(item, spec["*"], types, trail, found, prune)
                trail.pop()


def strict_decoding_message(paths: list[str]) -> str:
    """The strict decoding error kube-apiserver reports under ``fieldValidation=Strict``."""
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
