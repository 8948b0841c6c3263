"""Fixtures for the manifest tests: the repository's paths, kubectl, and kustomize builds.

The build runs the real ``kubectl kustomize`` (kustomize is built into kubectl), so the
tests see exactly what ``kubectl apply -k manifests/`` would send to a cluster.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.manifests.crdschema import crd_schema, strict_validator

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
CRD_FILE = MANIFESTS / "crd" / "daemonsets.dsctl.io.yaml"
EXAMPLES = MANIFESTS / "examples"
# The Kubernetes release the manifests are validated against; kubectl in the test extras
# is the same minor version.
K8S_VERSION = "1.36.0"

Obj = dict[str, Any]
Build = Callable[[Path], list[Obj]]


def find_kubectl() -> str | None:
    """kubectl on PATH, else the one installed next to this interpreter (the venv's)."""
    found = shutil.which("kubectl")
    if found:
        return found
    beside = Path(sys.executable).with_name("kubectl")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


@pytest.fixture(scope="session")
def kubectl() -> str:
    """Path of a kubectl binary with built-in kustomize."""
    path = find_kubectl()
    if path is None:
        pytest.skip("kubectl not found on PATH or next to the Python interpreter")
    return path


def run_kustomize(kubectl: str, directory: Path) -> list[Obj]:
    """The objects ``kubectl kustomize <directory>`` renders; fails the test on an error."""
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="session")
def build(kubectl: str) -> Build:
    """A function that renders a kustomization directory into its objects."""
    return lambda directory: run_kustomize(kubectl, directory)


@pytest.fixture(scope="session")
def base_objects(build: Build) -> list[Obj]:
    """Everything ``kubectl apply -k manifests/`` installs."""
    return build(MANIFESTS)


def find(objects: list[Obj], kind: str, name: str) -> Obj:
    """The one object of that kind and name; fails the test when it is missing."""
    for obj in objects:
        if obj.get("kind") == kind and obj.get("metadata", {}).get("name") == name:
            return obj
    pytest.fail(f"{kind}/{name} is not in the build")


def overlay(tmp_path: Path, *, components: list[str]) -> Path:
    """A throw-away overlay of the base with some of its components switched on."""
    base = os.path.relpath(MANIFESTS, tmp_path)
    lines = [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        f"resources: [{base}]",
        "components: [" + ", ".join(f"{base}/components/{name}" for name in components) + "]",
    ]
    (tmp_path / "kustomization.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def load_yaml(path: Path) -> Obj:
    """A single-document YAML file as a dict."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path} is not one YAML mapping"
    return data


def validate_object(obj: Obj) -> None:
    """Validate strictly: the Kubernetes schema, or dsctl's CRD schema for its own kind."""
    if obj["apiVersion"] == "dsctl.io/v1":
        validator = strict_validator(crd_schema(load_yaml(CRD_FILE)))
        errors = sorted(validator.iter_errors(obj), key=str)
        assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
        return
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
