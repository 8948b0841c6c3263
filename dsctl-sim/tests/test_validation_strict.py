"""Unknown-field detection and pruning, and the field table it relies on.

The table ``dsctl_api/fields.json`` is generated from the Kubernetes v1.36 OpenAPI
definitions shipped by the ``kubernetes-validate`` test dependency. To regenerate it after a
Kubernetes upgrade, run this file as a script: ``python dsctl-sim/tests/test_validation_strict.py``.
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

import pytest

import dsctl_api.strictfields
from dsctl_sim.validation import prune_unknown_fields, strict_decoding_message, unknown_fields

ROOTS = {
    "pods": "io.k8s.api.core.v1.Pod",
    "nodes": "io.k8s.api.core.v1.Node",
    "namespaces": "io.k8s.api.core.v1.Namespace",
    "events": "io.k8s.api.core.v1.Event",
    "events.k8s.io/events": "io.k8s.api.events.v1.Event",
    "apps/daemonsets": "io.k8s.api.apps.v1.DaemonSet",
    "apps/controllerrevisions": "io.k8s.api.apps.v1.ControllerRevision",
    "coordination.k8s.io/leases": "io.k8s.api.coordination.v1.Lease",
    "apiextensions.k8s.io/customresourcedefinitions":
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
}
_PREFIXES = (
    ("io.k8s.apimachinery.pkg.apis.meta.v1.", "meta."),
    ("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.", "apiext."),
    ("io.k8s.api.", ""),
)


def build_field_table() -> dict[str, Any]:
    """The field tree of every served built-in type, from kubernetes-validate's definitions."""
    source = importlib.resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema/v1.36.0-local/_definitions.json"
    )
    defs = json.loads(source.read_text())["$defs"]

    def short(name: str) -> str:
        for prefix, replacement in _PREFIXES:
            if name.startswith(prefix):
                return replacement + name[len(prefix):]
        return name

    pending: list[str] = []

    def ref(schema: dict[str, Any]) -> str | None:
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
        for combinator in ("allOf", "oneOf", "anyOf"):
            for option in schema.get(combinator, []):
                if "$ref" in option:
                    return str(option["$ref"]).rsplit("/", 1)[-1]
        return None

    def spec(schema: dict[str, Any]) -> Any:
        target = ref(schema)
        if target is not None:
            definition = defs[target]
            if definition.get("properties") and not definition.get("x-kubernetes-preserve-unknown-fields"):
                pending.append(target)
                return short(target)
            return 0
        if isinstance(schema.get("items"), dict):
            inner = spec(schema["items"])
            return [inner] if inner != 0 else 0
        if isinstance(schema.get("additionalProperties"), dict):
            inner = spec(schema["additionalProperties"])
            return {"*": inner} if inner != 0 else 0
        return 0

    types: dict[str, Any] = {}
    pending.extend(ROOTS.values())
    while pending:
        name = pending.pop()
        if short(name) in types:
            continue
        types[short(name)] = {}
        types[short(name)] = {field: spec(s) for field, s in defs[name]["properties"].items()}
    return {
        "source": "Kubernetes v1.36 OpenAPI (via kubernetes-validate)",
        "roots": {key: short(name) for key, name in ROOTS.items()},
        "types": dict(sorted(types.items())),
    }


def _table_path() -> Path:
    return Path(dsctl_api.strictfields.__file__).with_name("fields.json")


def test_field_table_matches_the_openapi_definitions() -> None:
    """The committed field table is exactly what the generator produces (no drift, no hand edits)."""
    committed = json.loads(_table_path().read_text())
    assert committed == build_field_table(), "regenerate with: python dsctl-sim/tests/test_validation_strict.py"


def _ds(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "labels": {"any-key": "ok"}, "annotations": {"free": "form"}},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {
                    "containers": [{"name": "a", "image": "i", "resources": {"limits": {"cpu": "1"}}, **extra}],
                    "nodeSelector": {"disk": "ssd"},
                    "volumes": [{"name": "v", "hostPath": {"path": "/"}}],
                },
            },
        },
        "status": {"numberReady": 1},
    }


def test_declared_fields_pass() -> None:
    """Maps, int-or-string, quantities and nested lists of structs are all accepted."""
    assert unknown_fields("apps/daemonsets", _ds()) == []


@pytest.mark.parametrize(
    ("key", "obj", "paths"),
    [
        pytest.param("apps/daemonsets", _ds(imagee="typo"), ["spec.template.spec.containers[0].imagee"],
                     id="container-typo"),
        pytest.param("apps/daemonsets", {"spec": {"templat": {}, "selector": {"matchLabel": {}}}},
                     ["spec.templat", "spec.selector.matchLabel"], id="two-typos"),
        pytest.param("pods", {"metadata": {"nam": "x"}, "spec": {}}, ["metadata.nam"], id="metadata"),
        pytest.param("nodes", {"spec": {"taints": [{"key": "k", "effct": "NoSchedule"}]}},
                     ["spec.taints[0].effct"], id="taint"),
        pytest.param("coordination.k8s.io/leases", {"spec": {"holder": "a"}}, ["spec.holder"], id="lease"),
    ],
)
def test_unknown_fields_are_reported_with_paths(key: str, obj: dict[str, Any], paths: list[str]) -> None:
    """Each undeclared field is reported with its full path, list indices included."""
    assert unknown_fields(key, obj) == paths
    assert strict_decoding_message(paths).startswith(f'strict decoding error: unknown field "{paths[0]}"')


def test_free_form_fields_and_custom_resources_are_open() -> None:
    """RawExtension data, CRD schemas and custom resources accept anything."""
    revision = {"data": {"spec": {"template": {"$patch": "replace", "anything": 1}}}, "revision": 1}
    assert unknown_fields("apps/controllerrevisions", revision) == []
    crd = {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"spec": {"type": "object", "default": {"x": 1}}}}}}]}}
    assert unknown_fields("apiextensions.k8s.io/customresourcedefinitions", crd) == []
    assert unknown_fields("example.com/widgets", {"spec": {"whatever": 1}}) == []


def test_prune_removes_only_unknown_fields() -> None:
    """Pruning (fieldValidation Ignore/Warn) drops undeclared fields and keeps the rest intact."""
    obj = _ds(imagee="typo")
    obj["spec"]["bogus"] = True
    assert prune_unknown_fields("apps/daemonsets", obj) == ["spec.template.spec.containers[0].imagee", "spec.bogus"]
    assert obj == _ds()


if __name__ == "__main__":
    _table_path().write_text(json.dumps(build_field_table(), separators=(",", ":")))
    print(f"wrote {_table_path()}")
