"""The controller Deployment: hardening, probes, resources, leader election and shutdown timing."""

from __future__ import annotations

import argparse
import re
from typing import Any

import pytest

from dsctl_api.labels import selector_from_label_selector
from tests.manifests.conftest import Obj, find

_QUANTITY = re.compile(r"^([0-9.]+)(m|Ki|Mi|Gi|Ti)?$")
_SCALE = {None: 1.0, "m": 0.001, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
# Time the process needs after the drain deadline: release the Lease, close the HTTP server.
SHUTDOWN_MARGIN_SECONDS = 5


def quantity(value: str | int) -> float:
    """A resource quantity as a number (cores or bytes); only the suffixes used here."""
    match = _QUANTITY.match(str(value))
    assert match, f"unexpected quantity {value!r}"
    return float(match.group(1)) * _SCALE[match.group(2)]


@pytest.fixture
def deployment(base_objects: list[Obj]) -> Obj:
    """The dsctl Deployment from the base build."""
    return find(base_objects, "Deployment", "dsctl")


@pytest.fixture
def pod(deployment: Obj) -> dict[str, Any]:
    """The Deployment's pod spec."""
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


@pytest.fixture
def container(pod: dict[str, Any]) -> dict[str, Any]:
    """The one dsctl container."""
    [only] = pod["containers"]
    assert only["name"] == "dsctl"
    return dict(only)


def run_settings() -> Any:
    """dsctl's ``run`` settings module, or skip when the app layer is not there."""
    return pytest.importorskip("dsctl.app.config", reason="dsctl.app.config provides the run flags")


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param("runAsNonRoot", True, id="run-as-non-root"),
        pytest.param("runAsUser", 65532, id="numeric-uid"),
        pytest.param("readOnlyRootFilesystem", True, id="read-only-root"),
        pytest.param("allowPrivilegeEscalation", False, id="no-privilege-escalation"),
        pytest.param("capabilities", {"drop": ["ALL"]}, id="drop-all-capabilities"),
        pytest.param("seccompProfile", {"type": "RuntimeDefault"}, id="seccomp-runtime-default"),
        pytest.param("privileged", False, id="not-privileged"),
    ],
)
def test_container_security_context(container: dict[str, Any], field: str, expected: object) -> None:
    """Each hardening field is set on the container itself, not left to defaults."""
    assert container["securityContext"][field] == expected


def test_pod_uses_no_host_access(pod: dict[str, Any]) -> None:
    """No host namespaces or host paths: the pod passes the restricted Pod Security Standard."""
    assert not any(pod.get(key) for key in ("hostNetwork", "hostPID", "hostIPC"))
    assert all(set(volume) == {"name", "emptyDir"} for volume in pod.get("volumes", []))
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_namespace_enforces_restricted_pod_security(base_objects: list[Obj]) -> None:
    """dsctl-system enforces the restricted Pod Security Standard."""
    labels = find(base_objects, "Namespace", "dsctl-system")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_tmp_is_a_writable_emptydir(pod: dict[str, Any], container: dict[str, Any]) -> None:
    """/tmp is an emptyDir, the one writable path beside a read-only root filesystem."""
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_grace_period_exceeds_shutdown_deadline(pod: dict[str, Any]) -> None:
    """terminationGracePeriodSeconds outlasts dsctl's drain deadline plus the Lease release."""
    config = run_settings()
    deadline = config.Settings().shutdown_timeout
    assert pod["terminationGracePeriodSeconds"] >= deadline + SHUTDOWN_MARGIN_SECONDS


def test_args_parse_as_dsctl_run_flags(container: dict[str, Any]) -> None:
    """The container args are valid `dsctl run` flags and give a valid configuration."""
    config = run_settings()
    parser = argparse.ArgumentParser()
    config.add_arguments(parser)
    args = [a.replace("$(POD_NAMESPACE)", "dsctl-system") for a in container["args"]]
    settings = config.settings_from_args(parser.parse_args(args))
    assert settings.leader_elect is True
    assert settings.leader_elect_namespace == "dsctl-system"
    assert settings.resource == "dsctl.io/v1"


def test_leader_election_lease_is_granted(deployment: Obj, base_objects: list[Obj]) -> None:
    """Two replicas elect a leader on a Lease the leader-election Role lets them create and renew."""
    config = run_settings()
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--leader-elect" in container["args"]
    assert "--leader-elect-namespace=$(POD_NAMESPACE)" in container["args"]
    role = find(base_objects, "Role", "dsctl-leader-election")
    assert role["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    lease_id = config.Settings().leader_elect_id
    granted = {
        verb
        for rule in role["rules"]
        if rule["resources"] == ["leases"] and lease_id in rule.get("resourceNames", [lease_id])
        for verb in rule["verbs"]
    }
    assert {"get", "create", "update"} <= granted


@pytest.mark.parametrize(
    ("env", "field_path"),
    [
        pytest.param("POD_NAME", "metadata.name", id="pod-name"),
        pytest.param("POD_NAMESPACE", "metadata.namespace", id="pod-namespace"),
    ],
)
def test_downward_api_env(container: dict[str, Any], env: str, field_path: str) -> None:
    """The pod's name and namespace reach the process through the downward API."""
    values = {e["name"]: e.get("valueFrom", {}) for e in container["env"]}
    assert values[env] == {"fieldRef": {"fieldPath": field_path}}


@pytest.mark.parametrize(
    ("probe", "path"),
    [
        pytest.param("startupProbe", "/healthz", id="startup"),
        pytest.param("livenessProbe", "/healthz", id="liveness"),
        pytest.param("readinessProbe", "/readyz", id="readiness"),
    ],
)
def test_probes_hit_the_health_port(container: dict[str, Any], probe: str, path: str) -> None:
    """Probes use /healthz and /readyz on the port dsctl binds for health (8081)."""
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    http = container[probe]["httpGet"]
    assert http["path"] == path
    assert ports[http["port"]] == 8081
    assert "--health-probe-bind-address=:8081" in container["args"]


def test_metrics_port_and_service(container: dict[str, Any], deployment: Obj, base_objects: list[Obj]) -> None:
    """The dsctl-metrics Service selects the pods and targets the container's metrics port (8080)."""
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == 8080
    assert "--metrics-bind-address=:8080" in container["args"]
    service = find(base_objects, "Service", "dsctl-metrics")
    [port] = service["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("metrics", 8080, "metrics")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()


@pytest.mark.parametrize("resource", [pytest.param("cpu", id="cpu"), pytest.param("memory", id="memory")])
def test_resources_have_requests_below_limits(container: dict[str, Any], resource: str) -> None:
    """CPU and memory each have a request and a higher-or-equal limit."""
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    assert 0 < quantity(requests[resource]) <= quantity(limits[resource])


def test_replicas_spread_and_disruption_budget(deployment: Obj, base_objects: list[Obj]) -> None:
    """Replicas spread over nodes, and the PDB keeps one of them up during drains."""
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    [spread] = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert selector_from_label_selector(spread["labelSelector"]).matches(labels)
    pdb = find(base_objects, "PodDisruptionBudget", "dsctl")
    assert pdb["spec"]["minAvailable"] == 1 < deployment["spec"]["replicas"]
    assert selector_from_label_selector(pdb["spec"]["selector"]).matches(labels)
    assert selector_from_label_selector(deployment["spec"]["selector"]).matches(labels)
