"""Type-specific validation for Pods, DaemonSets and ControllerRevisions.

The DaemonSet rules are the ones a controller and ``kubectl apply`` exercise: a non-empty
selector that matches the template labels and never changes, a template that restarts
``Always``, a known update strategy with sane ``maxUnavailable``/``maxSurge``, and non-negative
counters. Pod updates may only change the few spec fields kube-apiserver lets change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from dsctl_api.labels import SelectorError, selector_from_label_selector
from dsctl_sim.rawdata import data_unchanged
from dsctl_sim.validation.causes import (
    Causes,
    check_label_value,
    check_labels,
    check_qualified_name,
    format_value,
    is_int,
)
from dsctl_sim.validation.meta import check_annotations
from dsctl_sim.validation.podspec import validate_pod_spec

__all__ = [
    "validate_controller_revision",
    "validate_daemonset",
    "validate_daemonset_status",
    "validate_pod",
]

_PERCENT = re.compile(r"^[0-9]+%$")
_UPDATE_STRATEGIES = ("OnDelete", "RollingUpdate")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_pod(causes: Causes, pod: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """A Pod's spec, and on update the spec fields that may not change."""
    validate_pod_spec(causes, pod.get("spec"), "spec")
    if old is not None:
        _check_pod_update(causes, pod.get("spec") or {}, old.get("spec") or {})


