"""``/openapi/v2``: the Swagger 2.0 document, as JSON or as kubectl's protobuf.

kubectl still reads v2 in two places: ``apply`` of an existing object asks it which patch
types a kind consumes, and a kind missing from ``/openapi/v3`` sends kubectl's field-validation
check to v2 (where an unknown kind gets kubectl's usual "no matches for kind" answer instead of
"failed to download openapi"). kube-apiserver publishes every served kind there, custom
resources included with their CRD's schema, so this document is the v3 documents merged and
translated: operations carry ``consumes`` (json-patch and merge-patch only, so kubectl builds
the same patches as with v3), their query parameters and the ``x-kubernetes-group-version-kind``
tag; schemas move to ``definitions``. A CRD schema loses what Swagger 2.0 cannot say
(``nullable``, ``oneOf``, ``anyOf``, ``not``), as kube-apiserver's v2 publishing drops it.

kubectl asks for ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and parses
the answer as gnostic's ``openapi.v2.Document`` message; ``to_protobuf`` encodes the subset of
that message this document uses (field numbers from gnostic's ``OpenAPIv2.proto``). The answer's
Content-Type is the dotted form, ``...spec.v2.v1.0+protobuf``, as kube-apiserver sends it: Go's
media-type parser refuses the ``@``, and kubectl's typed requests check the Content-Type.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from dsctl_sim.discovery.openapi import group_versions, openapi_v3_doc

__all__ = ["PROTOBUF_CONTENT_TYPE", "openapi_v2_doc", "to_protobuf", "wants_protobuf"]

PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V3_REFS = "#/components/schemas/"
_V2_REFS = "#/definitions/"
_NOT_IN_V2 = frozenset({"nullable", "oneOf", "anyOf", "not"})
_METHODS = ("get", "put", "post", "delete", "patch")


def wants_protobuf(accept: str) -> bool:
    """Whether an ``Accept`` header asks for the protobuf document (either spelling) before JSON."""
    for media in accept.split(","):
        kind = media.split(";")[0].strip()
        if kind.startswith("application/com.github.proto-openapi.spec.v2"):
            return True
        if kind in ("application/json", "*/*", "application/*"):
            return False
    return False


def _schema_v2(schema: Any) -> Any:
    """A v3 schema as Swagger 2.0 says it: refs into ``definitions``, v3-only keywords dropped."""
    if isinstance(schema, list):
        return [_schema_v2(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NOT_IN_V2:
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace(_V3_REFS, _V2_REFS)
        elif key in ("properties", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _schema_v2(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "allOf"):
            out[key] = _schema_v2(value)
        else:
            out[key] = value
    return out


def _parameter_v2(param: Mapping[str, Any]) -> dict[str, Any]:
    schema = param.get("schema") or {}
    out = {"name": param["name"], "in": param["in"], "type": schema.get("type", "string")}
    if param.get("description"):
        out["description"] = param["description"]
    if param.get("required"):
        out["required"] = True
    if schema.get("uniqueItems"):
        out["uniqueItems"] = True
    return out


def _operation_v2(op: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"operationId": op["operationId"], "tags": list(op.get("tags") or []),
                           "produces": ["application/json"]}
    params = [_parameter_v2(p) for p in op.get("parameters") or []]
    body = op.get("requestBody")
    if body:
        content = body.get("content") or {}
        out["consumes"] = list(content)
        first: Mapping[str, Any] = next(iter(content.values()), {})
        params.insert(0, {"name": "body", "in": "body", "required": True, "schema": _schema_v2(first.get("schema"))})
    out["parameters"] = params
    responses = {}
    for code, response in (op.get("responses") or {}).items():
        schema = ((response.get("content") or {}).get("application/json") or {}).get("schema")
        responses[code] = {"description": response.get("description", ""),
                           **({"schema": _schema_v2(schema)} if schema else {})}
    out["responses"] = responses
    out.update({k: v for k, v in op.items() if k.startswith("x-")})
    return out


def openapi_v2_doc(resources: Iterable[Any]) -> dict[str, Any]:
    """``GET /openapi/v2`` as JSON: every served group-version's paths and schemas."""
    types = list(resources)
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for group, version in group_versions(types):
        doc = openapi_v3_doc(types, group, version)
        for path, item in doc["paths"].items():
            converted: dict[str, Any] = {m: _operation_v2(item[m]) for m in _METHODS if m in item}
            if item.get("parameters"):
                converted["parameters"] = [_parameter_v2(p) for p in item["parameters"]]
            paths[path] = converted
        for name, schema in doc["components"]["schemas"].items():
            definitions[name] = _schema_v2(schema)
    return {"swagger": "2.0", "info": {"title": "Kubernetes (dsctl simulator)", "version": "v1.36.0"},
            "paths": dict(sorted(paths.items())), "definitions": dict(sorted(definitions.items()))}


# -- protobuf (gnostic openapi.v2) ------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): strings, bytes and messages."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, value: Any) -> bytes:
    return _field(number, str(value).encode()) if value not in (None, "") else b""


def _texts(number: int, values: Iterable[Any]) -> bytes:
    return b"".join(_field(number, str(v).encode()) for v in values)


