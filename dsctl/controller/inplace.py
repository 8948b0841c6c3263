"""Carries out a plan's in-place updates (``Plan.updates``): one read and one patch per pod.

Kept apart from ``PlanExecutor.execute`` (creates and deletes), on the executor's client,
recorder and burst. The live read gives what the cache projection drops: container indexes,
whether the pod has annotations at all, and restart counts as of now. Every fact the patch
relies on is ``test``ed (see ``dsctl.daemonset.inplace.in_place_patch``), so a pod that
changed meanwhile is refused with 422 and planned again by the next sync. Each pod is
recorded in ``PendingPatches`` before its patch is sent, so no sync plans on a cache that
does not show it yet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

from dsctl.daemonset.inplace import in_place_patch
from dsctl.daemonset.inplacewait import PendingPatches
from dsctl.daemonset.plan import PodUpdate
from dsctl.daemonset.template import HASH_LABEL
from dsctl.kube import errors
from dsctl.kube.resources import PODS

from .executor import PlanExecutor

__all__ = ["patch_in_place"]

log = structlog.get_logger(__name__)


async def patch_in_place(
    executor: PlanExecutor, *, key: str, ds: Mapping[str, Any], updates: tuple[PodUpdate, ...],
    pending: PendingPatches,
) -> tuple[int, list[str]]:
    """Patch at most ``executor.burst`` of ``updates``; returns the number patched and the errors."""
    batch = updates[: max(0, executor.burst)]
    outcomes = await asyncio.gather(*(_patch_one(executor, key, ds, u, pending) for u in batch))
    done, failures = 0, []
    for update, err in zip(batch, outcomes, strict=True):
        if err is None:
            done += 1
        elif err:
            failures.append(f"in-place update {update.pod.namespace}/{update.pod.name}: {err}")
    return done, failures


async def _patch_one(
    executor: PlanExecutor, key: str, ds: Mapping[str, Any], update: PodUpdate, pending: PendingPatches
) -> str | None:
    """None when patched; "" when the pod is gone or moved on (nothing to report); else the error."""
    ref = update.pod
    pod_key = f"{ref.namespace}/{ref.name}"
    try:
        live = await executor.client.get(PODS, ref.name, namespace=ref.namespace)
    except errors.NotFound:
        return ""
    except errors.ApiError as exc:
        return f"{exc.reason or exc.status}: {exc.message}"
    ops = in_place_patch(update, live)
    if ops is None:
        log.info("in_place_skipped", daemonset=key, pod=pod_key, reason="pod changed since the plan")
        return ""
    pending.expect(key, pod=pod_key, pod_uid=ref.uid, hash=update.hash)
    try:
        await executor.client.patch(PODS, ref.name, ops, namespace=ref.namespace, patch_type="json")
    except (errors.NotFound, errors.Invalid, errors.Conflict) as exc:
        # A failed test (422), a vanished pod: the next sync plans again on a fresher cache.
        pending.cancel(key, pod=pod_key)
        log.info("in_place_refused", daemonset=key, pod=pod_key, reason=exc.reason or exc.status)
        return ""
    except errors.ApiError as exc:
        if 0 < exc.status < 500 or not await _landed(executor, ref.name, ref.namespace, update.hash):
            pending.cancel(key, pod=pod_key)
        message = f"{exc.reason or exc.status}: {exc.message}"
        executor.recorder.record(ds, "Warning", "FailedInPlaceUpdate", f"Error updating pod {ref.name}: {message}")
        return message
    images = ", ".join(f"{c.container}={c.new}" for c in update.images)
    executor.recorder.record(ds, "Normal", "SuccessfulInPlaceUpdate", f"Updated pod in place: {ref.name} ({images})")
    return None


async def _landed(executor: PlanExecutor, name: str, namespace: str, hash_: str) -> bool:
    """After a patch with no answer (5xx, lost connection): did it apply? Unknown counts as yes,
    so the pod stays expected (until the TTL) rather than being planned on a stale cache."""
    try:
        live = await executor.client.get(PODS, name, namespace=namespace)
    except errors.NotFound:
        return False
    except errors.ApiError:
        return True
    return ((live.get("metadata") or {}).get("labels") or {}).get(HASH_LABEL) == hash_
