"""The dsctl.io/v1 DaemonSet CRD: current, structural, small enough to apply, apps/v1-shaped."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import pytest

from dsctl.daemonset.extensions import EXTENSION_FIELDS, ExtensionField
from tests.manifests.conftest import CRD_FILE, K8S_VERSION, MANIFESTS, load_yaml
from tests.manifests.crdschema import crd_schema, structural_problems

GENERATOR = MANIFESTS / "crd" / "generate.py"
# Client-side `kubectl apply` stores the object as JSON in an annotation of at most 256 KiB.
APPLY_ANNOTATION_LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def generate() -> ModuleType:
    """The generator script, imported as a module."""
    spec = importlib.util.spec_from_file_location("dsctl_crd_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    """The committed CRD."""
    return load_yaml(CRD_FILE)


def property_paths(schema: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Every field path a schema describes, arrays written as ``[]``."""
    for name, sub in schema.get("properties", {}).items():
        yield f"{prefix}.{name}"
        yield from property_paths(sub, f"{prefix}.{name}")
    if "items" in schema:
        yield from property_paths(schema["items"], f"{prefix}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from property_paths(schema["additionalProperties"], f"{prefix}{{}}")


def test_committed_crd_is_what_the_generator_writes() -> None:
    """Running generate.py --check passes: the YAML in git is the generator's output."""
    result = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr


def test_crd_schema_is_structural(crd: dict[str, Any]) -> None:
    """The schema follows every structural rule apiextensions.k8s.io/v1 enforces."""
    assert structural_problems(crd_schema(crd)) == []


def test_crd_fits_the_client_side_apply_annotation(crd: dict[str, Any]) -> None:
    """The CRD as compact JSON stays under 256 KiB, so plain `kubectl apply -k` can store it."""
    size = len(json.dumps(crd, separators=(",", ":")))
    assert size < APPLY_ANNOTATION_LIMIT * 0.9, f"{size} bytes"


def test_crd_names_and_subresources(crd: dict[str, Any]) -> None:
    """Group dsctl.io, kind DaemonSet, short name dds, one served storage version with /status."""
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "daemonsets.dsctl.io"
    assert (spec["group"], spec["scope"]) == ("dsctl.io", "Namespaced")
    names = spec["names"]
    assert (names["kind"], names["plural"], names["singular"]) == ("DaemonSet", "daemonsets", "daemonset")
    assert "dds" in names["shortNames"]
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}


