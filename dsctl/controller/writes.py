"""Every API write the controller issues: the client it goes through, and what its failure says.

A sync writes through ``SyncClient``, the narrow face of ``dsctl.kube.client.KubeClient``: only
the verbs a sync uses are there, so a unit test's fake stays small and a new verb is a visible
decision.

A refused write must never stall a DaemonSet silently, retried for ever with nothing but a log
line (ADR 0038). Every write goes
through ``WriteSignals.guard`` or ``WriteSignals.report``, and a failure produces, for the
writes marked so in ``WRITES``:

- a Warning event on the DaemonSet naming the object written, the field and the API's message;
- a ``ReplicaFailure`` condition with the write's reason, remembered here per DaemonSet and
  written by the controller with the sync's status (``take``); a later sync whose writes all
  succeed clears it, as upstream's ReplicaSet controller clears its own;
- ``dsctl_sync_write_errors_total{verb,resource,reason}``;
- a ``write_failed`` log line at warning level.

The error then propagates: the sync fails and the work queue requeues it with the key's
exponential backoff, so a write that cannot succeed costs one attempt per backoff step.

Two writes cannot carry all four signals. A failed status write gets no condition, because the
condition lives in the status that could not be written. A failed event write is only logged
and counted: an event about an event would go the same way, and events are advice.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from dsctl.daemonset.reasons import (
    FAILED_CREATE,
    FAILED_CREATE_DISRUPTION_BUDGET,
    FAILED_CREATE_REVISION,
    FAILED_DELETE,
    FAILED_DELETE_DISRUPTION_BUDGET,
    FAILED_DELETE_REVISION,
    FAILED_PATCH_DISRUPTION_BUDGET,
    FAILED_PATCH_NODE,
    FAILED_PATCH_POD,
    FAILED_PATCH_REVISION,
    FAILED_UPDATE_REVISION,
    FAILED_UPDATE_STATUS,
)
from dsctl.kube import errors
from dsctl.kube.client import PatchType
from dsctl.kube.resources import Resource
from dsctl_api.objects import name as name_of
from dsctl_api.objects import namespace as namespace_of

from .metrics import WriteErrorMetrics

__all__ = [
    "CREATE_BUDGET",
    "CREATE_EVENT",
    "CREATE_POD",
    "CREATE_REVISION",
    "DELETE_BUDGET",
    "DELETE_POD",
    "DELETE_REVISION",
    "PATCH_BUDGET",
    "PATCH_EVENT",
    "PATCH_NODE",
    "PATCH_POD",
    "PATCH_REVISION",
    "UPDATE_REVISION",
    "UPDATE_STATUS",
    "WRITES",
    "Failure",
    "ReplicaFailures",
    "SyncClient",
    "Write",
    "WriteSignals",
    "describe",
    "event_message",
    "fields_of",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Write:
    """One kind of write: its verb and resource (as ``rest_client_requests_total`` labels them),
    the kind of object written, the event and condition reasons its failure produces (None:
    that signal cannot be given), and the DaemonSet field the written object comes from,
    named when the API's answer names no field itself."""

    verb: str
    resource: str
    kind: str
    event_reason: str | None
    condition_reason: str | None
    field: str
    purpose: str


CREATE_POD = Write("create", "pods", "Pod", FAILED_CREATE, FAILED_CREATE, "spec.template",
                   "a daemon pod for a node")
DELETE_POD = Write("delete", "pods", "Pod", FAILED_DELETE, FAILED_DELETE, "spec",
                   "a pod that must go (ineligible node, surplus, rolling update, failed)")
PATCH_POD = Write("patch", "pods", "Pod", FAILED_PATCH_POD, FAILED_PATCH_POD, "spec.selector",
                  "adopt, release, or relabel to the kept revision")
CREATE_REVISION = Write("create", "controllerrevisions", "ControllerRevision", FAILED_CREATE_REVISION,
                        FAILED_CREATE_REVISION, "spec.template", "the snapshot of the current template")
