"""apply_patch dispatch: JSON merge patch, JSON patch, content types and error codes."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from dsctl_sim.patch import PatchError, UnsupportedPatchType, apply_patch

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n", "labels": {"a": "1", "b": "2"}},
    "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
}


@pytest.mark.parametrize(
    ("patch", "expected_metadata", "expected_spec"),
    [
        pytest.param(
            {"metadata": {"labels": {"c": "3"}}},
            {"name": "n", "labels": {"a": "1", "b": "2", "c": "3"}},
            NODE["spec"],
            id="adds-label",
        ),
        pytest.param(
            {"metadata": {"labels": {"a": None}}},
            {"name": "n", "labels": {"b": "2"}},
            NODE["spec"],
            id="null-removes-label",
        ),
        pytest.param(
            {"spec": {"taints": None}},
            NODE["metadata"],
            {},
            id="null-removes-list",
        ),
        pytest.param(
            {"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}},
            NODE["metadata"],
            {"taints": [{"key": "x", "effect": "NoExecute"}]},
            id="lists-are-replaced",
        ),
        pytest.param(
            {"metadata": {"annotations": {"a": None, "b": "x"}}},
            {**NODE["metadata"], "annotations": {"b": "x"}},
            NODE["spec"],
            id="nulls-never-stored-in-new-subtree",
        ),
    ],
)
def test_json_merge_patch(patch: dict[str, Any], expected_metadata: Any, expected_spec: Any) -> None:
    """RFC 7386: maps merge, null deletes, lists replace, and nothing of the original is mutated."""
    original = copy.deepcopy(NODE)
    merged = apply_patch(original, orjson.dumps(patch), "application/merge-patch+json", kind="Node")
    assert merged["metadata"] == expected_metadata
    assert merged["spec"] == expected_spec
    assert original == NODE


@pytest.mark.parametrize(
    ("operations", "check"),
    [
        pytest.param(
            [{"op": "add", "path": "/spec/taints/-", "value": {"key": "z", "effect": "NoExecute"}}],
            lambda o: o["spec"]["taints"][-1]["key"] == "z",
            id="append-taint",
        ),
        pytest.param(
            [{"op": "replace", "path": "/metadata/labels/a", "value": "9"}],
            lambda o: o["metadata"]["labels"]["a"] == "9",
            id="replace-label",
        ),
        pytest.param(
            [{"op": "remove", "path": "/spec/taints/0"}],
            lambda o: o["spec"]["taints"] == [],
            id="remove-taint",
        ),
        pytest.param(
            [{"op": "test", "path": "/metadata/name", "value": "n"}, {"op": "add", "path": "/spec/x", "value": 1}],
            lambda o: o["spec"]["x"] == 1,
            id="test-then-add",
        ),
    ],
)
def test_json_patch(operations: list[dict[str, Any]], check: Any) -> None:
    """RFC 6902 operations apply through the jsonpatch library on a copy."""
    original = copy.deepcopy(NODE)
    merged = apply_patch(original, orjson.dumps(operations), "application/json-patch+json", kind="Node")
    assert check(merged)
    assert original == NODE


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        pytest.param(b"{not json", "application/merge-patch+json", 400, id="merge-undecodable"),
        pytest.param(b"[1]", "application/merge-patch+json", 400, id="merge-not-object"),
        pytest.param(b'{"op":"add"}', "application/json-patch+json", 400, id="json-patch-not-array"),
        pytest.param(b'[{"op":"add","value":1}]', "application/json-patch+json", 400, id="json-patch-no-path"),
        pytest.param(
            b'[{"op":"test","path":"/metadata/name","value":"other"}]',
            "application/json-patch+json",
            422,
            id="json-patch-test-fails",
        ),
        pytest.param(b'[{"op":"remove","path":"/nope"}]', "application/json-patch+json", 422, id="remove-missing"),
        pytest.param(b'[{"op":"frobnicate","path":"/a"}]', "application/json-patch+json", 422, id="unknown-op"),
        pytest.param(b"[]", "application/strategic-merge-patch+json", 400, id="smp-not-object"),
        pytest.param(b"x: 1", "application/apply-patch+yaml", 415, id="server-side-apply"),
        pytest.param(b"{}", "application/json", 415, id="plain-json"),
    ],
)
def test_patch_errors_carry_http_codes(body: bytes, content_type: str, code: int) -> None:
    """Malformed bodies are 400, inapplicable patches 422, unsupported content types 415."""
    with pytest.raises(PatchError) as caught:
        apply_patch(NODE, body, content_type, kind="Node")
    assert caught.value.code == code
    assert isinstance(caught.value, ValueError)
    assert str(caught.value)
    if code == 415:
        assert isinstance(caught.value, UnsupportedPatchType)


def test_content_type_parameters_and_case_are_ignored() -> None:
    """`Application/Merge-Patch+JSON; charset=utf-8` is still a merge patch."""
    merged = apply_patch(
        NODE, b'{"spec":{"unschedulable":true}}', "Application/Merge-Patch+JSON; charset=utf-8", kind="Node"
    )
    assert merged["spec"]["unschedulable"] is True
