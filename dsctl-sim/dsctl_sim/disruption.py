"""PodDisruptionBudget semantics shared by the eviction subresource and the disruption controller.

Pure functions over dicts, following kube-controller-manager's disruption controller and
kube-apiserver's PDB strategy:

- ``budget_status`` computes ``expectedPods``, ``desiredHealthy``, ``currentHealthy`` and
  ``disruptionsAllowed`` from the PDB and its pods. ``minAvailable`` as a number counts the
  matching pods; ``maxUnavailable`` and percentages need the owning controllers' scale, which
  the simulator serves for no kind (kube-controller-manager knows ReplicaSets, Deployments,
  StatefulSets and the ``scale`` subresource, and DaemonSets are none of these), so such a budget
  over controlled pods fails safe (``SyncFailed``, no disruption allowed), exactly as it does
  for DaemonSet pods on a real cluster. Pods without a controller are left out of the count.
- A pod evicted recently is listed in ``status.disruptedPods`` by the eviction handler; until
  it is deleted, or ``DELETION_TIMEOUT`` passes, it does not count as healthy.
- ``matching_budgets`` is how the eviction handler finds a pod's budgets: same namespace, the
  selector matches (a null selector matches nothing, ``{}`` matches everything in policy/v1).
- ``validate_pdb`` holds the rules kube-apiserver applies to a PDB's spec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dsctl_api.intstr import IntStrError, scaled_value, validate_int_or_percent
from dsctl_api.labels import Selector, SelectorError, selector_from_label_selector
from dsctl_api.timefmt import format_rfc3339, parse_rfc3339

if TYPE_CHECKING:  # validation's dispatch imports this module: no import cycle at run time
    from dsctl_sim.validation.causes import Causes

__all__ = [
    "DELETION_TIMEOUT",
    "DISRUPTION_ALLOWED",
    "PDB_KEY",
    "BudgetStatus",
    "budget_selector",
    "budget_status",
    "disallowed_condition",
    "failed_status",
    "is_pod_ready",
    "matching_budgets",
    "validate_pdb",
]

PDB_KEY = "policy/poddisruptionbudgets"
"""Storage key of PodDisruptionBudgets."""
DELETION_TIMEOUT = 120.0
"""Seconds an approved eviction keeps its pod out of ``currentHealthy`` before the pod is
deemed not to be going away after all (kube-controller-manager's ``DeletionTimeout``)."""
DISRUPTION_ALLOWED = "DisruptionAllowed"
_POLICIES = ("IfHealthyBudget", "AlwaysAllow")

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Obj:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def budget_selector(pdb: Obj) -> Selector:
    """The PDB's pod selector; an invalid one selects nothing, as upstream skips it."""
    try:
        return selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return Selector(nothing=True)


def matching_budgets(budgets: Iterable[dict[str, Any]], pod: Obj) -> list[dict[str, Any]]:
    """The budgets in the pod's namespace whose selector matches its labels."""
    namespace = _meta(pod).get("namespace")
    labels = _meta(pod).get("labels") or {}
    return [b for b in budgets if _meta(b).get("namespace") == namespace and budget_selector(b).matches(labels)]


def is_pod_ready(pod: Obj) -> bool:
    """The pod's Ready condition is True."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """A computed PDB status and when to look again (an eviction record expiring), if ever."""

    status: dict[str, Any]
    recheck_at: float | None


def disallowed_condition(allowed: int, *, now: float, previous: Iterable[Any] = (), reason: str = "",
                         message: str = "") -> list[dict[str, Any]]:
    """The ``DisruptionAllowed`` condition for ``allowed``, keeping other conditions and the
    transition time when the status does not change."""
    status = "True" if allowed > 0 else "False"
    reason = reason or ("SufficientPods" if allowed > 0 else "InsufficientPods")
    kept = [c for c in previous if isinstance(c, Mapping) and c.get("type") != DISRUPTION_ALLOWED]
    old = next((c for c in previous if isinstance(c, Mapping) and c.get("type") == DISRUPTION_ALLOWED), None)
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == status else None
    condition = {"type": DISRUPTION_ALLOWED, "status": status, "reason": reason, "message": message,
                 "lastTransitionTime": since or format_rfc3339(int(now))}
    if old is not None and "observedGeneration" in old:
        condition["observedGeneration"] = old["observedGeneration"]
    return [*[dict(c) for c in kept], condition]


def failed_status(pdb: Obj, *, now: float, message: str) -> dict[str, Any]:
    """Fail safe: nothing may be disrupted while the budget cannot be computed."""
    old = dict(pdb.get("status") or {})
    return {**old, "observedGeneration": int(_meta(pdb).get("generation") or 0), "disruptionsAllowed": 0,
            "conditions": disallowed_condition(0, now=now, previous=old.get("conditions") or [],
                                               reason="SyncFailed", message=message)}


def _expected_scale(pods: Sequence[Obj]) -> int:
    for pod in pods:
        owner = next((r for r in _meta(pod).get("ownerReferences") or []
                      if isinstance(r, Mapping) and r.get("controller") is True), None)
        if owner is not None:
            raise LookupError(f'found no controllers for pod "{_meta(pod).get("name")}"')
    return 0


def _expected(pdb: Obj, pods: Sequence[Obj]) -> tuple[int, int]:
    spec = pdb.get("spec") or {}
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_unavailable is not None:
        expected = _expected_scale(pods)
        return expected, max(0, expected - scaled_value(max_unavailable, expected, round_up=True))
    if isinstance(min_available, int) and not isinstance(min_available, bool):
        return len(pods), min_available
    if isinstance(min_available, str):
        expected = _expected_scale(pods)
        return expected, scaled_value(min_available, expected, round_up=True)
    return len(pods), 0


def budget_status(pdb: Obj, pods: Sequence[Obj], *, now: float) -> BudgetStatus:
    """The status the disruption controller writes for ``pdb`` over its matching ``pods``."""
    old = dict(pdb.get("status") or {})
    try:
        expected, desired = _expected(pdb, pods)
    except (LookupError, IntStrError) as err:
        return BudgetStatus(failed_status(pdb, now=now, message=str(err)), None)
    by_name = {str(_meta(p).get("name")): p for p in pods}
    disrupted: dict[str, str] = {}
    recheck: float | None = None
    for name, stamp in (old.get("disruptedPods") or {}).items():
        pod = by_name.get(name)
        if pod is None or _meta(pod).get("deletionTimestamp"):
            continue
        try:
            expires = parse_rfc3339(stamp) + DELETION_TIMEOUT
        except (ValueError, TypeError):
            continue
        if expires <= now:
            continue
        disrupted[name] = stamp
        recheck = expires if recheck is None else min(recheck, expires)
    healthy = sum(1 for name, p in by_name.items()
                  if not _meta(p).get("deletionTimestamp") and name not in disrupted and is_pod_ready(p))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    status: dict[str, Any] = {
        **old,
        "observedGeneration": int(_meta(pdb).get("generation") or 0),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": disallowed_condition(allowed, now=now, previous=old.get("conditions") or []),
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    else:
        status.pop("disruptedPods", None)
    return BudgetStatus(status, recheck)


def _check_int_or_percent(causes: Causes, field: str, value: Any) -> None:
    if value is None:
        return
    try:
        validate_int_or_percent(value)
    except IntStrError:
        causes.invalid(field, value, "must be an integer or percentage (e.g '5%')")
        return
    if isinstance(value, str) and int(value[:-1]) > 100:
        causes.invalid(field, value, "must not be greater than 100%")


def validate_pdb(causes: Causes, pdb: Obj, old: Obj | None) -> None:
    """kube-apiserver's checks of a PDB spec (policy/v1 allows updating every field)."""
    spec = pdb.get("spec") or {}
    if not isinstance(spec, Mapping):
        causes.invalid("spec", spec, "must be an object")
        return
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        causes.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
    _check_int_or_percent(causes, "spec.minAvailable", min_available)
    _check_int_or_percent(causes, "spec.maxUnavailable", max_unavailable)
    selector = spec.get("selector")
    if selector is not None:
        try:
            selector_from_label_selector(selector)
        except SelectorError as err:
            causes.invalid("spec.selector", selector, str(err))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _POLICIES:
        causes.not_supported("spec.unhealthyPodEvictionPolicy", policy, _POLICIES)
