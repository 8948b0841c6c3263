"""Just enough Kubernetes protobuf to read a ``DeleteOptions`` body.

The simulator speaks JSON, but kubectl's typed clients send some request bodies as
``application/vnd.kubernetes.protobuf``: ``kubectl drain`` deletes pods with a protobuf
``DeleteOptions``, ``kubectl create namespace`` posts a protobuf ``Namespace`` and ``kubectl
create poddisruptionbudget`` a protobuf ``PodDisruptionBudget``. Such a body is the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` message whose ``raw`` field holds the encoded
object. This module decodes that envelope, ``DeleteOptions``, ``Namespace`` (``ObjectMeta``
plus a spec of string lists) and ``PodDisruptionBudget`` (its spec of int-or-strings, a label
selector and a policy string) into the JSON shape the handlers already understand; other
protobuf bodies are refused (415).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ProtobufError", "decode_delete_options", "decode_object"]

_MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """The bytes are not the protobuf message expected."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """``(field number, value)`` pairs: an int for varints, bytes for length-delimited fields."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            out.append((number, data[pos:pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string field")
    return value.decode()


def _signed(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise ProtobufError("expected a varint field")
    return value - (1 << 64) if value >= 1 << 63 else value


def _envelope(body: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, raw)`` of a ``k8s\\x00``-prefixed ``runtime.Unknown``."""
    if not body.startswith(_MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(_MAGIC):]):
        if number == 1 and isinstance(value, bytes):
            for sub, sub_value in _fields(value):
                if sub == 1:
                    api_version = _text(sub_value)
                elif sub == 2:
                    kind = _text(sub_value)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    return api_version, kind, raw


def _string_map(entries: list[int | bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, bytes):
            raise ProtobufError("expected a map entry")
        pairs = dict(_fields(entry))
        out[_text(pairs.get(1, b""))] = _text(pairs.get(2, b""))
    return out


def _object_meta(data: bytes) -> dict[str, Any]:
    # ObjectMeta: 1 name, 2 generateName, 3 namespace, 11 labels, 12 annotations, 14 finalizers.
    meta: dict[str, Any] = {}
    labels: list[int | bytes] = []
    annotations: list[int | bytes] = []
    scalar = {1: "name", 2: "generateName", 3: "namespace"}
    for number, value in _fields(data):
        if number in scalar:
            text = _text(value)
            if text:  # proto2 writes empty optional strings; JSON omits them
                meta[scalar[number]] = text
        elif number == 11:
            labels.append(value)
        elif number == 12:
            annotations.append(value)
        elif number == 14:
            meta.setdefault("finalizers", []).append(_text(value))
    if labels:
        meta["labels"] = _string_map(labels)
    if annotations:
        meta["annotations"] = _string_map(annotations)
    return meta


_OBJECT_KINDS = frozenset({"Namespace", "PodDisruptionBudget"})


def _int_or_string(data: bytes) -> int | str:
    # IntOrString: 1 type (0 int, 1 string), 2 intVal, 3 strVal.
    fields = dict(_fields(data))
    if fields.get(1, 0) == 1:
        return _text(fields.get(3, b""))
    value = fields.get(2, 0)
    return _signed(value) if isinstance(value, int) else 0


def _label_selector(data: bytes) -> dict[str, Any]:
    # LabelSelector: 1 matchLabels (map), 2 matchExpressions {1 key, 2 operator, 3 values}.
    labels: list[int | bytes] = []
    expressions: list[dict[str, Any]] = []
    for number, value in _fields(data):
        if number == 1:
            labels.append(value)
        elif number == 2 and isinstance(value, bytes):
            expr: dict[str, Any] = {}
            for sub, sub_value in _fields(value):
                if sub == 1:
                    expr["key"] = _text(sub_value)
                elif sub == 2:
                    expr["operator"] = _text(sub_value)
                elif sub == 3:
                    expr.setdefault("values", []).append(_text(sub_value))
            expressions.append(expr)
    out: dict[str, Any] = {}
    if labels:
        out["matchLabels"] = _string_map(labels)
    if expressions:
        out["matchExpressions"] = expressions
    return out


def _pdb_spec(data: bytes) -> dict[str, Any]:
    # PodDisruptionBudgetSpec: 1 minAvailable, 2 selector, 3 maxUnavailable, 4 unhealthyPodEvictionPolicy.
    spec: dict[str, Any] = {}
    for number, value in _fields(data):
        if number in (1, 3) and isinstance(value, bytes):
            spec["minAvailable" if number == 1 else "maxUnavailable"] = _int_or_string(value)
        elif number == 2 and isinstance(value, bytes):
            spec["selector"] = _label_selector(value)
        elif number == 4:
            spec["unhealthyPodEvictionPolicy"] = _text(value)
    return spec


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf ``Namespace`` (metadata plus ``spec.finalizers``) or
    ``PodDisruptionBudget`` (metadata plus spec; a status sent on create is reset anyway)."""
    api_version, kind, raw = _envelope(body)
    if kind not in _OBJECT_KINDS:
        raise ProtobufError(f"protobuf bodies of kind {kind or '?'} are not supported; send JSON")
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {}}
    for number, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            out["metadata"] = _object_meta(value)
        elif number == 2 and isinstance(value, bytes) and kind == "PodDisruptionBudget":
            out["spec"] = _pdb_spec(value)
        elif number == 2 and isinstance(value, bytes):
            finalizers = [_text(v) for n, v in _fields(value) if n == 1]
            out["spec"] = {"finalizers": finalizers} if finalizers else {}
    return out


def decode_delete_options(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded ``meta.k8s.io/v1 DeleteOptions``."""
    _, _, raw = _envelope(body)
    out: dict[str, Any] = {}
    for number, value in _fields(raw):
        if number == 1:
            out["gracePeriodSeconds"] = _signed(value)
        elif number == 2 and isinstance(value, bytes):
            pre: dict[str, str] = {}
            for sub, sub_value in _fields(value):
                if sub == 1:
                    pre["uid"] = _text(sub_value)
                elif sub == 2:
                    pre["resourceVersion"] = _text(sub_value)
            out["preconditions"] = pre
        elif number == 3:
            out["orphanDependents"] = bool(value)
        elif number == 4:
            out["propagationPolicy"] = _text(value)
        elif number == 5:
            out.setdefault("dryRun", []).append(_text(value))
    return out
