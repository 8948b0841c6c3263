"""Type-specific validation for Nodes, Namespaces, Leases, Events and CustomResourceDefinitions.

Smaller rule sets than the workloads: node taints (the part ``kubectl taint`` writes),
lease durations, the two Event APIs' required reporting fields, and the CRD shape the
simulator needs to serve a custom resource (``<plural>.<group>`` name, one storage version).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl_api.timefmt import parse_rfc3339
from dsctl_sim.validation.causes import (
    Causes,
    check_dns_label,
    check_dns_subdomain,
    check_label_value,
    check_qualified_name,
    is_int,
)
from dsctl_sim.validation.crschema import CustomSchema, RuleError

__all__ = [
    "validate_core_event",
    "validate_crd",
    "validate_lease",
    "validate_namespace",
    "validate_new_event",
    "validate_node",
]

_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_EVENT_TYPES = ("Normal", "Warning")
_SCOPES = ("Cluster", "Namespaced")


def validate_node(causes: Causes, node: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Taints: key, value and effect syntax, unique per (key, effect)."""
    spec = node.get("spec") or {}
    if not isinstance(spec, Mapping):
        causes.invalid("spec", spec, "must be an object")
        return
    taints = spec.get("taints")
    if taints is not None and not isinstance(taints, list):
        causes.invalid("spec.taints", taints, "must be a list")
        return
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints or []):
        here = f"spec.taints[{i}]"
        if not isinstance(taint, Mapping):
            causes.invalid(here, taint, "must be an object")
            continue
        key = taint.get("key") or ""
        if not key:
            causes.required(f"{here}.key")
        else:
            causes.names(f"{here}.key", key, check_qualified_name(str(key)))
        value = taint.get("value") or ""
        if value:
            causes.names(f"{here}.value", value, check_label_value(str(value)))
        effect = taint.get("effect") or ""
        if not effect:
            causes.required(f"{here}.effect")
        elif effect not in _TAINT_EFFECTS:
            causes.not_supported(f"{here}.effect", effect, _TAINT_EFFECTS)
        pair = (str(key), str(effect))
        if pair in seen:
            causes.duplicate(here, taint)
            causes[-1]["message"] += ": taints must be unique by key and effect pair"
        seen.add(pair)
    if "unschedulable" in spec and not isinstance(spec["unschedulable"], bool):
        causes.invalid("spec.unschedulable", spec["unschedulable"], "must be a boolean")
    old_cidr = ((old or {}).get("spec") or {}).get("podCIDR")
    if old_cidr and spec.get("podCIDR") != old_cidr:
        causes.forbidden("spec.podCIDR", "node updates may not change podCIDR except from \"\" to valid")


def validate_namespace(causes: Causes, namespace: Mapping[str, Any]) -> None:
    """Finalizer names in ``spec.finalizers`` (``kubernetes`` or qualified names)."""
    finalizers = (namespace.get("spec") or {}).get("finalizers") or []
    for i, finalizer in enumerate(finalizers if isinstance(finalizers, list) else []):
        causes.names(f"spec.finalizers[{i}]", finalizer, check_qualified_name(str(finalizer)))


def validate_lease(causes: Causes, lease: Mapping[str, Any]) -> None:
    """Positive duration, non-negative transitions, parseable times."""
    spec = lease.get("spec") or {}
    if not isinstance(spec, Mapping):
        causes.invalid("spec", spec, "must be an object")
        return
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not is_int(duration) or duration <= 0):
        causes.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
    causes.nonnegative("spec.leaseTransitions", spec.get("leaseTransitions"))
    for field in ("acquireTime", "renewTime"):
        _check_time(causes, f"spec.{field}", spec.get(field))


def _check_time(causes: Causes, field: str, value: Any) -> None:
    if value is None:
        return
    try:
        parse_rfc3339(value)
    except (ValueError, TypeError):
        causes.invalid(field, value, "must be an RFC 3339 timestamp")


def _check_event_namespace(causes: Causes, event: Mapping[str, Any], ref_field: str, *, new_style: bool) -> None:
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    ref = event.get(ref_field) or {}
    ref_namespace = (ref.get("namespace") or "") if isinstance(ref, Mapping) else ""
    if ref_namespace:
        if not new_style and ref_namespace != namespace:
            causes.invalid(f"{ref_field}.namespace", ref_namespace, "does not match event.namespace")
    elif namespace not in ("", "default") and not (new_style and namespace == "kube-system"):
        # An event about a cluster-scoped object (a Node) lives in "default".
        causes.invalid(f"{ref_field}.namespace", ref_namespace, "does not match event.namespace")


