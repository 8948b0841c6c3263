"""The PodDisruptionBudget a DaemonSet with ``maxDisruptions`` owns: what it must say, and the write.

A PodDisruptionBudget takes only an integer ``minAvailable`` for DaemonSet pods (the disruption
controller cannot scale a percentage or ``maxUnavailable`` against a DaemonSet), and such a
number goes stale as nodes come and go (kubernetes 106309). The controller knows the number at
every sync, so it keeps the budget itself:

- name and namespace: the DaemonSet's; a controller owner reference to the DaemonSet
  (``blockOwnerDeletion``), so garbage collection removes it with the DaemonSet;
- ``selector``: the DaemonSet's;
- ``minAvailable`` = desired − skipped − ``maxDisruptions`` + extra, floored at 0, where
  *desired* is the nodes that should run the pod, *skipped* the nodes left out as unhealthy
  (their pods are not expected to be available), and *extra* the running pods beyond one per
  node that should run one (a surge pod beside its old pod, an excess pod, a pod on a node
  that should not run it), counting the surge creates of the sync itself. The budget counts
  every Ready pod as healthy; without *extra* each surge pod would let one more eviction
  through, and an eviction could take a node's only pod (ADR 0184);
- ``unhealthyPodEvictionPolicy: AlwaysAllow``: evicting a pod that is not Ready costs no
  availability, and a drain must not wait on a broken agent.

It is written only when one of these differs from what the cache holds, with a JSON patch that
first tests the object's UID. Removing ``maxDisruptions`` deletes it (a UID precondition). A
budget of that name that the DaemonSet does not own is never touched: a Warning event and the
``DisruptionBudgetFailure`` condition say so. An unreadable ``maxDisruptions`` leaves the budget
as it is, with the same two signals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dsctl.daemonset.extensions import MAX_DISRUPTIONS_FIELD, InvalidControl
from dsctl.daemonset.podplan import Event
from dsctl.daemonset.reasons import DISRUPTION_BUDGET_NOT_OWNED, INVALID_ROLLOUT_CONTROL
from dsctl.daemonset.template import owner_reference
from dsctl_api.objects import deletion_timestamp, name, namespace, spec, uid
from dsctl_api.pods import controller_ref

__all__ = [
    "ALWAYS_ALLOW",
    "MANAGED_BY",
    "BudgetPlan",
    "BudgetWrite",
    "budget_key",
    "min_available",
    "plan_budget",
]

Obj = Mapping[str, Any]

ALWAYS_ALLOW = "AlwaysAllow"
MANAGED_BY = {"app.kubernetes.io/managed-by": "dsctl"}
"""The label every budget the controller writes carries, for ``kubectl get pdb -l``."""


@dataclass(frozen=True, slots=True)
class BudgetWrite:
    """One write of the DaemonSet's PodDisruptionBudget.

    ``create``: ``body`` is the object. ``patch``: ``body`` is a JSON patch whose first operation
    tests the UID. ``delete``: ``uid`` is the precondition.
    """

    verb: Literal["create", "patch", "delete"]
    name: str
    namespace: str
    body: Any = None
    uid: str = ""
    min_available: int | None = None


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    """The write (if any), and what to say when the budget cannot be kept (reason, message)."""

    write: BudgetWrite | None = None
    problem: tuple[str, str] | None = None
    events: tuple[Event, ...] = field(default=())


NOTHING = BudgetPlan()


def min_available(*, desired: int, skipped: int, extra: int, max_disruptions: int) -> int:
    """The budget's ``minAvailable`` (see the module docstring)."""
    return max(0, desired - skipped - max_disruptions + extra)


def _wanted_spec(ds: Obj, minimum: int) -> dict[str, Any]:
    return {"minAvailable": minimum, "selector": spec(ds).get("selector"), "unhealthyPodEvictionPolicy": ALWAYS_ALLOW}


def plan_budget(
    ds: Obj, existing: Obj | None, *, max_disruptions: int | InvalidControl | None, desired: int, skipped: int,
    extra: int, api_version: str, kind: str,
) -> BudgetPlan:
    """What to do about ``ds``'s budget, given the cached PodDisruptionBudget of its name."""
    owned = existing is not None and (controller_ref(existing) or {}).get("uid") == uid(ds)
    where = f"{namespace(ds)}/{name(ds)}"
    if isinstance(max_disruptions, InvalidControl):
        message = f"{max_disruptions.field}: {max_disruptions.message}; the PodDisruptionBudget is left as it is"
        return BudgetPlan(problem=(INVALID_ROLLOUT_CONTROL, message),
                          events=(Event("Warning", INVALID_ROLLOUT_CONTROL, message),))
    if max_disruptions is None:
        if existing is not None and owned and not deletion_timestamp(existing):
            return BudgetPlan(write=BudgetWrite("delete", name(ds), namespace(ds), uid=uid(existing)))
        return NOTHING
    if existing is not None and not owned:
        message = (f"PodDisruptionBudget {where} is not controlled by this DaemonSet: it is left alone and "
                   f"{MAX_DISRUPTIONS_FIELD.name} is not enforced; rename or delete it")
        return BudgetPlan(problem=(DISRUPTION_BUDGET_NOT_OWNED, message),
                          events=(Event("Warning", DISRUPTION_BUDGET_NOT_OWNED, message),))
    minimum = min_available(desired=desired, skipped=skipped, extra=extra, max_disruptions=max_disruptions)
    wanted = _wanted_spec(ds, minimum)
    if existing is None:
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name(ds), "namespace": namespace(ds), "labels": dict(MANAGED_BY),
                             "ownerReferences": [owner_reference(ds, api_version=api_version, kind=kind)]},
                "spec": wanted}
        return BudgetPlan(write=BudgetWrite("create", name(ds), namespace(ds), body=body, min_available=minimum))
    if deletion_timestamp(existing):
        return NOTHING  # its successor is created once it is gone
    current = spec(existing)
    ops: list[dict[str, Any]] = []
    for key, value in wanted.items():
        if current.get(key) != value:
            ops.append({"op": "add", "path": f"/spec/{key}", "value": value})
    if "maxUnavailable" in current:
        ops.append({"op": "remove", "path": "/spec/maxUnavailable"})
    if not ops:
        return NOTHING
    test = {"op": "test", "path": "/metadata/uid", "value": uid(existing)}
    return BudgetPlan(write=BudgetWrite("patch", name(ds), namespace(ds), body=[test, *ops], uid=uid(existing),
                                        min_available=minimum))


def budget_key(ds: Obj) -> str:
    """The cache key of ``ds``'s budget: its own ``namespace/name``."""
    return f"{namespace(ds)}/{name(ds)}"
