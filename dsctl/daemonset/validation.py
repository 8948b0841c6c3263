"""Can the controller act on this DaemonSet at all? Problems named by field path.

kube-apiserver rejects most of these for ``apps/v1``, but the CRD mode's schema is looser and
an old or foreign API server may let anything through. Acting on such an object would be
worse than refusing: a selector that does not select the template's labels makes every
created pod an orphan, so the controller would create pods forever. Each problem becomes a
Warning event and a status condition naming the field, and the DaemonSet is left alone until
it changes. Everything else (including unknown extra fields) is acted on as usual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dsctl_api.intstr import IntStrError, validate_int_or_percent
from dsctl_api.labels import SelectorError, selector_from_label_selector
from dsctl_api.objects import as_list, as_map, spec

__all__ = ["MAX_TOLERATIONS", "Problem", "validate_daemonset"]

MAX_TOLERATIONS = 10_000
"""Beyond this a template is treated as hostile rather than merely large."""

_STRATEGIES = ("RollingUpdate", "OnDelete")


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason the DaemonSet cannot be reconciled."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _intstr(value: Any, path: str, problems: list[Problem]) -> None:
    if value is None:
        return
    try:
        validate_int_or_percent(value)
    except IntStrError as exc:
        problems.append(Problem(path, str(exc)))
        return
    if isinstance(value, str) and int(value[:-1]) > 100:
        problems.append(Problem(path, f"{value!r} is more than 100%"))


def _non_negative_int(value: Any, path: str, problems: list[Problem]) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(Problem(path, f"must be a non-negative integer, not {value!r}"))


def validate_daemonset(ds: Mapping[str, Any]) -> list[Problem]:
    """Every problem that prevents reconciling ``ds``; empty when it can be acted on."""
    problems: list[Problem] = []
    ds_spec = spec(ds)
    template = as_map(ds_spec.get("template"))
    template_labels = as_map(as_map(template.get("metadata")).get("labels"))
    try:
        selector = selector_from_label_selector(ds_spec.get("selector"))
    except SelectorError as exc:
        problems.append(Problem("spec.selector", str(exc)))
    else:
        if selector.nothing:
            problems.append(Problem("spec.selector", "is required"))
        elif not selector.matches({str(k): str(v) for k, v in template_labels.items()}):
            problems.append(Problem("spec.selector", "does not match spec.template.metadata.labels"))
    if not template_labels:
        problems.append(Problem("spec.template.metadata.labels", "must not be empty"))
    pod_spec = as_map(template.get("spec"))
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.append(Problem("spec.template.spec.containers", "must have at least one container"))
    else:
        for index, container in enumerate(containers):
            if not as_map(container).get("image"):
                problems.append(Problem(f"spec.template.spec.containers[{index}].image", "is required"))
    tolerations = pod_spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        problems.append(Problem("spec.template.spec.tolerations", "must be a list"))
    elif len(as_list(tolerations)) > MAX_TOLERATIONS:
        problems.append(Problem("spec.template.spec.tolerations",
                                f"{len(as_list(tolerations))} entries is more than {MAX_TOLERATIONS}"))
    strategy = as_map(ds_spec.get("updateStrategy"))
    kind = strategy.get("type", "RollingUpdate")
    if kind not in _STRATEGIES:
        problems.append(Problem("spec.updateStrategy.type", f"{kind!r} is not one of {', '.join(_STRATEGIES)}"))
    rolling = as_map(strategy.get("rollingUpdate"))
    _intstr(rolling.get("maxUnavailable"), "spec.updateStrategy.rollingUpdate.maxUnavailable", problems)
    _intstr(rolling.get("maxSurge"), "spec.updateStrategy.rollingUpdate.maxSurge", problems)
    _non_negative_int(ds_spec.get("minReadySeconds"), "spec.minReadySeconds", problems)
    _non_negative_int(ds_spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit", problems)
    return problems
