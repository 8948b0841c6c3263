"""``/openapi/v2``: the v3 documents merged into Swagger 2.0, and its protobuf encoding."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from dsctl_sim.discovery import openapi_v2_doc, openapi_v2_protobuf, wants_protobuf
from dsctl_sim.registry import BUILTIN_TYPES, ResourceType
from dsctl_sim.validation.crschema import CustomSchema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "description": "How big."},
                "note": {"type": "string", "nullable": True},
                "tags": {"type": "array", "items": {"type": "string"}},
                "strategy": {"type": "object", "properties": {"surge": {"x-kubernetes-int-or-string": True,
                                                                          "anyOf": [{"type": "integer"},
                                                                                    {"type": "string"}]}}},
            },
        },
    },
}
WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", True, has_status=True, builtin=False,
                       schema=CustomSchema(SCHEMA))
TYPES = (*BUILTIN_TYPES, WIDGETS)


def _patch_ops(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["patch"]["x-kubernetes-group-version-kind"]["kind"]: item["patch"]
            for path, item in doc["paths"].items() if "patch" in item and not path.endswith("/status")}


@pytest.mark.parametrize(
    "kind", [pytest.param("DaemonSet", id="built-in"), pytest.param("Widget", id="custom-resource")]
)
def test_patch_consumes_what_the_v3_document_offers(kind: str) -> None:
    """A patch consumes json-patch and merge-patch only and takes fieldValidation, as in v3."""
    op = _patch_ops(openapi_v2_doc(TYPES))[kind]
    assert op["consumes"] == ["application/json-patch+json", "application/merge-patch+json"]
    assert {p["name"]: p["in"] for p in op["parameters"]}["fieldValidation"] == "query"
    assert op["parameters"][0] == {"name": "body", "in": "body", "required": True,
                                   "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}


def test_a_custom_resource_is_published_with_its_schema() -> None:
    """The CRD's schema is a definition tagged with its kind, without what Swagger 2.0 cannot say."""
    definitions = openapi_v2_doc(TYPES)["definitions"]
    widget = definitions["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "Widget"}]
    assert widget["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    spec = widget["properties"]["spec"]
    assert spec["required"] == ["size"] and spec["properties"]["size"]["minimum"] == 1
    assert spec["properties"]["note"] == {"type": "string"}
    assert spec["properties"]["strategy"]["properties"]["surge"] == {"x-kubernetes-int-or-string": True}
    assert "io.k8s.api.rbac.v1.ClusterRole" in definitions


def _fields(data: bytes) -> list[tuple[int, Any]]:
    """Decode one protobuf message into (field number, raw value) pairs, in order."""
    out: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 1:
            out.append((number, struct.unpack("<d", data[pos:pos + 8])[0]))
            pos += 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, data[pos:pos + length]))
            pos += length
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    assert pos == len(data)
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _one(message: bytes, number: int) -> bytes:
    [value] = [v for n, v in _fields(message) if n == number]
    assert isinstance(value, bytes)
    return value


def _named(message: bytes, number: int) -> dict[str, bytes]:
    """A gnostic ``Named...`` list (name = 1, value = 2) as a dict."""
    return {_one(item, 1).decode(): _one(item, 2) for n, item in _fields(message) if n == number}


def test_the_protobuf_is_gnostics_document() -> None:
    """Swagger version, a path's patch consumes and GVK tag, and a CRD schema's fields decode back."""
    doc = openapi_v2_protobuf(openapi_v2_doc(TYPES))
    assert _one(doc, 1) == b"2.0"
    paths = _named(_one(doc, 8), 2)
    patch = _one(paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"], 8)
    assert [v for n, v in _fields(patch) if n == 7] == [b"application/json-patch+json",
                                                        b"application/merge-patch+json"]
    extensions = _named(patch, 13)
    assert _one(extensions["x-kubernetes-group-version-kind"], 2) == (
        b'{"group":"example.com","version":"v1","kind":"Widget"}')
    widget = _named(_one(doc, 9), 1)["com.example.v1.Widget"]
    spec = _named(_one(widget, 25), 1)["spec"]
    size = _named(_one(spec, 25), 1)["size"]
    assert _one(_one(size, 22), 1) == b"integer"
    assert dict(_fields(size))[9] == 1.0
    assert [v for n, v in _fields(spec) if n == 19] == [b"size"]


@pytest.mark.parametrize(
    ("accept", "protobuf"),
    [
        pytest.param("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", True, id="kubectl"),
        pytest.param("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", True, id="dotted"),
        pytest.param("application/json", False, id="json"),
        pytest.param("application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf", False,
                     id="json-first"),
        pytest.param("", False, id="none"),
    ],
)
def test_accept_picks_the_encoding(accept: str, protobuf: bool) -> None:
    """The protobuf document goes to whoever asks for it before JSON."""
    assert wants_protobuf(accept) is protobuf
