"""Defaulting, as kube-apiserver applies it on every write before validation.

These are the apps/v1 and core/v1 ``SetDefaults_*`` rules plus the admission plugins every
real cluster runs on pod creation (Priority, DefaultTolerationSeconds, ServiceAccount without
the token volume). They matter beyond cosmetics: the DaemonSet controller hashes the
*defaulted* pod template, and ``kubectl rollout undo`` writes a stored template back, so
defaulting must be idempotent and must treat a template exactly like the apiserver does.

Pod-template defaults (``_default_pod_spec(pod=False)``) deliberately omit the Pod-only ones
(``enableServiceLinks``, ``priority``, requests copied from limits, default tolerations),
as upstream applies those to Pods and never to templates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsctl_api.taints import tolerates

__all__ = ["apply_defaults", "pull_policy_for"]

Obj = dict[str, Any]

_DEFAULT_MODE = 0o644
_TOLERATION_SECONDS = 300
_ADMISSION_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def apply_defaults(key: str, obj: Obj) -> None:
    """Fill defaults into ``obj`` in place. ``key`` is the storage key; unknown keys do nothing."""
    handler = _HANDLERS.get(key)
    if handler is not None and isinstance(obj, dict):
        handler(obj)


def _dict(parent: Obj, field: str) -> Obj:
    """``parent[field]`` as a dict, created if missing (a non-dict is left for validation)."""
    value = parent.get(field)
    if value is None:
        value = parent[field] = {}
    return value if isinstance(value, dict) else {}


def _default_daemonset(ds: Obj) -> None:
    spec = ds.get("spec")
    if not isinstance(spec, dict):
        return
    strategy = _dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy.get("type") == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        _default_pod_spec(template["spec"], pod=False)


def _default_pod(pod: Obj) -> None:
    spec = pod.get("spec")
    if isinstance(spec, dict):
        _default_pod_spec(spec, pod=True)


def _default_pod_spec(spec: Obj, *, pod: bool) -> None:
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    # The v1 API keeps the deprecated serviceAccount field in step with serviceAccountName.
    if pod and not spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccountName"] = "default"
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                _default_container(container, pod=pod, host_network=spec.get("hostNetwork") is True)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _default_volume(volume)
    if pod:
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        _default_tolerations(spec)


def _default_tolerations(spec: Obj) -> None:
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return
    added = False
    for key in _ADMISSION_TAINTS:
        taint = {"key": key, "effect": "NoExecute"}
        if not any(isinstance(t, dict) and tolerates(t, taint) for t in tolerations):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": _TOLERATION_SECONDS}
            )
            added = True
    if added or "tolerations" in spec:
        spec["tolerations"] = tolerations


def pull_policy_for(image: str) -> str:
    """``Always`` for an untagged or ``:latest`` image, else ``IfNotPresent``."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rpartition(":")[2] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_container(container: Obj, *, pod: bool, host_network: bool) -> None:
    image = container.get("image")
    if not container.get("imagePullPolicy") and isinstance(image, str):
        container["imagePullPolicy"] = pull_policy_for(image)
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if pod and host_network and "hostPort" not in port and "containerPort" in port:
                port["hostPort"] = port["containerPort"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(probe), dict):
            _default_probe(container[probe])
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in lifecycle.values():
            if isinstance(hook, dict):
                _default_handler(hook)
    for var in container.get("env") or []:
        field_ref = (var.get("valueFrom") or {}).get("fieldRef") if isinstance(var, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    resources = container.get("resources")
    if pod and isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = _dict(resources, "requests")
        for name, quantity in resources["limits"].items():
            requests.setdefault(name, quantity)


def _default_probe(probe: Obj) -> None:
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _default_handler(probe)


def _default_handler(handler: Obj) -> None:
    http = handler.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


_MODED_SOURCES = ("secret", "configMap", "downwardAPI", "projected")


def _default_volume(volume: Obj) -> None:
    if len(volume) == 1 and "name" in volume:
        volume["emptyDir"] = {}
    for source in _MODED_SOURCES:
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", _DEFAULT_MODE)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        host_path.setdefault("type", "")
    projected = volume.get("projected")
    if isinstance(projected, dict):
        for item in projected.get("sources") or []:
            token = item.get("serviceAccountToken") if isinstance(item, dict) else None
            if isinstance(token, dict):
                token.setdefault("expirationSeconds", 3600)


def _default_node(node: Obj) -> None:
    status = node.get("status")
    if isinstance(status, dict) and "capacity" in status and "allocatable" not in status:
        status["allocatable"] = dict(status["capacity"])


def _default_namespace(namespace: Obj) -> None:
    meta = _dict(namespace, "metadata")
    name = meta.get("name")
    if isinstance(name, str) and name:
        labels = _dict(meta, "labels")
        labels["kubernetes.io/metadata.name"] = name


def _default_crd(crd: Obj) -> None:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})


_HANDLERS: dict[str, Callable[[Obj], None]] = {
    "apps/daemonsets": _default_daemonset,
    "pods": _default_pod,
    "nodes": _default_node,
    "namespaces": _default_namespace,
    "apiextensions.k8s.io/customresourcedefinitions": _default_crd,
}