UPDATE_REVISION = Write("update", "controllerrevisions", "ControllerRevision", FAILED_UPDATE_REVISION,
                        FAILED_UPDATE_REVISION, "spec.template", "hash label fix, renumbering on rollback")
PATCH_REVISION = Write("patch", "controllerrevisions", "ControllerRevision", FAILED_PATCH_REVISION,
                       FAILED_PATCH_REVISION, "spec.selector", "adopt or release a revision")
DELETE_REVISION = Write("delete", "controllerrevisions", "ControllerRevision", FAILED_DELETE_REVISION,
                        FAILED_DELETE_REVISION, "spec.revisionHistoryLimit", "duplicate or beyond the history limit")
UPDATE_STATUS = Write("update", "daemonsets/status", "DaemonSet", FAILED_UPDATE_STATUS, None, "status",
                      "counters, observedGeneration, conditions, collisionCount")
CREATE_BUDGET = Write("create", "poddisruptionbudgets", "PodDisruptionBudget", FAILED_CREATE_DISRUPTION_BUDGET,
                      FAILED_CREATE_DISRUPTION_BUDGET, "spec.maxDisruptions", "the budget maxDisruptions asks for")
PATCH_BUDGET = Write("patch", "poddisruptionbudgets", "PodDisruptionBudget", FAILED_PATCH_DISRUPTION_BUDGET,
                     FAILED_PATCH_DISRUPTION_BUDGET, "spec.maxDisruptions", "minAvailable kept current as nodes change")
DELETE_BUDGET = Write("delete", "poddisruptionbudgets", "PodDisruptionBudget", FAILED_DELETE_DISRUPTION_BUDGET,
                      FAILED_DELETE_DISRUPTION_BUDGET, "spec.maxDisruptions", "the budget of a removed maxDisruptions")
CREATE_EVENT = Write("create", "events", "Event", None, None, "", "a new Event")
PATCH_EVENT = Write("patch", "events", "Event", None, None, "", "the count of a repeated Event")

PATCH_NODE = Write("patch", "nodes", "Node", FAILED_PATCH_NODE, None, "spec.taints",
                   "remove or add the node readiness gate's taint (the event is on the Node)")

WRITES: tuple[Write, ...] = (CREATE_POD, DELETE_POD, PATCH_POD, CREATE_REVISION, UPDATE_REVISION, PATCH_REVISION,
                             DELETE_REVISION, UPDATE_STATUS, CREATE_BUDGET, PATCH_BUDGET, DELETE_BUDGET, CREATE_EVENT,
                             PATCH_EVENT, PATCH_NODE)