def _check_reporting(causes: Causes, event: Mapping[str, Any], *, controller_field: str, note_field: str) -> None:
    controller = event.get(controller_field) or ""
    if not controller:
        causes.required(controller_field)
    else:
        causes.names(controller_field, controller, check_qualified_name(str(controller)))
    instance = event.get("reportingInstance") or ""
    if not instance:
        causes.required("reportingInstance")
    elif len(str(instance)) > 128:
        causes.invalid("reportingInstance", "", "can have at most 128 characters")
    for field, limit in (("action", 128), ("reason", 128)):
        value = event.get(field) or ""
        if not value:
            causes.required(field)
        elif len(str(value)) > limit:
            causes.invalid(field, "", f"can have at most {limit} characters")
    if len(str(event.get(note_field) or "").encode()) > 1024:
        causes.invalid(note_field, "", "can have at most 1024 characters")


def validate_core_event(causes: Causes, event: Mapping[str, Any]) -> None:
    """core/v1 Event: namespace agreement; new-style (``eventTime``) events need reporting fields."""
    new_style = bool(event.get("eventTime"))
    _check_event_namespace(causes, event, "involvedObject", new_style=new_style)
    if new_style:
        _check_reporting(causes, event, controller_field="reportingComponent", note_field="message")
        _check_time(causes, "eventTime", event.get("eventTime"))
    kind = event.get("type")
    if kind and new_style and kind not in _EVENT_TYPES:
        causes.not_supported("type", kind, _EVENT_TYPES)


def validate_new_event(causes: Causes, event: Mapping[str, Any]) -> None:
    """events.k8s.io/v1 Event: eventTime, reporting controller/instance, action, reason, type."""
    if not event.get("eventTime"):
        causes.required("eventTime")
    else:
        _check_time(causes, "eventTime", event.get("eventTime"))
    _check_event_namespace(causes, event, "regarding", new_style=True)
    _check_reporting(causes, event, controller_field="reportingController", note_field="note")
    kind = event.get("type")
    if kind not in _EVENT_TYPES:
        causes.not_supported("type", kind or "", _EVENT_TYPES)


def validate_crd(causes: Causes, crd: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Enough of a CRD to serve it: names, group, scope, versions with one storage version."""
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        causes.required("spec")
        return
    group = str(spec.get("group") or "")
    raw_names = spec.get("names")
    names: Mapping[str, Any] = raw_names if isinstance(raw_names, Mapping) else {}
    plural = str(names.get("plural") or "")
    if not group:
        causes.required("spec.group")
    else:
        causes.names("spec.group", group, check_dns_subdomain(group))
        if "." not in group:
            causes.invalid("spec.group", group, "should be a domain with at least one dot")
    if not plural:
        causes.required("spec.names.plural")
    else:
        causes.names("spec.names.plural", plural, check_dns_label(plural))
    for field in ("kind", "listKind"):
        if not names.get(field):
            causes.required(f"spec.names.{field}")
    name = (crd.get("metadata") or {}).get("name")
    if plural and group and name != f"{plural}.{group}":
        causes.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
    scope = spec.get("scope")
    if scope not in _SCOPES:
        causes.not_supported("spec.scope", scope or "", _SCOPES)
    _check_crd_versions(causes, spec.get("versions"))
    if old is not None:
        old_spec = old.get("spec") or {}
        for field in ("group", "scope"):
            if spec.get(field) != old_spec.get(field):
                causes.immutable(f"spec.{field}", spec.get(field))


def _check_crd_versions(causes: Causes, versions: Any) -> None:
    if not isinstance(versions, list) or not versions:
        causes.required("spec.versions", "must have exactly one version marked as storage version")
        return
    storage = 0
    seen: set[str] = set()
    for i, version in enumerate(versions):
        here = f"spec.versions[{i}]"
        if not isinstance(version, Mapping):
            causes.invalid(here, version, "must be an object")
            continue
        name = str(version.get("name") or "")
        if not name:
            causes.required(f"{here}.name")
        else:
            causes.names(f"{here}.name", name, check_dns_label(name))
            if name in seen:
                causes.duplicate(f"{here}.name", name)
            seen.add(name)
        storage += version.get("storage") is True
        schema = (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), Mapping) \
            else None
        if isinstance(schema, Mapping):
            try:
                CustomSchema(schema)
            except RuleError as err:
                causes.invalid(f"{here}.schema.openAPIV3Schema", "object", f"compilation failed: {err}")
    if storage != 1:
        causes.invalid("spec.versions", storage, "must have exactly one version marked as storage version")
