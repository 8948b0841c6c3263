"""The kopf example operator (greetings.py), run by kopf's own test runner against the ``kube_sim`` fixture."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from dsctl_sim.process import SimServer

kopf_testing = pytest.importorskip("kopf.testing", reason="kopf is not installed (pip install kopf)")

HERE = Path(__file__).parent
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "greetings.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "greetings", "singular": "greeting", "kind": "Greeting"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}


def _until(what: str, probe: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.kube_sim(nodes=1)
def test_a_greeting_gets_its_pod(kube_sim: SimServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Creating a Greeting makes kopf create its owned pod and record it in status."""
    monkeypatch.setenv("KUBECONFIG", str(kube_sim.kubeconfig))
    admin = kube_sim.admin
    admin.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    _until("the Greeting CRD to be served",
           lambda: admin.request("GET", "/apis/example.com/v1/greetings")[0] == 200)
    args = ["run", "--standalone", "--namespace", "default", "--verbose", str(HERE / "greetings.py")]
    with kopf_testing.KopfRunner(args, timeout=60) as runner:
        greeting = {"apiVersion": "example.com/v1", "kind": "Greeting",
                    "metadata": {"name": "hello"}, "spec": {"message": "hi"}}
        status, body = admin.request("POST", "/apis/example.com/v1/namespaces/default/greetings", greeting)
        assert status == 201, body
        pod = _until("the greeting's pod", lambda: _get(admin, "/api/v1/namespaces/default/pods/greeting-hello"))
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "Greeting"
        recorded = _until("the pod name in status", lambda: _get(
            admin, "/apis/example.com/v1/namespaces/default/greetings/hello").get("status", {}).get("create_pod"))
        assert recorded == {"pod": "greeting-hello"}
    assert runner.exit_code == 0, runner.output
    assert runner.exception is None


def _get(admin: Any, path: str) -> dict[str, Any]:
    status, body = admin.request("GET", path)
    return body if status == 200 else {}


def test_kubectl_sees_the_same_cluster(kube_sim: SimServer) -> None:
    """The fixture's kubeconfig is a real one: kubectl lists the simulated nodes."""
    kubectl = pytest.importorskip("shutil").which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run([kubectl, "--kubeconfig", str(kube_sim.kubeconfig), "get", "nodes", "-o", "json"],
                         check=True, capture_output=True, text=True, timeout=60)
    assert sorted(n["metadata"]["name"] for n in json.loads(out.stdout)["items"]) == ["node-0", "node-1", "node-2"]
