"""Strategic merge patch: list merge keys, directives and ordering, on the kinds the sim serves."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from dsctl_sim.patch import PatchError, apply_patch, strategic_merge

SMP = "application/strategic-merge-patch+json"


def _ds(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    template_spec = {"containers": containers, **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "x", "namespace": "default", "labels": {"app": "x"}},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": template_spec},
        },
    }


def _tspec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def _names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


APP = {"name": "app", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}]}
SIDE = {"name": "side", "image": "busybox"}


@pytest.mark.parametrize(
    ("containers", "patch", "expected"),
    [
        pytest.param(
            [APP, SIDE],
            {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            [{**APP, "image": "nginx:1.27"}, SIDE],
            id="merge-by-name-keeps-other-fields-and-items",
        ),
        pytest.param(
            [APP],
            {"containers": [{"name": "new", "image": "redis"}]},
            [{"name": "new", "image": "redis"}, APP],
            id="new-item-goes-before-server-only-items",
        ),
        pytest.param(
            [APP, SIDE],
            {"containers": [{"name": "side", "$patch": "delete"}]},
            [APP],
            id="delete-directive-removes-item",
        ),
        pytest.param(
            [APP, SIDE],
            {"containers": [{"$patch": "replace"}, {"name": "only", "image": "a"}]},
            [{"name": "only", "image": "a"}],
            id="replace-directive-replaces-list",
        ),
        pytest.param(
            [APP],
            {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]},
            [{**APP, "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}],
            id="nested-env-merges-by-name",
        ),
        pytest.param(
            [APP],
            {"containers": [{"name": "app", "env": [{"name": "A", "value": None}]}]},
            [{**APP, "env": [{"name": "A"}]}],
            id="null-inside-merged-item-deletes-field",
        ),
        pytest.param(
            [{"name": "app", "image": "a", "command": ["a", "b"]}],
            {"containers": [{"name": "app", "command": ["c"]}]},
            [{"name": "app", "image": "a", "command": ["c"]}],
            id="command-is-atomic",
        ),
        pytest.param(
            [{"name": "app", "image": "a", "ports": [{"containerPort": 80, "name": "http"}]}],
            {"containers": [{"name": "app", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]},
            [{"name": "app", "image": "a", "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}]}],
            id="ports-merge-by-containerPort",
        ),
        pytest.param(
            [{"name": "app", "image": "a", "volumeMounts": [{"name": "v", "mountPath": "/a"}]}],
            {"containers": [{"name": "app", "volumeMounts": [{"name": "w", "mountPath": "/a"}]}]},
            [{"name": "app", "image": "a", "volumeMounts": [{"name": "w", "mountPath": "/a"}]}],
            id="volumeMounts-merge-by-mountPath",
        ),
    ],
)
def test_container_list_merges(
    containers: list[dict[str, Any]], patch: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    """Containers merge by name, nested env by name, ports by containerPort, mounts by mountPath."""
    original = _ds(copy.deepcopy(containers))
    merged = strategic_merge(original, {"spec": {"template": {"spec": patch}}}, kind="DaemonSet")
    assert _tspec(merged)["containers"] == expected


@pytest.mark.parametrize(
    ("field", "before", "patch", "expected"),
    [
        pytest.param(
            "tolerations",
            [{"key": "a", "operator": "Exists"}],
            [{"key": "b", "operator": "Exists"}],
            [{"key": "b", "operator": "Exists"}],
            id="tolerations-atomic",
        ),
        pytest.param(
            "volumes",
            [{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
            [{"name": "b", "hostPath": {"path": "/x"}, "$retainKeys": ["hostPath", "name"]}],
            [{"name": "a", "emptyDir": {}}, {"name": "b", "hostPath": {"path": "/x"}}],
            id="volumes-merge-with-retainKeys-dropping-old-source",
        ),
        pytest.param(
            "imagePullSecrets",
            [{"name": "a"}],
            [{"name": "b"}],
            [{"name": "b"}, {"name": "a"}],
            id="imagePullSecrets-merge-by-name",
        ),
        pytest.param(
            "hostAliases",
            [{"ip": "1.1.1.1", "hostnames": ["a"]}],
            [{"ip": "1.1.1.1", "hostnames": ["b"]}],
            [{"ip": "1.1.1.1", "hostnames": ["b"]}],
            id="hostAliases-merge-by-ip-hostnames-atomic",
        ),
    ],
)
def test_pod_spec_list_fields(field: str, before: list[Any], patch: list[Any], expected: list[Any]) -> None:
    """Pod spec lists follow the real Go tags: tolerations atomic, volumes/secrets/aliases keyed."""
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [SIDE], field: before}}
    merged = strategic_merge(pod, {"spec": {field: patch}}, kind="Pod")
    assert merged["spec"][field] == expected


def test_node_taints_are_atomic_and_pod_cidrs_merge_as_set() -> None:
    """Node taints are replaced wholesale; podCIDRs merge as a set of scalars."""
    node = {
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDRs": ["10.0.0.0/24"]},
    }
    patch = {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "podCIDRs": ["10.0.1.0/24", "10.0.0.0/24"]}}
    merged = strategic_merge(node, patch, kind="Node")
    assert merged["spec"]["taints"] == [{"key": "b", "effect": "NoExecute"}]
    assert merged["spec"]["podCIDRs"] == ["10.0.1.0/24", "10.0.0.0/24"]


@pytest.mark.parametrize(
    ("before", "patch", "expected"),
    [
        pytest.param(
            {"finalizers": ["a", "b"]},
            {"finalizers": ["c", "a"]},
            {"finalizers": ["c", "a", "b"]},
            id="finalizers-union-in-patch-order-server-only-interleaved",
        ),
        pytest.param(
            {"finalizers": ["a", "b", "c"]},
            {"$deleteFromPrimitiveList/finalizers": ["b"]},
            {"finalizers": ["a", "c"]},
            id="deleteFromPrimitiveList",
        ),
        pytest.param(
            {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]},
            {"ownerReferences": [{"uid": "2", "$patch": "delete"}]},
            {"ownerReferences": [{"uid": "1", "name": "a"}]},
            id="ownerReferences-delete-by-uid",
        ),
        pytest.param(
            {"labels": {"a": "1", "b": "2"}},
            {"labels": {"a": None, "c": "3"}},
            {"labels": {"b": "2", "c": "3"}},
            id="labels-null-deletes",
        ),
    ],
)
def test_object_meta_merges(before: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]) -> None:
    """ObjectMeta rules hold for every kind, custom resources included."""
    for kind in ("Pod", "Lease", "Widget"):
        merged = strategic_merge({"metadata": {"name": "o", **before}}, {"metadata": patch}, kind=kind)
        assert merged["metadata"] == {"name": "o", **expected}, kind


@pytest.mark.parametrize(
    ("live", "patch", "expected"),
    [
        pytest.param(
            ["b", "c", "a"],
            {"env": [{"name": "a", "value": "A'"}, {"name": "b", "value": "B'"}, {"name": "d"}]},
            ["c", "a", "b", "d"],
            id="no-order-directive-patch-order-wins",
        ),
        pytest.param(
            ["b", "a"],
            {"$setElementOrder/env": [{"name": "a"}, {"name": "b"}]},
            ["a", "b"],
            id="order-only-reorders",
        ),
        pytest.param(
            ["c", "b", "d", "a", "e"],
            {"$setElementOrder/env": [{"name": "a"}, {"name": "b"}], "env": [{"name": "a"}, {"name": "b"}]},
            ["c", "d", "a", "b", "e"],
            id="server-only-items-interleave-by-old-position",
        ),
        pytest.param(
            ["a", "b"],
            {"$setElementOrder/env": [{"name": "c"}, {"name": "a"}, {"name": "b"}], "env": [{"name": "a"}]},
            ["a", "b"],
            id="unknown-order-entries-ignored",
        ),
        pytest.param(
            ["e1", "e2", "e3"],
            {
                "$setElementOrder/env": [{"name": "e1"}, {"name": "e2"}, {"name": "e6"}],
                "env": [{"name": "e3", "$patch": "delete"}, {"name": "e6", "value": "new"}],
            },
            ["e1", "e2", "e6"],
            id="kubectl-apply-delete-and-add",
        ),
    ],
)
def test_set_element_order(live: list[str], patch: dict[str, Any], expected: list[str]) -> None:
    """$setElementOrder fixes the order of patched items; server-only items keep their slots."""
    container = {"name": "app", "image": "a", "env": [{"name": n, "value": n} for n in live]}
    merged = strategic_merge(
        _ds([container]),
        {"spec": {"template": {"spec": {"containers": [{"name": "app", **patch}]}}}},
        kind="DaemonSet",
    )
    assert _names(_tspec(merged)["containers"][0]["env"]) == expected


def test_set_element_order_on_primitive_list() -> None:
    """$setElementOrder on finalizers with $deleteFromPrimitiveList, the upstream doc example."""
    original = {"metadata": {"name": "o", "finalizers": ["b", "e", "a", "c", "d"]}}
    patch = {
        "metadata": {
            "$setElementOrder/finalizers": ["a", "b", "f"],
            "$deleteFromPrimitiveList/finalizers": ["c"],
            "finalizers": ["f"],
        }
    }
    merged = strategic_merge(original, patch, kind="Pod")
    # The design doc sketches e,d,a,b,f; the real best-effort interleave keeps d after f
    # because d sat after every ordered item on the server.
    assert merged["metadata"]["finalizers"] == ["e", "a", "b", "f", "d"]


def test_map_replace_directive_replaces_template() -> None:
    """`$patch: replace` on the template (kubectl rollout undo) drops fields absent in the patch."""
    original = _ds([APP, SIDE], nodeSelector={"disk": "ssd"}, dnsPolicy="ClusterFirst")
    original["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "t"}
    old_template = {
        "metadata": {"labels": {"app": "x"}, "creationTimestamp": None},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.24"}], "dnsPolicy": "ClusterFirst"},
    }
    merged = strategic_merge(original, {"spec": {"template": {**old_template, "$patch": "replace"}}}, kind="DaemonSet")
    assert merged["spec"]["template"] == {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.24"}], "dnsPolicy": "ClusterFirst"},
    }
    assert merged["spec"]["selector"] == original["spec"]["selector"]


def test_map_delete_directive_empties_map_and_absent_delete_is_dropped() -> None:
    """`$patch: delete` on a map leaves it empty; on an absent key nothing is stored."""
    original = {"metadata": {"name": "o", "labels": {"a": "1"}}}
    patch = {"metadata": {"labels": {"$patch": "delete"}, "annotations": {"$patch": "delete"}}}
    merged = strategic_merge(original, patch, kind="Pod")
    assert merged["metadata"] == {"name": "o", "labels": {}}


def test_new_values_are_stripped_of_nulls_and_directives() -> None:
    """A subtree with no original counterpart keeps no nulls, deletes or order directives."""
    original = {"metadata": {"name": "p"}, "spec": {}}
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "a", "image": "i", "env": [{"name": "x", "$patch": "delete"}], "args": None}],
            "affinity": {"nodeAffinity": None},
        }
    }
    merged = strategic_merge(original, patch, kind="Pod")
    assert merged["spec"] == {"containers": [{"name": "a", "image": "i", "env": []}], "affinity": {}}


def test_original_and_patch_are_not_mutated_and_result_shares_nothing() -> None:
    """The result is a fresh tree: editing it touches neither input."""
    original = _ds([APP])
    snapshot = copy.deepcopy(original)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "b"}]}}}}
    patch_snapshot = copy.deepcopy(patch)
    merged = strategic_merge(original, patch, kind="DaemonSet")
    merged["metadata"]["labels"]["mutated"] = "yes"
    merged["spec"]["selector"]["matchLabels"]["z"] = "z"
    assert original == snapshot
    assert patch == patch_snapshot


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        pytest.param({"spec": {"containers": [{"image": "no-name"}]}}, 422, id="missing-merge-key"),
        pytest.param({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, 422, id="merge-directive-in-list"),
        pytest.param({"spec": {"$patch": "explode"}}, 422, id="unknown-map-directive"),
        pytest.param({"spec": {"$setElementOrder/containers": {"name": "a"}}}, 400, id="order-not-a-list"),
        pytest.param(
            {"spec": {"$setElementOrder/containers": [{"name": "b"}], "containers": [{"name": "a"}]}},
            400,
            id="patch-item-missing-from-order",
        ),
        pytest.param({"spec": {"$deleteFromPrimitiveList/x": "a"}}, 400, id="delete-list-not-a-list"),
        pytest.param({"spec": {"$retainKeys": ["containers"], "nodeName": "n"}}, 422, id="retainKeys-violated"),
    ],
)
def test_bad_patches_raise_patch_error(patch: dict[str, Any], code: int) -> None:
    """Malformed directives are 400, inapplicable patches 422, never a crash."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "i"}]}}
    with pytest.raises(PatchError) as caught:
        apply_patch(pod, orjson.dumps(patch), SMP, kind="Pod")
    assert caught.value.code == code


def test_unknown_kind_lists_are_atomic() -> None:
    """Custom resources (unknown kinds) merge maps but replace lists, like a JSON merge patch."""
    original = {"metadata": {"name": "w"}, "spec": {"items": [{"name": "a"}], "size": 1}}
    merged = strategic_merge(original, {"spec": {"items": [{"name": "b"}]}}, kind="Widget")
    assert merged["spec"] == {"items": [{"name": "b"}], "size": 1}