def _flag(number: int, value: Any, *, always: bool = False) -> bytes:
    return _varint(number << 3) + (b"\x01" if value else b"\x00") if value or always else b""


def _count(number: int, value: Any) -> bytes:
    return _varint(number << 3) + _varint(int(value)) if isinstance(value, int) and value > 0 else b""


def _double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return b""
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _any(value: Any) -> bytes:
    """gnostic's ``Any``: the value as YAML text (JSON is YAML)."""
    return _field(2, orjson.dumps(value))


def _extensions(number: int, obj: Mapping[str, Any]) -> bytes:
    return b"".join(_field(number, _text(1, k) + _field(2, _any(v))) for k, v in obj.items() if k.startswith("x-"))


def _schema_pb(schema: Mapping[str, Any]) -> bytes:
    out = [_text(1, schema.get("$ref")), _text(2, schema.get("format")), _text(3, schema.get("title")),
           _text(4, schema.get("description"))]
    if "default" in schema:
        out.append(_field(5, _any(schema["default"])))
    out += [_double(6, schema.get("multipleOf")), _double(7, schema.get("maximum")),
            _flag(8, schema.get("exclusiveMaximum")), _double(9, schema.get("minimum")),
            _flag(10, schema.get("exclusiveMinimum")), _count(11, schema.get("maxLength")),
            _count(12, schema.get("minLength")), _text(13, schema.get("pattern")),
            _count(14, schema.get("maxItems")), _count(15, schema.get("minItems")),
            _flag(16, schema.get("uniqueItems")), _count(17, schema.get("maxProperties")),
            _count(18, schema.get("minProperties")), _texts(19, schema.get("required") or [])]
    out += [_field(20, _any(v)) for v in schema.get("enum") or []]
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        out.append(_field(21, _flag(2, extra, always=True)))
    elif isinstance(extra, Mapping):
        out.append(_field(21, _field(1, _schema_pb(extra))))
    kind = schema.get("type")
    if kind:
        out.append(_field(22, _texts(1, kind if isinstance(kind, list) else [kind])))
    items = schema.get("items")
    if isinstance(items, Mapping):
        items = [items]
    if items:
        out.append(_field(23, b"".join(_field(1, _schema_pb(s)) for s in items)))
    out += [_field(24, _schema_pb(s)) for s in schema.get("allOf") or []]
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        named = b"".join(_field(1, _text(1, n) + _field(2, _schema_pb(s))) for n, s in properties.items())
        out.append(_field(25, named))
    out.append(_flag(27, schema.get("readOnly")))
    if "example" in schema:
        out.append(_field(30, _any(schema["example"])))
    out.append(_extensions(31, schema))
    return b"".join(out)


def _parameter_pb(param: Mapping[str, Any]) -> bytes:
    """A ``ParametersItem``: a body parameter, or a query or path parameter."""
    where = param["in"]
    if where == "body":
        body = (_text(1, param.get("description")) + _text(2, param["name"]) + _text(3, where)
                + _flag(4, param.get("required")) + _field(5, _schema_pb(param.get("schema") or {})))
        return _field(1, _field(1, body))
    if where == "path":
        sub = (_flag(1, param.get("required")) + _text(2, where) + _text(3, param.get("description"))
               + _text(4, param["name"]) + _text(5, param.get("type")))
        return _field(1, _field(2, _field(4, sub)))
    sub = (_flag(1, param.get("required")) + _text(2, where) + _text(3, param.get("description"))
           + _text(4, param["name"]) + _text(6, param.get("type")) + _flag(20, param.get("uniqueItems")))
    return _field(1, _field(2, _field(3, sub)))


def _operation_pb(op: Mapping[str, Any]) -> bytes:
    responses = b""
    for code, response in op.get("responses", {}).items():
        body = _text(1, response.get("description"))
        if response.get("schema"):
            body += _field(2, _field(1, _schema_pb(response["schema"])))
        responses += _field(1, _text(1, code) + _field(2, _field(1, body)))
    return b"".join([
        _texts(1, op.get("tags") or []), _text(5, op.get("operationId")), _texts(6, op.get("produces") or []),
        _texts(7, op.get("consumes") or []), *(_field(8, _parameter_pb(p)) for p in op.get("parameters") or []),
        _field(9, responses), _extensions(13, op),
    ])


def _path_item_pb(item: Mapping[str, Any]) -> bytes:
    numbers = {"get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8}
    out = [_field(numbers[m], _operation_pb(item[m])) for m in _METHODS if m in item]
    out += [_field(9, _parameter_pb(p)) for p in item.get("parameters") or []]
    return b"".join(out)


def to_protobuf(doc: Mapping[str, Any]) -> bytes:
    """``doc`` (from ``openapi_v2_doc``) as a gnostic ``openapi.v2.Document`` message."""
    info = doc.get("info") or {}
    paths = b"".join(_field(2, _text(1, p) + _field(2, _path_item_pb(item))) for p, item in doc["paths"].items())
    definitions = b"".join(_field(1, _text(1, n) + _field(2, _schema_pb(s))) for n, s in doc["definitions"].items())
    return (_text(1, doc["swagger"]) + _field(2, _text(1, info.get("title")) + _text(2, info.get("version")))
            + _field(8, paths) + _field(9, definitions))
