"""Carries out a plan's in-place updates (``Plan.updates``): one strategic merge patch per pod.

Kept apart from ``PodWriter.execute`` (creates and deletes), on the executor's client,
recorder and burst. The patch (``dsctl.daemonset.inplace.in_place_patch``) is pinned to the
pod's UID and to the resourceVersion the plan was made on, so a pod that changed since
refuses it with 409 and the next sync plans again on a fresher cache. Each pod is recorded
in ``PendingPatches`` before its patch is sent, so no sync plans on a cache that does not
show it yet; a certain refusal cancels that, an unknown outcome keeps it briefly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

from dsctl.daemonset.inplace import in_place_patch
from dsctl.daemonset.podplan import PodUpdate
from dsctl.kube import errors
from dsctl.kube.resources import PODS

from .inplacewait import PendingPatches
from .podwrites import PodWriter

__all__ = ["patch_in_place"]

log = structlog.get_logger(__name__)


async def patch_in_place(
    executor: PodWriter, *, key: str, ds: Mapping[str, Any], updates: tuple[PodUpdate, ...],
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
    executor: PodWriter, key: str, ds: Mapping[str, Any], update: PodUpdate, pending: PendingPatches
) -> str | None:
    """None when patched; "" when the pod is gone or changed since the plan (nothing to report); else the error."""
    ref = update.pod
    pod_key = f"{ref.namespace}/{ref.name}"
    pending.expect(key, pod=pod_key, pod_uid=ref.uid, resource_version=update.resource_version)
    try:
        await executor.client.patch(PODS, ref.name, in_place_patch(update), namespace=ref.namespace,
                                    patch_type="strategic")
    except errors.Conflict as exc:
        # The pod moved past the planned version; the cache will show that version soon, which
        # releases the expectation, and the next sync plans on it. Expected for a short while
        # only: should the cache never move, the DaemonSet is not held for the full TTL.
        pending.unknown_outcome(key, pod=pod_key)
        log.info("in_place_conflict", daemonset=key, pod=pod_key, reason=exc.reason or exc.status)
        return ""
    except (errors.NotFound, errors.Invalid) as exc:
        pending.cancel(key, pod=pod_key)
        log.info("in_place_refused", daemonset=key, pod=pod_key, reason=exc.reason or exc.status)
        return ""
    except errors.ApiError as exc:
        if 0 < exc.status < 500:
            pending.cancel(key, pod=pod_key)
        else:
            pending.unknown_outcome(key, pod=pod_key)
        message = f"{exc.reason or exc.status}: {exc.message}"
        executor.recorder.record(ds, "Warning", "FailedInPlaceUpdate", f"Error updating pod {ref.name}: {message}")
        return message
    images = ", ".join(f"{c.container}={c.new}" for c in update.images)
    executor.recorder.record(ds, "Normal", "SuccessfulInPlaceUpdate", f"Updated pod in place: {ref.name} ({images})")
    return None
