"""The daemon pod body: metadata, labels, ownerReference, tolerations and node placement."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl.daemonset.template import (
    GENERATION_ANNOTATION,
    GENERATION_LABEL,
    HASH_LABEL,
    TemplateError,
    copy_json,
    is_pod_updated,
    new_pod,
    pod_factory,
    pods_prefix,
    target_node,
    template_generation,
)

from .objects import SIMPLE, make_ds

PIN = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}


def _required(pod: dict[str, Any]) -> Any:
    return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]


def test_new_pod_metadata() -> None:
    """generateName, namespace, template labels plus hash, annotations, finalizers and owner are set."""
    ds = make_ds()
    ds["spec"]["template"]["metadata"]["annotations"] = {"a": "1"}
    ds["spec"]["template"]["metadata"]["finalizers"] = ["example.com/f"]
    pod = new_pod(ds, "node-1", hash="abc")
    meta = pod["metadata"]
    assert meta["generateName"] == "foo-"
    assert meta["namespace"] == "default"
    assert meta["labels"] == {**SIMPLE, HASH_LABEL: "abc"}
    assert meta["annotations"] == {"a": "1"}
    assert meta["finalizers"] == ["example.com/f"]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "foo",
            "uid": "ds-uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert "name" not in meta


@pytest.mark.parametrize(
    ("ds_fields", "overrides", "expected"),
    [
        pytest.param({}, {}, ("apps/v1", "DaemonSet"), id="from-object"),
        pytest.param(
            {"apiVersion": "dsctl.io/v1", "kind": "DaemonSet"},
            {},
            ("dsctl.io/v1", "DaemonSet"),
            id="crd-object",
        ),
        pytest.param({"apiVersion": None, "kind": None}, {}, ("apps/v1", "DaemonSet"), id="list-item-default"),
        pytest.param(
            {"apiVersion": None, "kind": None},
            {"api_version": "dsctl.io/v1", "kind": "DaemonSet"},
            ("dsctl.io/v1", "DaemonSet"),
            id="explicit-override",
        ),
    ],
)
def test_owner_reference_type(ds_fields: dict[str, Any], overrides: dict[str, str], expected: tuple[str, str]) -> None:
    """The ownerReference names the DaemonSet's own apiVersion/kind, so CRD mode owns its pods."""
    ds = make_ds()
    for key, value in ds_fields.items():
        if value is None:
            ds.pop(key)
        else:
            ds[key] = value
    pod = new_pod(ds, "n", hash="h", api_version=overrides.get("api_version"), kind=overrides.get("kind"))
    ref = pod["metadata"]["ownerReferences"][0]
    assert (ref["apiVersion"], ref["kind"]) == expected


@pytest.mark.parametrize(
    ("annotation", "label"),
    [
        pytest.param("7", "7", id="numeric"),
        pytest.param(None, None, id="absent"),
        pytest.param("seven", None, id="unparseable"),
    ],
)
def test_template_generation_label(annotation: str | None, label: str | None) -> None:
    """pod-template-generation is copied from the DS annotation only when it parses."""
    ds = make_ds(annotations={GENERATION_ANNOTATION: annotation} if annotation else None)
    assert new_pod(ds, "n", hash="h")["metadata"]["labels"].get(GENERATION_LABEL) == label


def test_empty_hash_adds_no_label() -> None:
    """No hash, no controller-revision-hash label."""
    assert HASH_LABEL not in new_pod(make_ds(), "n", hash="")["metadata"]["labels"]


@pytest.mark.parametrize(
    ("affinity", "preferred"),
    [
        pytest.param(None, None, id="no-affinity"),
        pytest.param(
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
                        ]
                    }
                }
            },
            None,
            id="required-terms-replaced",
        ),
        pytest.param(
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 1,
                            "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                        }
                    ]
                },
                "podAntiAffinity": {"x": 1},
            },
            [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}],
            id="preferred-kept",
        ),
    ],
)
def test_placement_by_affinity(affinity: dict[str, Any] | None, preferred: Any) -> None:
    """Required node terms become exactly metadata.name In [node]; preferred terms survive; no nodeName."""
    ds = make_ds(pod_spec={"nodeName": "", **({"affinity": affinity} if affinity else {})})
    pod = new_pod(ds, "node-1", hash="h")
    assert _required(pod)["nodeSelectorTerms"] == [PIN]
    assert pod["spec"]["affinity"]["nodeAffinity"].get("preferredDuringSchedulingIgnoredDuringExecution") == preferred
    assert "nodeName" not in pod["spec"]
    if affinity and "podAntiAffinity" in affinity:
        assert pod["spec"]["affinity"]["podAntiAffinity"] == {"x": 1}


