"""Revision bodies carry ``data`` in the bytes kube-apiserver compares: Go's encoding."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from dsctl.daemonset.history import wire_body

REVISION: dict[str, Any] = {
    "metadata": {"name": "agent-1"},
    "revision": 2,
    # Key order as read from the server: the template's "spec" before "metadata", "$patch" last.
    "data": {"spec": {"template": {"spec": {"containers": [{"command": ["a && b > c"], "name": "x"}]},
                                   "metadata": {"labels": {"app": "agent"}}, "$patch": "replace"}}},
}


@pytest.mark.parametrize(
    ("new", "escape", "data"),
    [
        pytest.param(True, True, b'{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"agent"}},'
                                 b'"spec":{"containers":[{"command":["a \\u0026\\u0026 b \\u003e c"],"name":"x"}]}}}}',
                     id="snapshot-sorted-and-escaped-like-getPatch"),
        pytest.param(False, True, b'{"spec":{"template":{"spec":{"containers":[{"command":["a \\u0026\\u0026 b '
                                  b'\\u003e c"],"name":"x"}]},"metadata":{"labels":{"app":"agent"}},'
                                  b'"$patch":"replace"}}}',
                     id="update-in-stored-order-escaped"),
        pytest.param(False, False, b'{"spec":{"template":{"spec":{"containers":[{"command":["a && b > c"],'
                                   b'"name":"x"}]},"metadata":{"labels":{"app":"agent"}},"$patch":"replace"}}}',
                     id="update-unescaped-as-earlier-dsctl"),
    ],
)
def test_wire_body_data_bytes(new: bool, escape: bool, data: bytes) -> None:
    """A snapshot is sent as upstream writes it; an update keeps the order it was read in."""
    body = orjson.dumps(wire_body(REVISION, new=new, escape=escape))
    assert body == b'{"metadata":{"name":"agent-1"},"revision":2,"data":' + data + b"}"
    assert orjson.loads(body)["data"] == REVISION["data"]