def source_paths(schema: Mapping[str, Any], defs: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Field paths of a kubernetes-validate schema, following its ``$ref``s."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    for name, sub in schema.get("properties", {}).items():
        yield f"{prefix}.{name}"
        yield from source_paths(sub, defs, f"{prefix}.{name}")
    if "items" in schema:
        yield from source_paths(schema["items"], defs, f"{prefix}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from source_paths(schema["additionalProperties"], defs, f"{prefix}{{}}")


def test_crd_covers_every_apps_v1_field(crd: dict[str, Any], generate: ModuleType) -> None:
    """Every spec and status field of apps/v1 DaemonSet exists in the CRD schema; the only others are
    dsctl's rollout controls under rollingUpdate, its spec-level limits and readiness gate, and
        conditions[].lastUpdateTime."""
    defs = generate.load_definitions(K8S_VERSION)
    source = defs["io.k8s.api.apps.v1.DaemonSet"]["properties"]
    ours = crd_schema(crd)["properties"]
    controls = tuple(f".updateStrategy.rollingUpdate.{name}" for name in generate.rollout_controls(defs))
    extras = {"spec": (*controls, *(f".{name}" for name in (*generate.spec_limits(), *generate.readiness_gate()))),
              "status": tuple(f".conditions[].{name}" for name in generate.condition_extras())}
    for part in ("spec", "status"):
        paths = {p for p in property_paths(ours[part]) if not p.startswith(extras[part])}
        assert paths == set(source_paths(source[part], defs)), part
        assert {p for p in property_paths(ours[part]) if p.startswith(extras[part])} >= set(extras[part])
    assert ".template.metadata.labels" in set(property_paths(ours["spec"]))


def test_printer_columns_point_at_schema_fields(crd: dict[str, Any]) -> None:
    """Each printer column's JSONPath names a field the schema has, like apps/v1's columns."""
    [version] = crd["spec"]["versions"]
    paths = set(property_paths(crd_schema(crd)))
    columns = version["additionalPrinterColumns"]
    assert [c["name"] for c in columns if not c.get("priority")] == [
        "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age",
    ]
    for column in columns:
        path = column["jsonPath"].replace("[*]", "[]")
        assert path in paths or path == ".metadata.creationTimestamp", column["name"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("One. Two.", "One.", id="two-sentences"),
        pytest.param("Only one", "Only one", id="no-full-stop"),
        pytest.param("Use e.g. this. Next", "Use e.g. this.", id="abbreviation-kept"),
        pytest.param("Ends here.\n\nMore text.", "Ends here.", id="paragraphs"),
    ],
)
def test_first_sentence(generate: ModuleType, text: str, expected: str) -> None:
    """Descriptions are cut after the first sentence, not at every full stop."""
    assert generate.first_sentence(text) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param({"type": ["string", "null"]}, {"type": "string"}, id="nullable-type-collapsed"),
        pytest.param(
            {"$ref": "#/$defs/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
            {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            id="int-or-string",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            id="closed-object-opened-for-pruning",
        ),
        pytest.param(
            {"type": "object"},
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            id="free-form-object-preserved",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"},
            {"type": "array", "items": {"type": "string"}},
            id="patch-hints-dropped",
        ),
    ],
)
def test_structural_schema_conversion(
    generate: ModuleType, source: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Each source construct becomes the form apiextensions v1 accepts."""
    defs = {"io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"oneOf": [{"type": "string"}]}}
    assert generate.structural_schema(source, defs) == expected


@pytest.mark.parametrize(
    ("source", "defs"),
    [
        pytest.param({"type": "string", "oneOf": [{"type": "string"}]}, {}, id="unknown-oneOf"),
        pytest.param({"type": "string", "pattern": "x"}, {}, id="unknown-keyword"),
        pytest.param(
            {"$ref": "#/$defs/io.k8s.Loop"},
            {"io.k8s.Loop": {"type": "object", "properties": {"next": {"$ref": "#/$defs/io.k8s.Loop"}}}},
            id="recursive-ref",
        ),
        pytest.param(
            {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
             "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            {},
            id="optional-list-map-key-without-default",
        ),
    ],
)
def test_structural_schema_refuses(generate: ModuleType, source: dict[str, Any], defs: dict[str, Any]) -> None:
    """Constructs the converter cannot express raise instead of producing a CRD a cluster rejects."""
    with pytest.raises(ValueError):
        generate.structural_schema(source, defs)


def test_container_port_protocol_gets_its_builtin_default(crd: dict[str, Any]) -> None:
    """A list-map key the built-in API defaults (port protocol) carries that default in the CRD."""
    containers = crd_schema(crd)["properties"]["spec"]["properties"]["template"]["properties"]["spec"][
        "properties"
    ]["containers"]
    ports = containers["items"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["containerPort", "protocol"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"


@pytest.mark.parametrize(
    ("schema", "complaint"),
    [
        pytest.param({"properties": {"a": {"type": "string"}}}, "no type", id="missing-type"),
        pytest.param({"type": "object", "additionalProperties": False}, "must be a schema", id="closed-object"),
        pytest.param({"type": "string", "x-kubernetes-int-or-string": True}, "must not also", id="typed-intstr"),
        pytest.param({"type": "object", "$ref": "#/x"}, "does not have", id="ref"),
        pytest.param(
            {"type": "object", "properties": {"metadata": {"type": "object", "properties": {}}}},
            "bare object",
            id="root-metadata-schema",
        ),
        pytest.param(
            {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
             "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "neither required nor defaulted",
            id="optional-map-key",
        ),
    ],
)
def test_structural_checker_flags(schema: dict[str, Any], complaint: str) -> None:
    """The structural-rule checker itself catches each kind of violation it claims to."""
    problems = structural_problems(schema)
    assert any(complaint in p for p in problems), problems


@pytest.mark.parametrize("field", [pytest.param(f, id=f.name) for f in EXTENSION_FIELDS])
def test_every_extension_field_is_in_the_crd(crd: dict[str, Any], field: ExtensionField) -> None:
    """Each field of ``EXTENSION_FIELDS`` exists in the CRD schema at its ``crd_path``."""
    assert f".{field.crd_path}" in set(property_paths(crd_schema(crd)))
