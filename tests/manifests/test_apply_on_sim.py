"""The CRD and the examples, applied with kubectl against `dsctl sim serve`.

The simulator stands in for a cluster: kubectl discovers its API, downloads its OpenAPI
for client-side validation, and reads objects back, so these tests catch a CRD or an
example that only looks right on paper. The simulator serves only what a DaemonSet
controller touches (no RBAC, Deployments, Services or PDBs), so the rest of the base is
checked by schema in test_kustomize.py instead.
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
