"""The example DaemonSets: valid for their API, self-consistent, and doing what they claim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsctl_api.labels import selector_from_label_selector
from tests.manifests.conftest import EXAMPLES, Obj, load_yaml, validate_object

EXAMPLE_FILES = [
    pytest.param("nginx-ds.yaml", "apps/v1", id="nginx"),
    pytest.param("node-exporter-ds.yaml", "apps/v1", id="node-exporter"),
    pytest.param("nginx-dsctl-crd.yaml", "dsctl.io/v1", id="nginx-crd"),
]


def example(name: str) -> Obj:
    """One example manifest."""
    return load_yaml(EXAMPLES / name)


def test_every_example_file_is_covered() -> None:
    """Each YAML file in examples/ is one of the cases below, so none goes unvalidated."""
    assert sorted(p.name for p in Path(EXAMPLES).glob("*.yaml")) == sorted(
        str(p.values[0]) for p in EXAMPLE_FILES
    )


@pytest.mark.parametrize(("name", "api_version"), EXAMPLE_FILES)
def test_example_validates(name: str, api_version: str) -> None:
    """apps/v1 examples pass the Kubernetes schema, the CRD example passes the CRD's schema."""
    obj = example(name)
    assert (obj["apiVersion"], obj["kind"]) == (api_version, "DaemonSet")
    validate_object(obj)


@pytest.mark.parametrize(("name", "api_version"), EXAMPLE_FILES)
def test_example_selector_matches_its_template(name: str, api_version: str) -> None:
    """The selector is non-empty and selects the template's labels, as kube-apiserver requires."""
    spec = example(name)["spec"]
    selector = selector_from_label_selector(spec["selector"])
    assert not selector.empty
    assert selector.matches(spec["template"]["metadata"]["labels"])


@pytest.mark.parametrize(("name", "api_version"), EXAMPLE_FILES)
def test_example_containers_are_complete(name: str, api_version: str) -> None:
    """Every container has an image with a tag, requests and limits, and a readiness probe."""
    for container in example(name)["spec"]["template"]["spec"]["containers"]:
        image: str = container["image"]
        assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image
        assert set(container["resources"]) == {"requests", "limits"}
        assert "readinessProbe" in container


def test_nginx_crd_example_is_the_apps_v1_example() -> None:
    """The dsctl.io/v1 nginx differs from the apps/v1 one only in its apiVersion."""
    apps, crd = example("nginx-ds.yaml"), example("nginx-dsctl-crd.yaml")
    assert {**crd, "apiVersion": "apps/v1"} == apps


def test_nginx_rolls_one_node_at_a_time() -> None:
    """nginx: nginx:1.27 in default, RollingUpdate with maxUnavailable 1."""
    ds = example("nginx-ds.yaml")
    assert (ds["metadata"]["name"], ds["metadata"]["namespace"]) == ("nginx", "default")
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    strategy = ds["spec"]["updateStrategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"]["maxUnavailable"] == 1


def test_node_exporter_sees_the_host() -> None:
    """node-exporter: host network and PID, every taint tolerated, /proc and /sys read-only, port 9100."""
    pod: dict[str, Any] = example("node-exporter-ds.yaml")["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["hostPID"] is True
    assert {"operator": "Exists"} in pod["tolerations"]
    [container] = pod["containers"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    assert sorted(host_paths.values()) == ["/proc", "/sys"]
    assert all(mounts[name]["readOnly"] is True for name in host_paths)
    [port] = container["ports"]
    assert port["containerPort"] == port["hostPort"] == 9100
