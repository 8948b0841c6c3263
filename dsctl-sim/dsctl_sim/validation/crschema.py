"""Validating a custom resource against its CRD's structural schema, as apiextensions-apiserver does.

kube-apiserver checks every custom resource write against the served version's
``openAPIV3Schema``: value types, ``required``, ``enum``, size limits (``maxLength``,
``maxItems``, ``maxProperties``, ``minItems``), then the ``x-kubernetes-validations`` CEL rules
of each node (``dsctl_sim.validation.cel``). ``CustomSchema`` compiles a schema once, when
the CRD is served, and validates objects against it. Messages are apiextensions':

- ``spec.selector: Required value``;
- ``spec.minReadySeconds: Invalid value: "string": spec.minReadySeconds in body must be of
  type integer: "string"``;
- ``spec.x: Unsupported value: "a": supported values: "b", "c"``;
- ``...key: Too long: may not be longer than 317``; ``...values: Too many: 65: must have at most
  64 items``.

Paths use ``field.Path``'s form: ``.name`` for properties, ``[3]`` for list items, ``[key]``
for map values. ``metadata`` at the root is left to the ObjectMeta rules every kind gets; root rules see its
``name`` and ``generateName``.
On update, an error at a value that did not change is dropped (ratcheting, see ``cel``).
Null values count as absent (the apiserver prunes them from non-nullable fields).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from dsctl_sim.validation.causes import Causes, format_value, is_int
from dsctl_sim.validation.cel import CelRule, RuleError, compile_rules, evaluate_rules

__all__ = ["CustomSchema", "RuleError"]

Ratchet = Callable[[], bool]

def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if is_int(value):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "null"


@dataclass(slots=True)
class _Node:
    type: str = ""
    int_or_string: bool = False
    rules: tuple[CelRule, ...] = ()
    required: tuple[str, ...] = ()
    enum: tuple[Any, ...] | None = None
    max_length: int | None = None
    max_items: int | None = None
    min_items: int | None = None
    max_properties: int | None = None
    properties: dict[str, _Node] = field(default_factory=dict)
    additional: _Node | None = None
    items: _Node | None = None
    map_keys: tuple[str, ...] = ()


def _compile(schema: Mapping[str, Any]) -> _Node:
    node = _Node(
        type=str(schema.get("type") or ""),
        int_or_string=bool(schema.get("x-kubernetes-int-or-string")),
        rules=compile_rules(schema["x-kubernetes-validations"]) if "x-kubernetes-validations" in schema else (),
        required=tuple(schema.get("required") or ()),
        enum=tuple(schema["enum"]) if "enum" in schema else None,
        max_length=schema.get("maxLength"),
        max_items=schema.get("maxItems"),
        min_items=schema.get("minItems"),
        max_properties=schema.get("maxProperties"),
        map_keys=tuple(schema.get("x-kubernetes-list-map-keys") or ())
        if schema.get("x-kubernetes-list-type") == "map" else (),
    )
    for name, sub in (schema.get("properties") or {}).items():
        node.properties[name] = _compile(sub)
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        node.additional = _compile(additional)
    if isinstance(schema.get("items"), Mapping):
        node.items = _compile(schema["items"])
    return node


class CustomSchema:
    """One CRD version's ``openAPIV3Schema``, compiled; equal when the schemas are equal.

    ``RuleError`` from the constructor means a rule does not compile (kube-apiserver would
    refuse such a CRD). ``openapi`` is the schema as given, for discovery.
    """

    __slots__ = ("_digest", "_root", "openapi")

    def __init__(self, openapi: Mapping[str, Any]) -> None:
        self.openapi = dict(openapi)
        self._digest = hashlib.sha256(orjson.dumps(self.openapi, option=orjson.OPT_SORT_KEYS)).hexdigest()
        self._root = _compile(self.openapi)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CustomSchema) and other._digest == self._digest

    def __hash__(self) -> int:
        return hash(self._digest)

    def __repr__(self) -> str:
        return f"CustomSchema({self._digest[:12]})"

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[dict[str, str]]:
        """The causes for which kube-apiserver would refuse ``obj`` (``old`` on update)."""
        causes = Causes()
        root = self._root
        body, old_body = _rule_view(obj), None if old is None else _rule_view(old)
        # Schema errors first, then the rules' errors, as apiextensions reports them.
        _walk(causes, root, body, old_body, path="", parent_ratchet=lambda: False, rules=False)
        _walk(causes, root, body, old_body, path="", parent_ratchet=lambda: False, rules=True)
        return list(causes)


def _rule_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    # Rules at the root see metadata.name and generateName only, as apiextensions exposes them;
    # the rest of ObjectMeta is validated by the rules every kind gets.
    out = {k: v for k, v in obj.items() if k != "metadata"}
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: meta[k] for k in ("name", "generateName") if isinstance(meta.get(k), str)}
    return out


def _walk(causes: Causes, node: _Node, value: Any, old: Any, *, path: str, parent_ratchet: Ratchet,
          rules: bool) -> None:
    """One pass over the value: the schema checks (``rules=False``) or the CEL rules (``rules=True``)."""
    def ratchet() -> bool:
        return value == old if old is not None else parent_ratchet()

    before = len(causes)
    if rules:
        if node.rules:
            # An item of an unchanged list that cannot be correlated ratchets with its list.
            evaluate_rules(causes, node.rules, path=path, type_name=node.type, value=value, old=old,
                           ratchet=ratchet())
    elif not _check_value(causes, node, value, path):
        if ratchet():
            del causes[before:]
        return
    if isinstance(value, Mapping):
        old_map = old if isinstance(old, Mapping) else {}
        for name, sub in value.items():
            child = node.properties.get(name) if node.properties else node.additional
            if child is None or sub is None:
                continue
            here = f"{path}.{name}" if node.properties else f"{path}[{name}]"
            _walk(causes, child, sub, old_map.get(name), path=here.lstrip("."), parent_ratchet=ratchet, rules=rules)
    elif isinstance(value, list) and node.items is not None:
        correlated = _correlate(node, old)
        for i, item in enumerate(value):
            if item is None:
                continue
            _walk(causes, node.items, item, correlated(item), path=f"{path}[{i}]", parent_ratchet=ratchet,
                  rules=rules)
    if not rules and len(causes) > before and ratchet():
        # Schema errors at an unchanged value are ratcheted (rule errors are, by evaluate_rules).
        del causes[before:]


def _correlate(node: _Node, old: Any) -> Callable[[Any], Any]:
    if not node.map_keys or not isinstance(old, list):
        return lambda item: None
    keys = node.map_keys
    index = {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, Mapping)}
    return lambda item: index.get(tuple(item.get(k) for k in keys)) if isinstance(item, Mapping) else None


def _check_value(causes: Causes, node: _Node, value: Any, path: str) -> bool:
    """Type, enum, sizes and required fields at one node; False when the type is wrong."""
    actual = _type_of(value)
    if node.int_or_string:
        ok = actual in ("integer", "string")
        expected = "integer-or-string"
    else:
        expected = node.type
        ok = not expected or actual == expected or (expected == "number" and actual == "integer")
    if not ok:
        shown = actual if actual != "null" else "null"
        causes.invalid(path, shown, f"{path} in body must be of type {expected}: {format_value(shown)}")
        return False
    if node.enum is not None and value not in node.enum:
        causes.not_supported(path, value, [str(e) for e in node.enum])
    if node.max_length is not None and isinstance(value, str) and len(value) > node.max_length:
        causes.add(path, "FieldValueTooLong", f"Too long: may not be longer than {node.max_length}")
    if isinstance(value, list):
        if node.max_items is not None and len(value) > node.max_items:
            causes.add(path, "FieldValueTooMany", f"Too many: {len(value)}: must have at most {node.max_items} items")
        if node.min_items is not None and len(value) < node.min_items:
            causes.invalid(path, len(value), f"{path} in body should have at least {node.min_items} items")
    if isinstance(value, Mapping):
        if node.max_properties is not None and len(value) > node.max_properties:
            causes.add(path, "FieldValueTooMany",
                       f"Too many: {len(value)}: must have at most {node.max_properties} items")
        for name in node.required:
            if value.get(name) is None:
                causes.required(f"{path}.{name}".lstrip("."))
    return True
