"""Bodies encoded once and spliced per value: the splice must equal building the object anew."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsctl.daemonset.template import new_pod, pod_factory
from dsctl.kube.encoded import Encoded, JsonTemplate
from tests.unit.daemonset.objects import make_ds

AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}

TEMPLATES: list[tuple[str, dict[str, Any], bool]] = [
    ("plain", {}, False),
    ("direct binding", {}, True),
    ("template nodeName", {"nodeName": "node-7"}, False),
    ("own affinity and tolerations", {"affinity": AFFINITY,
                                      "tolerations": [{"key": "k", "operator": "Exists"}]}, False),
    ("host network", {"hostNetwork": True}, True),
]
NAMES = ["node-7", "n", "ip-10-0-0-1.ec2.internal", 'odd"name\\with/escapes', "ünïcode-✓", "node-7node-7"]


@pytest.mark.parametrize(("label", "pod_spec", "direct"), TEMPLATES, ids=[t[0] for t in TEMPLATES])
@pytest.mark.parametrize("node", NAMES)
def test_a_spliced_pod_equals_the_pod_built_for_its_node(label: str, pod_spec: dict[str, Any], direct: bool,
                                                          node: str) -> None:
    ds = make_ds(pod_spec=pod_spec)
    make = pod_factory(ds, hash="h1", direct_binding=direct)
    template = JsonTemplate.of(make, probe="node-0")
    assert template is not None, label
    assert orjson.loads(template.fill(node).raw) == new_pod(ds, node, hash="h1", direct_binding=direct)


@given(st.text(min_size=1, max_size=40))
def test_any_string_splices_as_json_escapes_it(value: str) -> None:
    def build(hole: str) -> Mapping[str, Any]:
        return {"a": hole, "b": [f"pre-{hole}-post", {"c": hole}], "n": 1}
    template = JsonTemplate.of(build, probe="p")
    assert template is not None
    assert orjson.loads(template.fill(value).raw) == build(value)


def _branches(hole: str) -> Mapping[str, Any]:
    return {"x": hole if hole.startswith("dsctl-") else "other"}


CANNOT_SPLICE: list[tuple[str, Callable[[str], Mapping[str, Any]]]] = [
    ("the value is never used", lambda hole: {"x": "constant"}),
    ("the value is transformed", lambda hole: {"x": hole.upper()}),
    ("the shape depends on the value", _branches),
    ("the value is a key's length", lambda hole: {"x": len(hole)}),
]


@pytest.mark.parametrize(("label", "build"), CANNOT_SPLICE, ids=[c[0] for c in CANNOT_SPLICE])
def test_a_build_that_does_not_splice_gets_no_template(label: str, build: Callable[[str], Mapping[str, Any]]) -> None:
    assert JsonTemplate.of(build, probe="node-0") is None, label


def test_an_encoded_body_reads_as_its_decoded_object_and_keeps_its_bytes() -> None:
    raw = b'{"metadata": {"name": "a"}, "spec": {"x": [1, 2]}}'
    body = Encoded(raw)
    assert body.raw == raw
    assert dict(body) == orjson.loads(raw)
    assert body["metadata"] == {"name": "a"}
    assert len(body) == 2 and "spec" in body and body.get("status") is None


def test_an_encoded_body_that_is_not_an_object_is_refused_when_read() -> None:
    with pytest.raises(TypeError):
        Encoded(b"[1, 2]")["x"]
