"""ControllerRevision ``data`` is immutable as bytes, exactly as kube-apiserver enforces it.

The server keeps the literal bytes of ``data`` and refuses an update whose bytes differ, even
when they parse to the same value: ``"&&"`` against ``"\\u0026\\u0026"``, or another key order.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from dsctl_api import gojson
from dsctl_sim.rawdata import member_bytes
from simapi import Api

REVS = "/apis/apps/v1/namespaces/default/controllerrevisions"

# As kube-controller-manager writes it: Go's encoding, map keys sorted, HTML characters escaped.
GO_DATA = (b'{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"agent"}},'
           b'"spec":{"containers":[{"command":["sh","-c","test -f /ok \\u0026\\u0026 echo up \\u003e /log"],'
           b'"image":"agent:1","name":"agent"}]}}}}')


def _body(data: bytes, *, revision: int = 1, rv: str | None = None, labels: dict[str, str] | None = None) -> bytes:
    meta: dict[str, Any] = {"name": "agent-abc", "namespace": "default", "labels": labels or {"app": "agent"}}
    if rv is not None:
        meta["resourceVersion"] = rv
    head = orjson.dumps({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta,
                         "revision": revision})
    return head[:-1] + b',"data":' + data + b"}"


async def _create(api: Api, data: bytes = GO_DATA) -> dict[str, Any]:
    created: dict[str, Any] = await api.ok("POST", REVS, _body(data))
    return created


@pytest.mark.parametrize(
    ("encode", "accepted"),
    [
        pytest.param(lambda d: GO_DATA, True, id="same-bytes"),
        pytest.param(gojson.encode, True, id="go-encoding-in-stored-order"),
        pytest.param(orjson.dumps, False, id="orjson-unescaped"),
        pytest.param(lambda d: gojson.encode({"spec": {"template": dict(reversed(d["spec"]["template"].items()))}}),
                     False, id="other-key-order"),
        pytest.param(lambda d: GO_DATA.replace(b'"image":"agent:1"', b'"image":"agent:2"'), False,
                     id="other-value"),
    ],
)
async def test_update_compares_data_bytes(api: Api, encode: Any, accepted: bool) -> None:
    """A renumbering PUT keeps data only if its bytes are the stored ones; equal values in other bytes are 422."""
    created = await _create(api)
    body = _body(encode(created["data"]), revision=2, rv=created["metadata"]["resourceVersion"])
    status, out = await api.call("PUT", f"{REVS}/agent-abc", body)
    if accepted:
        assert status == 200, out
        assert out["revision"] == 2
    else:
        assert status == 422, out
        assert out["details"]["causes"][0]["field"] == "data"
        assert "field is immutable" in out["details"]["causes"][0]["message"]


UNSORTED_GO_DATA = gojson.encode({"spec": {"template": {"spec": {"containers": []}, "$patch": "replace"}}})


@pytest.mark.parametrize(
    ("stored", "patch_type", "accepted"),
    [
        pytest.param(GO_DATA, "merge-patch", True, id="merge-go-encoded-survives-reencoding"),
        pytest.param(orjson.dumps(orjson.loads(GO_DATA)), "merge-patch", False, id="merge-unescaped-gets-escaped"),
        pytest.param(UNSORTED_GO_DATA, "merge-patch", True, id="merge-keeps-key-order"),
        pytest.param(GO_DATA, "strategic-merge-patch", True, id="strategic-sorted-survives"),
        pytest.param(UNSORTED_GO_DATA, "strategic-merge-patch", False, id="strategic-sorts-keys"),
    ],
)
async def test_patch_reencodes_stored_bytes(api: Api, stored: bytes, patch_type: str, accepted: bool) -> None:
    """A metadata patch re-encodes the stored data as the server does; bytes that change are a change of data."""
    await _create(api, stored)
    status, out = await api.call("PATCH", f"{REVS}/agent-abc", {"metadata": {"labels": {"x": "y"}}},
                                 headers={"Content-Type": f"application/{patch_type}+json"})
    assert status == (200 if accepted else 422), out


@pytest.mark.parametrize(
    ("body", "name", "expected"),
    [
        pytest.param(b'{"a":1,"data":{"x":"}"},"b":2}', "data", b'{"x":"}"}', id="object-with-brace-in-string"),
        pytest.param(b' { "data" : [1, {"y": "\\"]"}] } ', "data", b'[1, {"y": "\\"]"}]', id="array-spaced"),
        pytest.param(b'{"d\\u0061ta":"v"}', "data", b'"v"', id="escaped-key"),
        pytest.param(b'{"data":1,"data":true}', "data", b"true", id="last-duplicate-wins"),
        pytest.param(b'{"other":{"data":1}}', "data", None, id="nested-not-top-level"),
        pytest.param(b"[1]", "data", None, id="not-an-object"),
    ],
)
def test_member_bytes(body: bytes, name: str, expected: bytes | None) -> None:
    """The literal bytes of a top-level member, whitespace inside kept, as Go hands them to RawExtension."""
    assert member_bytes(body, name) == expected
