"""The CRD and the examples, applied with kubectl against `dsctl sim serve`.

The simulator stands in for a cluster: kubectl discovers its API, downloads its OpenAPI
for validation and patching, and reads objects back, so these tests catch a CRD or an
example that only looks right on paper. The simulator stores the base's other kinds
(RBAC, the Deployment, the Service) without acting on them, so the whole base applies;
their schemas are checked in test_kustomize.py.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.manifests.conftest import EXAMPLES, MANIFESTS

START_DEADLINE_SECONDS = 30.0


def wait_for_ready_line(proc: subprocess.Popen[str], *, deadline: float) -> str:
    """The simulator's ``READY ...`` line, read without blocking past the deadline."""
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("READY "):
                return line
    finally:
        selector.close()
    pytest.fail(f"dsctl sim serve did not become ready (exit code {proc.poll()})")


@pytest.fixture(scope="module")
def sim_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A running simulated cluster (no nodes needed) and the kubeconfig that reaches it."""
    kubeconfig = tmp_path_factory.mktemp("sim") / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsctl", "sim", "serve", "--port", "0", "--nodes", "1",
         "--kubeconfig", str(kubeconfig), "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        wait_for_ready_line(proc, deadline=time.monotonic() + START_DEADLINE_SECONDS)
        yield kubeconfig
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def kubectl_on(kubectl: str, kubeconfig: Path, *args: str) -> str:
    """Run kubectl against the simulator; fail the test with kubectl's stderr on an error."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    result = subprocess.run(
        [kubectl, *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def get_json(kubectl: str, kubeconfig: Path, *args: str) -> dict[str, Any]:
    """``kubectl get ... -o json`` as a dict."""
    data: dict[str, Any] = json.loads(kubectl_on(kubectl, kubeconfig, "get", *args, "-o", "json"))
    return data


def test_crd_installs_and_serves_the_kind(kubectl: str, sim_kubeconfig: Path) -> None:
    """`kubectl apply -k manifests/crd` registers daemonsets.dsctl.io with short name dds and its columns."""
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS / "crd"))
    resources = kubectl_on(kubectl, sim_kubeconfig, "api-resources", "--api-group=dsctl.io", "-o", "wide")
    assert "dds" in resources and "DaemonSet" in resources
    again = kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS / "crd"))
    assert again.strip().endswith("unchanged"), again


@pytest.mark.parametrize(
    ("example", "resource"),
    [
        pytest.param("nginx-ds.yaml", "daemonsets.apps", id="nginx"),
        pytest.param("node-exporter-ds.yaml", "daemonsets.apps", id="node-exporter"),
        pytest.param("nginx-dsctl-crd.yaml", "daemonsets.dsctl.io", id="nginx-crd"),
    ],
)
def test_examples_apply_and_keep_their_template(
    kubectl: str, sim_kubeconfig: Path, example: str, resource: str
) -> None:
    """Each example passes kubectl's validation and reads back with its template intact."""
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS / "crd"))
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-f", str(EXAMPLES / example))
    name = "node-exporter" if example.startswith("node-exporter") else "nginx"
    stored = get_json(kubectl, sim_kubeconfig, resource, name, "-n", "default")
    template = stored["spec"]["template"]
    assert template["metadata"]["labels"] == {"app.kubernetes.io/name": name}
    assert [c["name"] for c in template["spec"]["containers"]] == [name]


def test_get_dds_prints_the_apps_v1_columns(kubectl: str, sim_kubeconfig: Path) -> None:
    """`kubectl get dds` shows the same columns as `kubectl get daemonsets.apps`."""
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS / "crd"))
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-f", str(EXAMPLES / "nginx-dsctl-crd.yaml"))
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-f", str(EXAMPLES / "nginx-ds.yaml"))
    ours = kubectl_on(kubectl, sim_kubeconfig, "get", "dds", "-n", "default").splitlines()[0].split()
    builtin = kubectl_on(kubectl, sim_kubeconfig, "get", "daemonsets.apps", "-n", "default").splitlines()[0]
    assert ours == builtin.split()


def kubectl_stdin(kubectl: str, kubeconfig: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with ``text`` on stdin; the result, whatever the exit code."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    return subprocess.run([kubectl, *args], input=text, capture_output=True, text=True, timeout=60, env=env,
                          check=False)


def test_the_whole_base_applies_then_a_crd_mode_example(kubectl: str, sim_kubeconfig: Path) -> None:
    """`kubectl apply -k manifests/` passes strict validation, then a dsctl.io/v1 example applies and updates."""
    out = kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS))
    for applied in ("customresourcedefinition.apiextensions.k8s.io/daemonsets.dsctl.io", "serviceaccount/dsctl",
                    "clusterrole.rbac.authorization.k8s.io/dsctl", "deployment.apps/dsctl", "service/dsctl-metrics"):
        assert applied in out, out
    example = (EXAMPLES / "nginx-dsctl-crd.yaml").read_text().replace("name: nginx\n", "name: whole-base\n", 1)
    first = kubectl_stdin(kubectl, sim_kubeconfig, example, "apply", "-f", "-")
    assert first.returncode == 0 and "daemonset.dsctl.io/whole-base created" in first.stdout, first.stderr
    second = kubectl_stdin(kubectl, sim_kubeconfig, example.replace("nginx:1.27", "nginx:1.28"), "apply", "-f", "-")
    assert second.returncode == 0 and "daemonset.dsctl.io/whole-base configured" in second.stdout, second.stderr
    assert "warning" not in second.stderr.lower()
    stored = get_json(kubectl, sim_kubeconfig, "dds", "whole-base", "-n", "default")
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"


def test_the_crd_schema_is_in_openapi_v2(kubectl: str, sim_kubeconfig: Path) -> None:
    """`kubectl explain` reading OpenAPI v2 (protobuf) walks the CRD's fields, as on a cluster."""
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS / "crd"))
    out = kubectl_on(kubectl, sim_kubeconfig, "explain", "daemonsets.dsctl.io.spec.updateStrategy",
                     "--output=plaintext-openapiv2")
    assert "VERSION:  dsctl.io/v1" in out and "rollingUpdate" in out


def test_a_kind_the_simulator_does_not_serve_gets_kubectls_usual_error(kubectl: str, sim_kubeconfig: Path) -> None:
    """A ConfigMap is refused with "no matches for kind", not "failed to download openapi"."""
    result = kubectl_stdin(kubectl, sim_kubeconfig, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
                           "apply", "-f", "-")
    assert result.returncode != 0
    assert 'no matches for kind "ConfigMap"' in result.stderr and "openapi" not in result.stderr