@pytest.mark.parametrize("direct_binding", [pytest.param(False, id="scheduler"), pytest.param(True, id="direct")])
def test_template_node_name_is_kept(direct_binding: bool) -> None:
    """A template nodeName (eligibility lets only the named node through) stays on the pod, as upstream keeps it."""
    pod = new_pod(make_ds(pod_spec={"nodeName": "node-1", "schedulerName": "custom"}), "node-1", hash="h",
                  direct_binding=direct_binding)
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["spec"]["schedulerName"] == "custom"
    assert _required(pod)["nodeSelectorTerms"] == [PIN]


def test_direct_binding_sets_node_name() -> None:
    """Direct binding binds the pod itself and keeps the affinity pin."""
    pod = new_pod(make_ds(), "node-1", hash="h", direct_binding=True)
    assert pod["spec"]["nodeName"] == "node-1"
    assert _required(pod)["nodeSelectorTerms"] == [PIN]


def test_tolerations_added() -> None:
    """The pod carries the daemon tolerations on top of the template's."""
    ds = make_ds(pod_spec={"tolerations": [{"key": "k", "operator": "Exists"}]})
    tolerations = new_pod(ds, "n", hash="h")["spec"]["tolerations"]
    assert tolerations[0] == {"key": "k", "operator": "Exists"}
    assert len(tolerations) == 7


def test_the_readiness_toleration_is_added_at_creation_and_not_hashed() -> None:
    """The controller's extra toleration is on the pod, not in the template, so the revision hash is the same."""
    ds = make_ds()
    extra = ({"key": "dsctl.io/agents-not-ready", "operator": "Exists", "effect": "NoSchedule"},)
    pod = new_pod(ds, "n", hash="h", extra_tolerations=extra)
    assert pod["spec"]["tolerations"][-1] == extra[0] and len(pod["spec"]["tolerations"]) == 7
    assert pod_factory(ds, hash="h", extra_tolerations=extra)("n") == pod
    assert ds == make_ds(), "the template (the revision hash's only input) is left as it was"


def test_new_pod_shares_nothing_with_ds() -> None:
    """Mutating the created pod never changes the (shared, cached) DaemonSet."""
    ds = make_ds(
        pod_spec={
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
            "tolerations": [{"key": "k", "operator": "Exists"}],
        }
    )
    before = copy.deepcopy(ds)
    pod = new_pod(ds, "n", hash="h")
    pod["spec"]["containers"][0]["image"] = "changed"
    pod["spec"]["tolerations"].clear()
    pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].append(1)
    pod["metadata"]["labels"]["x"] = "y"
    assert ds == before


def test_no_labels_is_an_error() -> None:
    """A template without labels cannot yield a selectable pod."""
    with pytest.raises(TemplateError):
        new_pod(make_ds(labels={}), "n", hash="h")


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        pytest.param("foo", "foo-", id="normal"),
        pytest.param("x" * 253, "x" * 253, id="too-long-for-dash"),
    ],
)
def test_pods_prefix(name: str, prefix: str) -> None:
    """generateName is '<ds>-' unless that would exceed the name limit."""
    assert pods_prefix(name) == prefix


def _pin(values: Any, *, key: str = "metadata.name", operator: str = "In") -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                        {"matchFields": [{"key": key, "operator": operator, "values": values}]},
                    ]
                }
            }
        }
    }


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param({"spec": {"nodeName": "n1", **_pin(["n2"])}}, "n1", id="bound-wins"),
        pytest.param({"spec": _pin(["n2"])}, "n2", id="affinity-pin"),
        pytest.param({"spec": _pin(["n2", "n3"])}, None, id="several-values"),
        pytest.param({"spec": _pin([])}, None, id="no-values"),
        pytest.param({"spec": _pin(["n2"], operator="NotIn")}, None, id="notin-is-not-a-pin"),
        pytest.param({"spec": _pin(["n2"], key="spec.other")}, None, id="other-field"),
        pytest.param({"spec": {}}, None, id="nothing"),
        pytest.param({"spec": {"affinity": "x"}}, None, id="malformed-affinity"),
        pytest.param({}, None, id="no-spec"),
    ],
)
def test_target_node(pod: dict[str, Any], expected: str | None) -> None:
    """A pod's node is its nodeName, else its single metadata.name In value."""
    assert target_node(pod) == expected


def test_target_node_round_trips_new_pod() -> None:
    """target_node reads back the node new_pod pinned, bound or not."""
    assert target_node(new_pod(make_ds(), "node-9", hash="h")) == "node-9"
    assert target_node(new_pod(make_ds(), "node-9", hash="h", direct_binding=True)) == "node-9"