def _check_pod_update(causes: Causes, spec: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    # Overlay the mutable fields of the new spec onto a copy of the old one: if the result is
    # the new spec, nothing else changed.
    allowed = orjson.loads(orjson.dumps(old))
    for field in ("containers", "initContainers"):
        new_list, old_list = spec.get(field) or [], allowed.get(field) or []
        if len(new_list) == len(old_list):
            for new_c, old_c in zip(new_list, old_list, strict=True):
                if isinstance(new_c, Mapping) and isinstance(old_c, dict) and "image" in new_c:
                    old_c["image"] = new_c["image"]
    for field in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
        if field in spec:
            allowed[field] = spec[field]
    old_tolerations = list(old.get("tolerations") or [])
    new_tolerations = list(spec.get("tolerations") or [])
    if all(t in new_tolerations for t in old_tolerations):
        allowed["tolerations"] = new_tolerations
    old_gates = list(old.get("schedulingGates") or [])
    new_gates = list(spec.get("schedulingGates") or [])
    if all(g in old_gates for g in new_gates):
        allowed["schedulingGates"] = new_gates
    if _strip_empty(allowed) != _strip_empty(spec):
        causes.forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`, "
            "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only "
            "additions to existing tolerations), `spec.terminationGracePeriodSeconds` and removals "
            "from `spec.schedulingGates`",
        )


def _strip_empty(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if v not in (None, [], {})}


def validate_daemonset(causes: Causes, ds: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """A DaemonSet's spec; on update, the selector is immutable."""
    spec = ds.get("spec")
    if not isinstance(spec, Mapping):
        causes.required("spec")
        return
    selector = spec.get("selector")
    template = spec.get("template")
    template_labels = (template or {}).get("metadata", {}).get("labels") if isinstance(template, Mapping) else None
    if selector is None:
        causes.required("spec.selector")
    elif _check_label_selector(causes, selector, "spec.selector"):
        compiled = selector_from_label_selector(selector)
        if compiled.empty:
            causes.invalid("spec.selector", selector, "empty selector is invalid for daemonset")
        elif not compiled.matches(template_labels if isinstance(template_labels, Mapping) else {}):
            causes.invalid(
                "spec.template.metadata.labels", template_labels or {}, "`selector` does not match template `labels`"
            )
    if not isinstance(template, Mapping):
        causes.required("spec.template")
    else:
        _check_template(causes, template, "spec.template")
    causes.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds"))
    causes.nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    _check_update_strategy(causes, spec.get("updateStrategy"), "spec.updateStrategy")
    if old is not None and selector != (old.get("spec") or {}).get("selector"):
        causes.immutable("spec.selector", selector)


def _check_template(causes: Causes, template: Mapping[str, Any], path: str) -> None:
    meta = template.get("metadata") or {}
    if isinstance(meta, Mapping):
        check_labels(causes, f"{path}.metadata.labels", meta.get("labels"))
        check_annotations(causes, f"{path}.metadata.annotations", meta.get("annotations"))
    spec = template.get("spec")
    validate_pod_spec(causes, spec, f"{path}.spec")
    if not isinstance(spec, Mapping):
        return
    policy = spec.get("restartPolicy")
    if policy and policy != "Always":
        causes.not_supported(f"{path}.spec.restartPolicy", policy, ("Always",))
    if spec.get("activeDeadlineSeconds") is not None:
        causes.forbidden(f"{path}.spec.activeDeadlineSeconds", "activeDeadlineSeconds in DaemonSet is not Supported")


def _check_label_selector(causes: Causes, selector: Any, path: str) -> bool:
    """Syntax of a ``metav1.LabelSelector``; True when it compiles."""
    if not isinstance(selector, Mapping):
        causes.invalid(path, selector, "must be an object")
        return False
    before = len(causes)
    check_labels(causes, f"{path}.matchLabels", selector.get("matchLabels"))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        causes.invalid(f"{path}.matchExpressions", expressions, "must be a list")
        return False
    for i, expr in enumerate(expressions):
        here = f"{path}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            causes.invalid(here, expr, "must be an object")
            continue
        causes.names(f"{here}.key", expr.get("key"), check_qualified_name(str(expr.get("key") or "")))
        operator, values = expr.get("operator"), expr.get("values") or []
        if operator not in _SELECTOR_OPERATORS:
            causes.invalid(f"{here}.operator", operator, "not a valid selector operator")
        elif operator in ("In", "NotIn") and not values:
            causes.required(f"{here}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.forbidden(f"{here}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        for value in values:
            causes.names(f"{here}.values", value, check_label_value(str(value)))
    if len(causes) > before:
        return False
    try:
        selector_from_label_selector(selector)
    except SelectorError as exc:
        causes.invalid(path, selector, str(exc))
        return False
    return True


def _check_update_strategy(causes: Causes, strategy: Any, path: str) -> None:
    # ValidateDaemonSetUpdateStrategy: OnDelete takes no further checks (a rollingUpdate beside
    # it is kept and ignored); RollingUpdate needs exactly one of maxUnavailable and maxSurge
    # non-zero, each a non-negative int or a percentage of at most 100%.
    if strategy is None:
        return
    if not isinstance(strategy, Mapping):
        causes.invalid(path, strategy, "must be an object")
        return
    kind = strategy.get("type")
    if kind not in _UPDATE_STRATEGIES:
        causes.not_supported(f"{path}.type", kind, _UPDATE_STRATEGIES)
        return
    if kind == "OnDelete":
        return
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, Mapping):
        causes.required(f"{path}.rollingUpdate")
        return
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    _check_int_or_percent(causes, unavailable, f"{path}.rollingUpdate.maxUnavailable")
    _check_int_or_percent(causes, surge, f"{path}.rollingUpdate.maxSurge")
    has_unavailable = _int_or_percent_value(unavailable) != 0
    has_surge = _int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        causes.add(f"{path}.rollingUpdate.maxSurge", "FieldValueInvalid",
                   f"Invalid value: {_intstr_text(surge)}: may not be set when maxUnavailable is non-zero")
    elif not has_unavailable and not has_surge:
        causes.required(f"{path}.rollingUpdate.maxUnavailable", "cannot be 0 when maxSurge is 0")


def _int_or_percent_value(value: Any) -> int:
    """getIntOrPercentValue: a percentage's number, else the int (a non-numeric string reads 0)."""
    if value is None:
        return 0
    if is_int(value):
        return int(value)
    if isinstance(value, str):
        if _PERCENT.match(value):
            return int(value[:-1])
        try:
            return int(value, 10)
        except ValueError:
            return 0
    return 0


def _intstr_text(value: Any) -> str:
    # IntOrString is a fmt.Stringer, so field errors print it bare: `Invalid value: 10%: ...`.
    return str(value)


_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _check_int_or_percent(causes: Causes, value: Any, path: str) -> None:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if value is None:
        return
    if is_int(value):
        if value < 0:
            causes.invalid(path, value, "must be greater than or equal to 0")
        return
    if not isinstance(value, str):
        causes.add(path, "FieldValueInvalid",
                   f"Invalid value: {format_value(value)}: must be an integer or percentage (e.g '5%')")
        return
    if not _PERCENT.match(value):
        causes.add(path, "FieldValueInvalid", f"Invalid value: {value}: {_PERCENT_MESSAGE}")
        return
    if int(value[:-1]) > 100:
        causes.add(path, "FieldValueInvalid", f"Invalid value: {value}: must not be greater than 100%")


def validate_daemonset_status(causes: Causes, ds: Mapping[str, Any]) -> None:
    """A status-subresource write: every counter must be a non-negative integer."""
    status = ds.get("status") or {}
    if not isinstance(status, Mapping):
        causes.invalid("status", status, "must be an object")
        return
    for field in (
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ):
        causes.nonnegative(f"status.{field}", status.get(field))


def validate_controller_revision(causes: Causes, rev: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """A revision number >= 0 and data present; data never changes after creation, compared
    as the stored bytes, as kube-apiserver compares them (``dsctl_sim.rawdata``)."""
    if "data" not in rev or rev.get("data") is None:
        causes.required("data", "data is mandatory")
    causes.nonnegative("revision", rev.get("revision"))
    if old is not None and not data_unchanged(rev.get("data"), old.get("data")):
        causes.immutable("data", rev.get("data"))
