"""The ``pods/eviction`` subresource: a delete that asks the pod's PodDisruptionBudget first.

Follows kube-apiserver's EvictionREST (``pkg/registry/core/pod/storage/eviction.go``):

1. The Eviction's ``metadata.name`` must be the pod's (400 otherwise); the pod must exist.
2. A pod that is Pending, Succeeded, Failed or already terminating is deleted at once: it
   disrupts nothing more.
3. Otherwise the budgets matching the pod are looked up. More than one is a 500 (upstream
   refuses to choose); none means a plain delete.
4. An unready pod is deleted without spending the budget when the PDB's
   ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (default ``IfHealthyBudget``) when the
   budget is already met. Such deletes carry a resourceVersion precondition, so a pod that
   turned Ready meanwhile answers 429 instead of being taken.
5. Else the budget is checked and spent: a PDB the controller has not observed since its last
   change, or with ``disruptionsAllowed`` 0, answers 429 ``TooManyRequests`` with a
   ``DisruptionBudget`` cause (which ``kubectl drain`` retries every 5 s); a negative count
   or an overfull ``disruptedPods`` map is 403. A granted eviction decrements
   ``disruptionsAllowed`` and records the pod in ``disruptedPods`` through the status
   subresource, so the disruption controller does not count it while it terminates.
6. The pod gets the ``DisruptionTarget`` condition (``EvictionByEvictionAPI``), then is deleted
   gracefully with the Eviction's ``deleteOptions``.

``dryRun`` runs every check and writes nothing.
"""

from __future__ import annotations

from typing import Any

import structlog

from dsctl_sim.disruption import PDB_KEY, disallowed_condition, is_pod_ready, matching_budgets
from dsctl_sim.errors import BadRequest, Conflict, Forbidden, NotFound, StorageError
from dsctl_sim.storage import Storage

__all__ = ["DISRUPTION_BUDGET_CAUSE", "MAX_DISRUPTED_PODS", "BudgetRefusal", "evict"]

log = structlog.get_logger(__name__)

DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
MAX_DISRUPTED_PODS = 2000
_VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."

Obj = dict[str, Any]


class BudgetRefusal(StorageError):
    """429 with a ``DisruptionBudget`` cause. ``retry_after`` (seconds, None for none) becomes the
    ``Retry-After`` header: upstream suggests 10 s only while the budget is being processed."""

    code = 429
    reason = "TooManyRequests"

    def __init__(self, cause: str, *, retry_after: int | None = None) -> None:
        details: dict[str, Any] = {"causes": [{"reason": DISRUPTION_BUDGET_CAUSE, "message": cause}]}
        if retry_after:
            details["retryAfterSeconds"] = retry_after
        super().__init__(_VIOLATES, details=details)
        self.retry_after = retry_after


def _still_processing(name: str) -> BudgetRefusal:
    return BudgetRefusal(f"The disruption budget {name} is still being processed by the server.", retry_after=10)


def _forbidden(name: str, why: str) -> Forbidden:
    return Forbidden(f'poddisruptionbudgets.policy "{name}" is forbidden: {why}',
                     details={"name": name, "group": "policy", "kind": "poddisruptionbudgets"})


def _can_ignore_budget(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


def _enforce_rv(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _spend(storage: Storage, pdb: Obj, pod_name: str, *, dry_run: bool) -> None:
    """checkAndDecrement: refuse, or take one disruption from the budget and record the pod."""
    name = str(pdb["metadata"]["name"])
    status = dict(pdb.get("status") or {})
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise _still_processing(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        raise _forbidden(name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        raise BudgetRefusal(f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy "
                            f"pods and has {int(status.get('currentHealthy') or 0)} currently")
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        status["conditions"] = disallowed_condition(0, now=storage.now(), previous=status.get("conditions") or [])
    if dry_run:
        return
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: storage.timestamp()}
    storage.update(PDB_KEY, {**pdb, "metadata": dict(pdb["metadata"]), "status": status}, subresource="status")


def _mark_and_delete(storage: Storage, pod: Obj, options: Obj, *, rv: str | None, dry_run: bool) -> None:
    """addConditionAndDeletePod: the DisruptionTarget condition, then a graceful delete."""
    meta = pod["metadata"]
    pre = options.get("preconditions") or {}
    uid = pre.get("uid")
    if dry_run:
        if rv is not None and rv != meta["resourceVersion"]:
            raise Conflict.modified(plural="pods", group="", name=str(meta["name"]))
        return
    if (uid and uid != meta["uid"]) or (rv is not None and rv != meta["resourceVersion"]):
        raise Conflict(f'Operation cannot be fulfilled on Pod "{meta["name"]}": the object might have been '
                       "modified or deleted and then recreated")
    status = dict(pod.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
    conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                       "message": "Eviction API: evicting", "lastProbeTime": None,
                       "lastTransitionTime": storage.timestamp()})
    marked = storage.update("pods", {**pod, "metadata": dict(meta), "status": {**status, "conditions": conditions}},
                            subresource="status")
    storage.delete("pods", meta.get("namespace"), str(meta["name"]), uid=uid,
                   resource_version=marked["metadata"]["resourceVersion"] if rv is not None else None,
                   grace_period_seconds=options.get("gracePeriodSeconds"))


def evict(storage: Storage, *, namespace: str, name: str, eviction: Obj, dry_run: bool) -> None:
    """Evict pod ``namespace/name`` as described by the ``Eviction`` body; raises the refusal."""
    if str((eviction.get("metadata") or {}).get("name") or "") != name:
        raise BadRequest("name in URL does not match name in Eviction object")
    options = eviction.get("deleteOptions") or {}
    if not isinstance(options, dict):
        raise BadRequest("deleteOptions must be an object")
    dry_run = dry_run or bool(options.get("dryRun"))
    asked_rv = (options.get("preconditions") or {}).get("resourceVersion")
    pod = storage.get("pods", namespace, name)
    if pod is None:
        raise NotFound.object(plural="pods", group="", name=name)
    if _can_ignore_budget(pod):
        rv = asked_rv if asked_rv is not None else (pod["metadata"]["resourceVersion"] if _enforce_rv(pod) else None)
        _mark_and_delete(storage, pod, options, rv=rv, dry_run=dry_run)
        return
    budgets, _ = storage.list(PDB_KEY, namespace=namespace)
    matching = matching_budgets(budgets, pod)
    if len(matching) > 1:
        raise StorageError("This pod has more than one PodDisruptionBudget, which the eviction subresource does "
                           "not support.", code=500, reason="")
    pinned = False
    if matching:
        pdb = matching[0]
        status = pdb.get("status") or {}
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
        healthy, desired = int(status.get("currentHealthy") or 0), int(status.get("desiredHealthy") or 0)
        if not is_pod_ready(pod) and (policy == "AlwaysAllow" or (healthy >= desired > 0)):
            pinned = True
        else:
            _spend(storage, pdb, name, dry_run=dry_run)
    rv = asked_rv
    if pinned and rv is None:
        rv = pod["metadata"]["resourceVersion"]
    try:
        _mark_and_delete(storage, pod, options, rv=rv, dry_run=dry_run)
    except Conflict:
        if pinned and asked_rv is None:
            raise _still_processing(str(matching[0]["metadata"]["name"])) from None
        raise
    log.debug("sim_pod_evicted", pod=f"{namespace}/{name}", budget=matching[0]["metadata"]["name"] if matching else "",
              dry_run=dry_run)
