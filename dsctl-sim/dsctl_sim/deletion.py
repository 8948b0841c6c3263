"""What a delete does to one object: remove it now, mark it, or leave it as it is.

kube-apiserver's deletion rules, as a pure decision over the stored object:

- preconditions (``uid``, ``resourceVersion``) must match, else 409;
- ``propagationPolicy`` Orphan/Foreground adds the ``orphan``/``foregroundDeletion``
  finalizer when the object has dependents (the GC loop then does the work);
- a scheduled, running pod waits its grace period (``deletionTimestamp`` in the future) for
  the kubelet; a repeated delete may only shorten the wait;
- an object with finalizers is marked with ``deletionTimestamp`` and stays until an update
  empties them; otherwise it is removed at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsctl_sim.errors import BadRequest, Conflict
from dsctl_sim.registry import ResourceType
from dsctl_sim.strategy import graceful_seconds

__all__ = ["check_preconditions", "deletion_outcome", "is_finished"]

Obj = dict[str, Any]

_POLICY_FINALIZERS = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}


def check_preconditions(obj: Obj, *, uid: str | None, resource_version: str | None) -> None:
    """409 Conflict when a delete precondition does not match the stored object."""
    meta = obj["metadata"]
    if uid is not None and uid != meta["uid"]:
        raise Conflict(f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}")
    if resource_version is not None and str(resource_version) != meta["resourceVersion"]:
        raise Conflict(f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                       f"ResourceVersion in object meta: {meta['resourceVersion']}")


def deletion_outcome(
    rt: ResourceType,
    obj: Obj,
    *,
    grace_period_seconds: int | None,
    propagation_policy: str | None,
    has_dependents: bool,
    timestamp: Callable[[float], str],
) -> tuple[str, Obj]:
    """``("remove", obj)``, ``("unchanged", obj)`` or ``("mark", new_obj)``.

    ``timestamp(offset)`` renders now + offset seconds for ``deletionTimestamp``.
    """
    if propagation_policy not in (None, "", "Orphan", "Foreground", "Background"):
        raise BadRequest(f"unknown propagationPolicy {propagation_policy!r}")
    meta = obj["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    extra = _POLICY_FINALIZERS.get(propagation_policy or "")
    if extra and extra not in finalizers and has_dependents:
        finalizers.append(extra)
    grace = graceful_seconds(rt, obj, grace_period_seconds)
    already = meta.get("deletionTimestamp")
    if already is not None:
        remaining = meta.get("deletionGracePeriodSeconds") or 0
        grace = min(grace, remaining)
        unchanged = finalizers == list(meta.get("finalizers") or [])
        if grace == remaining and unchanged and (finalizers or grace):
            return "unchanged", obj
    if not finalizers and grace == 0:
        return "remove", obj
    new_meta = dict(meta)
    new_meta["finalizers"] = finalizers
    if not finalizers:
        del new_meta["finalizers"]
    new_meta["deletionTimestamp"] = timestamp(grace)
    new_meta["deletionGracePeriodSeconds"] = grace
    if already is None and finalizers and "generation" in new_meta:
        new_meta["generation"] += 1
    return "mark", {**obj, "metadata": new_meta}


def is_finished(obj: Obj) -> bool:
    """A marked object whose finalizers are gone and whose grace period is over."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and not meta.get(
        "deletionGracePeriodSeconds")