@pytest.mark.parametrize(
    ("labels", "hash", "generation", "expected"),
    [
        pytest.param({HASH_LABEL: "h"}, "h", None, True, id="hash-match"),
        pytest.param({HASH_LABEL: "old"}, "h", None, False, id="hash-differs"),
        pytest.param({HASH_LABEL: ""}, "", None, False, id="empty-hash-never-matches"),
        pytest.param({GENERATION_LABEL: "3"}, "h", 3, True, id="generation-match"),
        pytest.param({GENERATION_LABEL: "2"}, "h", 3, False, id="generation-differs"),
        pytest.param({GENERATION_LABEL: "3"}, "h", None, False, id="no-generation"),
    ],
)
def test_is_pod_updated(labels: dict[str, str], hash: str, generation: int | None, expected: bool) -> None:
    """A pod is updated when its hash, or its template generation, is current."""
    assert is_pod_updated({"metadata": {"labels": labels}}, hash, generation) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("4", 4, id="string"),
        pytest.param(4, 4, id="int"),
        pytest.param("x", None, id="garbage"),
        pytest.param(True, None, id="bool"),
    ],
)
def test_template_generation(value: Any, expected: int | None) -> None:
    """The generation annotation parses to an int or None."""
    assert template_generation({"metadata": {"annotations": {GENERATION_ANNOTATION: value}}}) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="none"),
        pytest.param("text", id="str"),
        pytest.param(3, id="int"),
        pytest.param(1.5, id="float"),
        pytest.param(True, id="bool"),
        pytest.param({"a": {"b": [1, {"c": "d"}]}, "e": None}, id="nested"),
        pytest.param([[], {}, [{"x": [True]}]], id="lists"),
        pytest.param({"t": ({"inner": 1},)}, id="tuple-falls-back-to-deepcopy"),
    ],
)
def test_copy_json_is_an_independent_deep_copy(value: Any) -> None:
    """An equal value that shares no dict or list with the original."""
    copied = copy_json(value)
    assert copied == value
    assert type(copied) is type(value)

    def containers(obj: Any) -> list[int]:
        """ids of every dict and list inside ``obj`` (tuples are looked into, not counted)."""
        children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        own = [id(obj)] if isinstance(obj, (dict, list)) else []
        return own + [i for child in children for i in containers(child)]

    assert not set(containers(copied)) & set(containers(value))


def _factory_cases() -> list[Any]:
    plain = make_ds()
    decorated = make_ds()
    decorated["metadata"]["annotations"] = {GENERATION_ANNOTATION: "4"}
    decorated["spec"]["template"]["metadata"]["annotations"] = {"a": "1"}
    decorated["spec"]["template"]["metadata"]["finalizers"] = ["example.com/f"]
    decorated["spec"]["template"]["spec"]["hostNetwork"] = True
    decorated["spec"]["template"]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    decorated["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": []}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
        },
        "podAntiAffinity": {"x": 1},
    }
    named = make_ds()
    named["spec"]["template"]["spec"]["nodeName"] = "node-1"
    return [
        pytest.param(plain, {"hash": "abc"}, id="plain"),
        pytest.param(plain, {"hash": ""}, id="no-hash"),
        pytest.param(plain, {"hash": "abc", "direct_binding": True}, id="direct-binding"),
        pytest.param(plain, {"hash": "abc", "api_version": "dsctl.io/v1alpha1", "kind": "DaemonSet"}, id="crd-owner"),
        pytest.param(decorated, {"hash": "abc"}, id="annotations-finalizers-affinity-host-network"),
        pytest.param(named, {"hash": "abc"}, id="template-node-name"),
    ]


@pytest.mark.parametrize(("ds", "options"), _factory_cases())
def test_pod_factory_makes_what_new_pod_makes(ds: dict[str, Any], options: dict[str, Any]) -> None:
    """Pod for pod, the factory's pods equal new_pod's and share nothing with each other or the DS."""
    before = copy.deepcopy(ds)
    make = pod_factory(ds, **options)
    first, second = make("node-1"), make("node-2")
    assert first == new_pod(ds, "node-1", **options)
    assert second == new_pod(ds, "node-2", **options)
    first["metadata"]["labels"]["mutated"] = "yes"
    first["spec"]["containers"][0]["image"] = "changed"
    first["spec"]["tolerations"].append({"key": "mutated"})
    assert make("node-1") == new_pod(ds, "node-1", **options)
    assert ds == before


def test_pod_factory_refuses_a_template_without_labels_at_once() -> None:
    """The TemplateError comes from building the factory, before any pod."""
    ds = make_ds()
    ds["spec"]["template"]["metadata"]["labels"] = {}
    with pytest.raises(TemplateError):
        pod_factory(ds, hash="abc")
