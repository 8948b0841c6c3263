"""The pod stage of a sync: slow-start creates, parallel deletes, in-place patches, their events and expectations.

``SyncExecutor`` (``executor``) calls it with the pod part of a ``SyncPlan``. Contract with
the planners (see ``dsctl.daemonset.podplan``): a plan is executed at most once, creates before
deletes, and at most ``burst`` of each per sync; the rest waits for the next sync, which
will plan them again from a fresher cache.

Expectations are raised *before* the first write, so a pod-add event that races ahead of
the create's response is already expected. Every write that fails lowers them again, so a
failed create never leaves the DaemonSet waiting five minutes for an event that cannot come.

In-place updates (``Plan.updates``, ``patch_in_place``) are one strategic merge patch per pod
(``dsctl.daemonset.inplace.in_place_patch``), pinned to the pod's UID and to the
resourceVersion the plan was made on, so a pod that changed since refuses it with 409 and the
next sync plans again on a fresher cache. Each pod is recorded in ``PendingPatches`` before
its patch is sent, so no sync plans on a cache that does not show it yet; a certain refusal
cancels that, an unknown outcome keeps it briefly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from dsctl.daemonset.inplace import in_place_patch
from dsctl.daemonset.manage import cap_burst, slow_start_batches
from dsctl.daemonset.podplan import Plan, PodRef, PodUpdate
from dsctl.daemonset.reasons import (
    FAILED_IN_PLACE_UPDATE,
    SUCCESSFUL_CREATE,
    SUCCESSFUL_DELETE,
    SUCCESSFUL_IN_PLACE_UPDATE,
)
from dsctl.daemonset.template import pod_factory
from dsctl.kube import errors
from dsctl.kube.encoded import JsonTemplate
from dsctl.kube.resources import PODS
from dsctl.tuning import SPLICE_FROM
from dsctl_api.objects import name as name_of
from dsctl_api.objects import namespace as namespace_of
from dsctl_api.objects import uid as uid_of

from .expectations import Expectations, PendingPatches
from .recorder import EventRecorder
from .writes import CREATE_POD, DELETE_POD, SyncClient, WriteSignals

__all__ = ["ExecutionResult", "PodWriter", "patch_in_place"]

log = structlog.get_logger(__name__)

@dataclass
class ExecutionResult:
    """What actually happened; ``errors`` non-empty means the sync must be retried."""

    created: int = 0
    deleted: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Failure:
    """Why one create failed."""

    message: str
    error: errors.ApiError
    namespace_terminating: bool = False


@dataclass
class PodWriter:
    """Writes the pods of plans for one controller. Stateless apart from the injected collaborators."""

    client: SyncClient
    expectations: Expectations
    recorder: EventRecorder
    burst: int = 250
    direct_binding: bool = False
    extra_tolerations: tuple[Mapping[str, Any], ...] = ()
    """Tolerations every pod gets beyond upstream's (the readiness taint's): at creation, never in the
    template, so the revision hash does not change with them."""
    on_create_failure: Callable[[str, str], None] | None = None
    still_current: Callable[[str, str], bool] | None = None
    """``(key, uid) -> bool``: whether the cache still holds that DaemonSet, not being deleted.
    Checked before each create batch, so a deletion seen mid-sync stops further creates."""
    signals: WriteSignals | None = None
    """Where failed writes are reported (event, condition, metric, log); by default events only
    go to ``recorder``."""

    def __post_init__(self) -> None:
        if self.signals is None:
            self.signals = WriteSignals(recorder=self.recorder)

    @property
    def _signals(self) -> WriteSignals:
        assert self.signals is not None
        return self.signals

    async def execute(
        self, *, key: str, ds: Mapping[str, Any], plan: Plan, hash_: str, burst: int | None = None
    ) -> ExecutionResult:
        """Apply ``plan`` to DaemonSet ``ds`` (whose cache key is ``key``).

        ``burst`` lowers the executor's burst for this DaemonSet (its ``burstReplicas``); one
        worker per key means the cap is also the most writes in flight for it.
        """
        result = ExecutionResult()
        plan = cap_burst(plan, burst=self.burst if burst is None else min(self.burst, burst))
        creates, deletes = list(plan.creates), list(plan.deletes)
        for event in plan.events:
            target: Mapping[str, Any] = ds
            if event.regarding is not None:
                target = {"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": event.regarding.name, "namespace": event.regarding.namespace,
                                       "uid": event.regarding.uid}}
            self.recorder.record(target, event.type, event.reason, event.message)
        if not creates and not deletes:
            return result
        self.expectations.set(key, adds=len(creates), dels=len(deletes))
        await self._create_all(key=key, ds=ds, nodes=creates, hash_=hash_, result=result)
        await self._delete_all(key=key, ds=ds, pods=deletes, result=result)
        return result

    async def _create_one(
        self, ds: Mapping[str, Any], node: str, make_pod: Callable[[str], Mapping[str, Any]]
    ) -> _Failure | None:
        namespace = namespace_of(ds) or "default"
        body = make_pod(node)
        try:
            created = await self.client.create(PODS, body, namespace=namespace)
        except errors.ApiError as exc:
            terminating = isinstance(exc, errors.Forbidden) and exc.namespace_terminating
            return _Failure(f"{exc.reason or exc.status}: {exc.message}", exc, namespace_terminating=terminating)
        name = name_of(created)
        self.recorder.record(ds, "Normal", SUCCESSFUL_CREATE, f"Created pod: {name}")
        return None

    async def _create_all(
        self, *, key: str, ds: Mapping[str, Any], nodes: list[str], hash_: str, result: ExecutionResult
    ) -> None:
        position = 0
        uid = uid_of(ds)
        make_pod: Callable[[str], Mapping[str, Any]] | None = None
        for size in slow_start_batches(len(nodes)):
            if self.still_current is not None and not self.still_current(key, uid):
                skipped = len(nodes) - position
                self.expectations.lower(key, adds=skipped, dels=0)
                log.info("creates_abandoned", daemonset=key, skipped=skipped, reason="daemonset deleted or replaced")
                return
            batch = nodes[position : position + size]
            if make_pod is None:
                # Built at the first batch sent, so a template error surfaces where a create would.
                make_pod = pod_factory(ds, hash=hash_, direct_binding=self.direct_binding,
                                       extra_tolerations=self.extra_tolerations)
                if len(nodes) >= SPLICE_FROM:
                    make_pod = _encoded_factory(make_pod, probe=batch[0])
            outcomes = await asyncio.gather(*(self._create_one(ds, node, make_pod) for node in batch))
            failures = [(node, err) for node, err in zip(batch, outcomes, strict=True) if err is not None]
            result.created += len(batch) - len(failures)
            position += size
            if any(err.namespace_terminating for _, err in failures):
                # The namespace is being deleted, and the DaemonSet with it: every further
                # create would be refused too. Not an error, and, as upstream, the refused
                # creates stay expected, so no sync tries again before the deletion arrives.
                skipped = len(nodes) - position
                self.expectations.lower(key, adds=skipped, dels=0)
                log.info("creates_abandoned", daemonset=key, skipped=skipped, reason="namespace terminating")
                return
            for node, err in failures:
                self.expectations.creation_observed(key)
                self._signals.report(ds, CREATE_POD, err.error, node=node)
                result.errors.append(f"create on {node}: {err.message}")
                if self.on_create_failure is not None:
                    self.on_create_failure(key, err.message)
            if failures:
                skipped = len(nodes) - position
                if skipped > 0:
                    self.expectations.lower(key, adds=skipped, dels=0)
                    log.info("slow_start_stopped", daemonset=key, skipped=skipped, failed=len(failures))
                return

    async def _delete_one(self, key: str, ds: Mapping[str, Any], ref: PodRef) -> str | None:
        try:
            # Not retried in place on 5xx: the delete was planned against this sync's cache
            # (a rolling update's budget, a node's eligibility), and a retry seconds later
            # would carry out a stale decision. The failed sync is requeued and plans again.
            await self.client.delete(PODS, ref.name, namespace=ref.namespace,
                                     preconditions_uid=ref.uid or None, retry_server_errors=False)
        except errors.NotFound:
            self.expectations.deletion_observed(key)
            return None
        except errors.ApiError as exc:
            self.expectations.deletion_observed(key)
            self._signals.report(ds, DELETE_POD, exc, name=ref.name, namespace=ref.namespace)
            return f"{exc.reason or exc.status}: {exc.message}"
        self.recorder.record(ds, "Normal", SUCCESSFUL_DELETE, f"Deleted pod: {ref.name}")
        return None

    async def _delete_all(
        self, *, key: str, ds: Mapping[str, Any], pods: list[PodRef], result: ExecutionResult
    ) -> None:
        outcomes = await asyncio.gather(*(self._delete_one(key, ds, ref) for ref in pods))
        for ref, err in zip(pods, outcomes, strict=True):
            if err is None:
                result.deleted += 1
            else:
                result.errors.append(f"delete {ref.namespace}/{ref.name}: {err}")


def _encoded_factory(make: Callable[[str], Mapping[str, Any]], *, probe: str) -> Callable[[str], Mapping[str, Any]]:
    """``make``, with each pod encoded once per sync and spliced per node (``kube.encoded``);
    ``make`` itself if its pods do not splice (``probe`` is checked)."""
    template = JsonTemplate.of(make, probe=probe)
    if template is None:
        log.debug("pod_template_not_spliced", probe=probe)
        return make
    return template.fill


async def patch_in_place(
    writer: PodWriter, *, key: str, ds: Mapping[str, Any], updates: tuple[PodUpdate, ...],
    pending: PendingPatches,
) -> tuple[int, list[str]]:
    """Patch at most ``writer.burst`` of ``updates``; returns the number patched and the errors."""
    batch = updates[: max(0, writer.burst)]
    outcomes = await asyncio.gather(*(_patch_one(writer, key, ds, u, pending) for u in batch))
    done, failures = 0, []
    for update, err in zip(batch, outcomes, strict=True):
        if err is None:
            done += 1
        elif err:
            failures.append(f"in-place update {update.pod.namespace}/{update.pod.name}: {err}")
    return done, failures


async def _patch_one(
    writer: PodWriter, key: str, ds: Mapping[str, Any], update: PodUpdate, pending: PendingPatches
) -> str | None:
    """None when patched; "" when the pod is gone or changed since the plan (nothing to report); else the error."""
    ref = update.pod
    pod_key = f"{ref.namespace}/{ref.name}"
    pending.expect(key, pod=pod_key, pod_uid=ref.uid, resource_version=update.resource_version)
    try:
        await writer.client.patch(PODS, ref.name, in_place_patch(update), namespace=ref.namespace,
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
        writer.recorder.record(ds, "Warning", FAILED_IN_PLACE_UPDATE, f"Error updating pod {ref.name}: {message}")
        return message
    images = ", ".join(f"{c.container}={c.new}" for c in update.images)
    writer.recorder.record(ds, "Normal", SUCCESSFUL_IN_PLACE_UPDATE, f"Updated pod in place: {ref.name} ({images})")
    return None