class SyncClient(Protocol):
    """The verbs of one sync: read one object live, and write."""

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...

    async def create(
        self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...

    async def update(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        ...

    async def update_status(
        self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None, patch_type: PatchType = "merge",
        subresource: str | None = None, field_manager: str | None = None,
    ) -> dict[str, Any]: ...

    async def delete(
        self, res: Resource, name: str, *, namespace: str | None = None, preconditions_uid: str | None = None,
        preconditions_resource_version: str | None = None, propagation_policy: str | None = None,
        grace_period_seconds: int | None = None, retry_server_errors: bool = True,
    ) -> dict[str, Any]: ...


class Recorder(Protocol):
    """What ``WriteSignals`` needs of the event recorder."""

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Failure:
    """The condition a failed write leaves on its DaemonSet until writes succeed again."""

    reason: str
    message: str


def _key(obj: Mapping[str, Any]) -> str:
    """``namespace/name``; a cluster-scoped object (a Node, for the readiness gate's writes) by its name."""
    ns = namespace_of(obj)
    return f"{ns}/{name_of(obj)}" if ns else name_of(obj)


def describe(exc: errors.ApiError) -> str:
    """The API's answer in one line: ``reason: message``."""
    return " ".join(f"{exc.reason or exc.status}: {exc.message}".split())


def fields_of(exc: errors.ApiError, default: str) -> str:
    """The fields the API blamed (422 causes), else ``default``."""
    named = sorted({str(c["field"]) for c in exc.causes if c.get("field")})
    return ", ".join(named) or default


def event_message(write: Write, *, name: str, namespace: str, exc: errors.ApiError) -> str:
    """The Warning event's message. Pod creates and deletes keep upstream's wording
    (``Error creating: ...``), which tooling greps; the API's message names the field."""
    if write is CREATE_POD:
        return f"Error creating: {describe(exc)}"
    if write is DELETE_POD:
        return f"Error deleting: {describe(exc)}"
    target = f"{namespace}/{name}" if namespace else name
    return f"{write.verb} {write.kind} {target} (field {fields_of(exc, write.field)}) failed: {describe(exc)}"


class ReplicaFailures:
    """Per DaemonSet key, the first failed write since the status stage last took it.

    Per-DaemonSet runtime state, owned by ``dsctl.controller.state.RuntimeState``. Syncs of one
    key never run concurrently (the work queue's guarantee), so this needs no lock.
    """

    def __init__(self) -> None:
        self._failing: dict[str, Failure] = {}

    def note(self, key: str, failure: Failure) -> None:
        """Remember ``failure`` unless an earlier one is already waiting."""
        self._failing.setdefault(key, failure)

    def take(self, key: str) -> Failure | None:
        """The first failure noted for ``key`` since the last call, and forget it."""
        return self._failing.pop(key, None)

    def forget(self, key: str, uid: str) -> None:
        """Drop the failure waiting for ``key``."""
        self._failing.pop(key, None)

    def holds(self, key: str, uid: str) -> bool:
        """Whether a failure waits for ``key``."""
        return key in self._failing


@dataclass
class WriteSignals:
    """Turns failed writes into events, conditions, metrics and logs; see the module docstring.

    The condition is noted in ``failures`` per DaemonSet key; the status stage takes it when it
    writes the status of that sync.
    """

    recorder: Recorder
    metrics: WriteErrorMetrics = field(default_factory=lambda: WriteErrorMetrics(None))
    failures: ReplicaFailures = field(default_factory=ReplicaFailures)

    def report(self, ds: Mapping[str, Any], write: Write, exc: errors.ApiError, *, name: str = "",
               namespace: str | None = None, node: str = "") -> None:
        """Signal that ``write`` of object ``name`` for DaemonSet ``ds`` failed with ``exc``.

        ``node`` names the node of a pod create, whose pod has no name yet."""
        ns = namespace_of(ds) if namespace is None else namespace
        self.metrics.inc(verb=write.verb, resource=write.resource, reason=exc.reason or str(exc.status))
        message = event_message(write, name=name, namespace=ns, exc=exc)
        log.warning("write_failed", daemonset=_key(ds), verb=write.verb, resource=write.resource,
                    object=f"{ns}/{name}" if name else ns, field=fields_of(exc, write.field),
                    status=exc.status, reason=exc.reason, message=exc.message, **({"node": node} if node else {}))
        if write.event_reason is not None:
            self.recorder.record(ds, "Warning", write.event_reason, message)
        if write.condition_reason is not None:
            self.failures.note(_key(ds), Failure(write.condition_reason, message))

    @contextlib.asynccontextmanager
    async def guard(self, ds: Mapping[str, Any], write: Write, *, name: str = "",
                    expected: tuple[type[errors.ApiError], ...] = ()) -> AsyncIterator[None]:
        """Report an ``ApiError`` raised inside the block, then re-raise it.

        ``expected`` errors are part of the protocol (a NotFound on a delete, an AlreadyExists
        the caller settles): they are re-raised without a signal.
        """
        try:
            yield
        except errors.ApiError as exc:
            if not isinstance(exc, expected):
                self.report(ds, write, exc, name=name)
            raise

    def take(self, key: str) -> Failure | None:
        """The first failure recorded for DaemonSet ``key`` since the last call, and forget it."""
        return self.failures.take(key)
