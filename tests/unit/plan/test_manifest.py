"""Reading the manifest: one DaemonSet, checked as the API server would before any plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsctl.plan.crdschema import apply_defaults, served_schema, unknown_fields
from dsctl.plan.manifest import ManifestError, load_manifest, parse_manifest
from tests.support.builders import daemonset

PORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }},
    },
}


def _with(**spec_extra: Any) -> dict[str, Any]:
    ds = daemonset("agent")
    ds["spec"].update(spec_extra)
    return ds


@pytest.mark.parametrize(
    ("doc", "namespace", "message"),
    [
        pytest.param([1, 2], None, "is not an object", id="not-an-object"),
        pytest.param({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}, None,
                     "Deployment (apps/v1) is not a DaemonSet", id="a-deployment"),
        pytest.param({"apiVersion": "extensions/v1beta1", "kind": "DaemonSet"}, None,
                     "DaemonSet (extensions/v1beta1) is not a DaemonSet", id="an-old-group"),
        pytest.param(_with(templat={}), None, 'strict decoding error: unknown field "spec.templat"',
                     id="unknown-spec-field"),
        pytest.param({**daemonset("agent"), "metadata": {"nam": "agent"}}, None,
                     'unknown field "metadata.nam"', id="unknown-metadata-field"),
        pytest.param({**daemonset("agent"), "metadata": {}}, None, "metadata.name: Required value", id="no-name"),
        pytest.param(daemonset("agent", namespace="a"), "b", 'namespace from the provided object "a" does not match',
                     id="namespace-contradicts-the-flag"),
    ],
)
def test_bad_manifests_are_refused_in_one_line(doc: Any, namespace: str | None, message: str) -> None:
    """What the API would refuse is refused before the cluster is read, naming the file."""
    with pytest.raises(ManifestError) as caught:
        parse_manifest(doc, source="ds.yaml", namespace=namespace)
    assert message in str(caught.value)
    assert str(caught.value).startswith("ds.yaml: ")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a: [1,\n", "not YAML or JSON (line", id="broken-yaml"),
        pytest.param("---\nkind: DaemonSet\n---\nkind: DaemonSet\n", "holds 2 documents", id="two-documents"),
        pytest.param("", "holds 0 documents", id="empty"),
    ],
)
def test_files_hold_exactly_one_document(tmp_path: Path, text: str, message: str) -> None:
    """A file with no document, two, or broken YAML is refused with where it broke."""
    path = tmp_path / "ds.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError, match=message.replace("(", r"\(")):
        load_manifest(str(path), namespace=None)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    """An unreadable file names itself and the reason."""
    with pytest.raises(ManifestError, match="cannot read it: No such file"):
        load_manifest(str(tmp_path / "nope.yaml"), namespace=None)


@pytest.mark.parametrize(
    ("file_ns", "flag", "context", "expected"),
    [
        pytest.param("a", None, "c", "a", id="the-files"),
        pytest.param(None, "b", "c", "b", id="the-flag"),
        pytest.param(None, None, "c", "c", id="the-contexts"),
        pytest.param(None, None, "", "default", id="default"),
    ],
)
def test_namespace_is_chosen_as_kubectl_chooses_it(tmp_path: Path, file_ns: str | None, flag: str | None,
                                                   context: str, expected: str) -> None:
    """The file's namespace, else --namespace, else the context's, else default."""
    import yaml

    doc = daemonset("agent")
    if file_ns:
        doc["metadata"]["namespace"] = file_ns
    else:
        doc["metadata"].pop("namespace")
    path = tmp_path / "ds.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_manifest(str(path), namespace=flag, context_namespace=context).namespace == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"spec": {"ports": [{"containerPort": 1, "proto": "x"}]}}, ["spec.ports[0].proto"],
                     id="list-item-field"),
        pytest.param({"spec": {"labels": {"a": "b"}}}, [], id="map-values-are-free-keys"),
        pytest.param({"spec": {"free": {"anything": {"at": "all"}}}}, [], id="preserve-unknown-fields"),
        pytest.param({"spec": {"extra": 1}, "status": {}}, ["spec.extra", "status"], id="in-document-order"),
    ],
)
def test_custom_resource_fields_are_judged_by_the_served_schema(value: dict[str, Any], expected: list[str]) -> None:
    """Unknown fields of a custom resource are those its structural schema does not specify."""
    assert unknown_fields(PORT_SCHEMA, value) == expected


def test_custom_resource_defaults_come_from_the_schema() -> None:
    """Absent properties with a default are filled at every depth, present ones kept."""
    value: dict[str, Any] = {"spec": {"ports": [{"containerPort": 1}, {"containerPort": 2, "protocol": "UDP"}]}}
    apply_defaults(PORT_SCHEMA, value)
    assert value["spec"]["ports"] == [{"containerPort": 1, "protocol": "TCP"}, {"containerPort": 2, "protocol": "UDP"}]


def test_served_schema_is_the_versions() -> None:
    """The schema of the named version of a CRD."""
    crd = {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": PORT_SCHEMA}}]}}
    assert served_schema(crd, "v1") == PORT_SCHEMA
    assert served_schema(crd, "v2") is None


def test_custom_manifest_checks_against_the_crd(tmp_path: Path) -> None:
    """dsctl.io/v1: metadata by ObjectMeta's fields, the rest by the CRD's schema."""
    doc = daemonset("agent", api_version="dsctl.io/v1")
    manifest = parse_manifest(doc, source="ds.yaml", namespace=None)
    top: dict[str, Any] = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "metadata": {"type": "object"}}
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    manifest.check_custom_fields({"type": "object", "properties": {**top, "spec": loose}})
    narrow = {"type": "object", "properties": {"template": loose}}
    with pytest.raises(ManifestError, match=r'unknown field "spec\.selector"'):
        manifest.check_custom_fields({"type": "object", "properties": {**top, "spec": narrow}})
