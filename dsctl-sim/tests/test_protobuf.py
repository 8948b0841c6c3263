"""Protobuf DeleteOptions bodies (what kubectl's typed clients send) decode to the JSON shape."""

from __future__ import annotations

import pytest

from dsctl_sim.protobuf import ProtobufError, decode_delete_options, decode_object


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _envelope(raw: bytes) -> bytes:
    type_meta = _field(1, b"v1") + _field(2, b"DeleteOptions")
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw) + _field(3, b"") + _field(4, b"")


def test_decodes_every_field() -> None:
    """Grace period, preconditions, orphanDependents, propagationPolicy and dryRun all come through."""
    pre = _field(1, b"uid-1") + _field(2, b"42")
    raw = (_field(1, 5) + _field(2, pre) + _field(3, 1) + _field(4, b"Foreground") + _field(5, b"All"))
    assert decode_delete_options(_envelope(raw)) == {
        "gracePeriodSeconds": 5, "preconditions": {"uid": "uid-1", "resourceVersion": "42"},
        "orphanDependents": True, "propagationPolicy": "Foreground", "dryRun": ["All"],
    }


def test_negative_grace_and_empty_options() -> None:
    """int64 fields are two's complement varints; an empty message is an empty dict."""
    assert decode_delete_options(_envelope(_field(1, -1))) == {"gracePeriodSeconds": -1}
    assert decode_delete_options(_envelope(b"")) == {}


@pytest.mark.parametrize("body", [
    pytest.param(b"{}", id="json-not-protobuf"),
    pytest.param(b"k8s\x00\x12\x05ab", id="truncated"),
])
def test_malformed_bodies_raise(body: bytes) -> None:
    """Anything that is not a well-formed envelope raises ProtobufError."""
    with pytest.raises(ProtobufError):
        decode_delete_options(body)


def test_decodes_a_namespace() -> None:
    """A protobuf Namespace (kubectl create namespace) decodes to metadata, labels and finalizers."""
    label = _field(1, b"team") + _field(2, b"a")
    meta = _field(1, b"ns1") + _field(2, b"") + _field(11, label)
    spec = _field(1, b"kubernetes")
    type_meta = _field(1, b"v1") + _field(2, b"Namespace")
    body = b"k8s\x00" + _field(1, type_meta) + _field(2, _field(1, meta) + _field(2, spec) + _field(3, b""))
    assert decode_object(body) == {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "ns1", "labels": {"team": "a"}},
                                   "spec": {"finalizers": ["kubernetes"]}}


def test_other_kinds_are_refused() -> None:
    """Protobuf bodies of kinds the decoder does not know raise (the server answers 415)."""
    type_meta = _field(1, b"v1") + _field(2, b"Pod")
    with pytest.raises(ProtobufError):
        decode_object(b"k8s\x00" + _field(1, type_meta) + _field(2, b""))
