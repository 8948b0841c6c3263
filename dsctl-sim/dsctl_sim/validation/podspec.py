"""PodSpec validation, shared by Pods and by pod templates (DaemonSet ``spec.template``).

Covers what a DaemonSet controller and kubectl users run into: containers (names, images,
ports, env, mounts and their enums), volumes, restart and DNS policy, tolerations,
``nodeSelector`` and node affinity (whose ``matchFields`` terms the DaemonSet controller
writes). Every cause's field path is rooted at ``path`` (``spec`` or ``spec.template.spec``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dsctl_sim.validation.causes import (
    Causes,
    check_dns_label,
    check_dns_subdomain,
    check_label_value,
    check_labels,
    check_qualified_name,
    is_int,
)

__all__ = ["RESTART_POLICIES", "validate_pod_spec"]

RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_TOLERATION_OPERATORS = ("Equal", "Exists")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def validate_pod_spec(causes: Causes, spec: Any, path: str) -> None:
    """Check a PodSpec dict; ``path`` is where it sits in the object."""
    if not isinstance(spec, Mapping):
        causes.required(path)
        return
    volumes = _check_volumes(causes, spec.get("volumes"), f"{path}.volumes")
    names: set[str] = set()
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        causes.required(f"{path}.containers")
    else:
        _check_containers(causes, containers, f"{path}.containers", volumes, names)
    init = spec.get("initContainers")
    if isinstance(init, list):
        _check_containers(causes, init, f"{path}.initContainers", volumes, names)
    _enum(causes, f"{path}.restartPolicy", spec.get("restartPolicy"), RESTART_POLICIES)
    _enum(causes, f"{path}.dnsPolicy", spec.get("dnsPolicy"), _DNS_POLICIES)
    check_labels(causes, f"{path}.nodeSelector", spec.get("nodeSelector"))
    _check_tolerations(causes, spec.get("tolerations"), f"{path}.tolerations")
    _check_affinity(causes, spec.get("affinity"), f"{path}.affinity")
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not is_int(deadline) or not 1 <= deadline <= 2**31 - 1):
        causes.invalid(f"{path}.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive")
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and not is_int(grace):
        causes.invalid(f"{path}.terminationGracePeriodSeconds", grace, "must be an integer")
    for field, check in (
        ("nodeName", check_dns_subdomain),
        ("serviceAccountName", check_dns_subdomain),
        ("hostname", check_dns_label),
        ("subdomain", check_dns_label),
    ):
        value = spec.get(field)
        if value:
            causes.names(f"{path}.{field}", value, check(str(value)))


def _enum(causes: Causes, field: str, value: Any, allowed: tuple[str, ...], *, required: bool = False) -> None:
    if value is None or value == "":
        if required:
            causes.required(field)
        return
    if value not in allowed:
        causes.not_supported(field, value, allowed)


def _check_volumes(causes: Causes, volumes: Any, path: str) -> set[str]:
    names: set[str] = set()
    if volumes is None:
        return names
    if not isinstance(volumes, list):
        causes.invalid(path, volumes, "must be a list")
        return names
    for i, volume in enumerate(volumes):
        here = f"{path}[{i}]"
        if not isinstance(volume, Mapping):
            causes.invalid(here, volume, "must be an object")
            continue
        _unique_name(causes, here, volume, names)
        sources = [k for k in volume if k != "name"]
        if not sources:
            causes.required(here, "must specify a volume type")
        elif len(sources) > 1:
            causes.forbidden(f"{here}.{sources[1]}", "may not specify more than 1 volume type")
    return names


def _unique_name(causes: Causes, here: str, item: Mapping[str, Any], names: set[str]) -> None:
    """``item.name`` is required, a DNS label, and unique among ``names`` (which it joins)."""
    name = item.get("name")
    if not name:
        causes.required(f"{here}.name")
        return
    causes.names(f"{here}.name", name, check_dns_label(str(name)))
    if name in names:
        causes.duplicate(f"{here}.name", name)
    names.add(str(name))


def _check_containers(
    causes: Causes, containers: list[Any], path: str, volumes: set[str], names: set[str]
) -> None:
    for i, container in enumerate(containers):
        here = f"{path}[{i}]"
        if not isinstance(container, Mapping):
            causes.invalid(here, container, "must be an object")
            continue
        _unique_name(causes, here, container, names)
        image = container.get("image")
        if not image:
            causes.required(f"{here}.image")
        elif not isinstance(image, str) or image != image.strip():
            causes.invalid(f"{here}.image", image, "must not have leading or trailing whitespace")
        _enum(causes, f"{here}.imagePullPolicy", container.get("imagePullPolicy"), _PULL_POLICIES)
        _enum(
            causes, f"{here}.terminationMessagePolicy", container.get("terminationMessagePolicy"), _MESSAGE_POLICIES
        )
        _check_ports(causes, container.get("ports"), f"{here}.ports")
        _check_env(causes, container.get("env"), f"{here}.env")
        _check_mounts(causes, container.get("volumeMounts"), f"{here}.volumeMounts", volumes)


def _check_ports(causes: Causes, ports: Any, path: str) -> None:
    if not isinstance(ports, list):
        return
    seen: set[str] = set()
    for i, port in enumerate(ports):
        here = f"{path}[{i}]"
        if not isinstance(port, Mapping):
            causes.invalid(here, port, "must be an object")
            continue
        number = port.get("containerPort")
        if number is None:
            causes.required(f"{here}.containerPort")
        elif not is_int(number) or not 1 <= number <= 65535:
            causes.invalid(f"{here}.containerPort", number, "must be between 1 and 65535, inclusive")
        host = port.get("hostPort")
        if host is not None and host != 0 and (not is_int(host) or not 1 <= host <= 65535):
            causes.invalid(f"{here}.hostPort", host, "must be between 1 and 65535, inclusive")
        _enum(causes, f"{here}.protocol", port.get("protocol"), _PROTOCOLS)
        name = port.get("name")
        if name:
            text = str(name)
            if len(text) > 15 or not _PORT_NAME.match(text) or "--" in text or not re.search("[a-z]", text):
                causes.invalid(
                    f"{here}.name",
                    name,
                    "must be an IANA service name: at most 15 lower case alphanumerics or '-', with at least "
                    "one letter, no '--', and not starting or ending with '-'",
                )
            if text in seen:
                causes.duplicate(f"{here}.name", name)
            seen.add(text)


def _check_env(causes: Causes, env: Any, path: str) -> None:
    if not isinstance(env, list):
        return
    for i, var in enumerate(env):
        here = f"{path}[{i}]"
        if not isinstance(var, Mapping):
            causes.invalid(here, var, "must be an object")
            continue
        name = var.get("name")
        if not name:
            causes.required(f"{here}.name")
        elif not isinstance(name, str) or "=" in name or not all(" " <= ch <= "~" for ch in name):
            causes.invalid(
                f"{here}.name", name, "a valid environment variable name must consist only of printable ASCII "
                "characters other than '='"
            )
        if var.get("value") and var.get("valueFrom"):
            causes.invalid(f"{here}.valueFrom", "", "may not be specified when `value` is not empty")


def _check_mounts(causes: Causes, mounts: Any, path: str, volumes: set[str]) -> None:
    if not isinstance(mounts, list):
        return
    seen: set[str] = set()
    for i, mount in enumerate(mounts):
        here = f"{path}[{i}]"
        if not isinstance(mount, Mapping):
            causes.invalid(here, mount, "must be an object")
            continue
        name = mount.get("name")
        if not name:
            causes.required(f"{here}.name")
        elif name not in volumes:
            causes.not_found(f"{here}.name", name)
        mount_path = mount.get("mountPath")
        if not mount_path:
            causes.required(f"{here}.mountPath")
        elif mount_path in seen:
            causes.invalid(f"{here}.mountPath", mount_path, "must be unique")
        else:
            seen.add(str(mount_path))


def _check_tolerations(causes: Causes, tolerations: Any, path: str) -> None:
    if tolerations is None:
        return
    if not isinstance(tolerations, list):
        causes.invalid(path, tolerations, "must be a list")
        return
    for i, toleration in enumerate(tolerations):
        here = f"{path}[{i}]"
        if not isinstance(toleration, Mapping):
            causes.invalid(here, toleration, "must be an object")
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or ""
        if key:
            causes.names(f"{here}.key", key, check_qualified_name(str(key)))
        elif operator != "Exists":
            causes.invalid(
                f"{here}.operator", operator, "operator must be Exists when `key` is empty, which means "
                '"match all values and all keys"'
            )
        if operator and operator not in _TOLERATION_OPERATORS:
            causes.not_supported(f"{here}.operator", operator, _TOLERATION_OPERATORS)
        value = toleration.get("value") or ""
        if operator == "Exists" and value:
            causes.invalid(f"{here}.operator", toleration, "value must be empty when `operator` is 'Exists'")
        elif value:
            causes.names(f"{here}.value", value, check_label_value(str(value)))
        effect = toleration.get("effect") or ""
        if effect:
            _enum(causes, f"{here}.effect", effect, _TAINT_EFFECTS)
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.invalid(f"{here}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")


def _check_affinity(causes: Causes, affinity: Any, path: str) -> None:
    if not isinstance(affinity, Mapping):
        return
    node = affinity.get("nodeAffinity")
    if not isinstance(node, Mapping):
        return
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return
    here = f"{path}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        causes.required(f"{here}.nodeSelectorTerms", "must have at least one node selector term")
        return
    for i, term in enumerate(terms):
        term_path = f"{here}.nodeSelectorTerms[{i}]"
        if not isinstance(term, Mapping):
            causes.invalid(term_path, term, "must be an object")
            continue
        for j, req in enumerate(term.get("matchExpressions") or []):
            _check_node_requirement(causes, req, f"{term_path}.matchExpressions[{j}]", fields=False)
        for j, req in enumerate(term.get("matchFields") or []):
            _check_node_requirement(causes, req, f"{term_path}.matchFields[{j}]", fields=True)


def _check_node_requirement(causes: Causes, req: Any, path: str, *, fields: bool) -> None:
    if not isinstance(req, Mapping):
        causes.invalid(path, req, "must be an object")
        return
    key = str(req.get("key") or "")
    operator = req.get("operator")
    values = req.get("values") or []
    if fields:
        if key != "metadata.name":
            causes.invalid(f"{path}.key", key, "not a valid field selector key")
        if operator not in ("In", "NotIn"):
            causes.invalid(f"{path}.operator", operator, "not a valid selector operator")
        elif len(values) != 1:
            causes.required(
                f"{path}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
        return
    causes.names(f"{path}.key", key, check_qualified_name(key))
    if operator not in _NODE_OPERATORS:
        causes.invalid(f"{path}.operator", operator, "not a valid selector operator")
    elif operator in ("In", "NotIn") and not values:
        causes.required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist") and values:
        causes.forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif operator in ("Gt", "Lt") and len(values) != 1:
        # kube-apiserver checks only the count here; whether the value is an integer is left to
        # the scheduler and the controller (strconv.ParseInt), which then match no node.
        causes.required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
    # Required-affinity values of new objects must be label values (AllowInvalidLabelValueIn-
    # RequiredNodeAffinity is false unless the old object already held such a value).
    for k, value in enumerate(values if isinstance(values, list) else []):
        causes.names(f"{path}.values[{k}]", value, check_label_value(str(value)))
