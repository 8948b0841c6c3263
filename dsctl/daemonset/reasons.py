"""Every Event reason and every condition the controller can write, each with what it means.

The planners (pure) and the executor both emit Events, and the planners decide the
conditions, so the names live here in the domain, where both can import them. Code emits a
reason only through these constants: ``EVENT_REASONS`` and ``CONDITIONS`` are complete, and the
reference page is generated from them. ``tests/unit/daemonset/test_reasons.py`` fails on an
Event or condition written with a bare string.

Upstream's names are kept where upstream has the same thing (``SuccessfulCreate``,
``FailedDaemonPod``, ``SelectingAll``...; Deployment's ``Progressing`` reasons with "revision"
for "replica set").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CONDITIONS",
    "DAEMONSET_PAUSED",
    "DEPARTING_NODES",
    "DEPRECATED_ANNOTATION",
    "DISRUPTION_BUDGET_FAILURE",
    "DISRUPTION_BUDGET_NOT_OWNED",
    "EVENT_REASONS",
    "FAILED_CREATE",
    "FAILED_CREATE_DISRUPTION_BUDGET",
    "FAILED_CREATE_REVISION",
    "FAILED_DAEMON_POD",
    "FAILED_DELETE",
    "FAILED_DELETE_DISRUPTION_BUDGET",
    "FAILED_DELETE_REVISION",
    "FAILED_IN_PLACE_UPDATE",
    "FAILED_PATCH_DISRUPTION_BUDGET",
    "FAILED_PATCH_NODE",
    "FAILED_PATCH_POD",
    "FAILED_PATCH_REVISION",
    "FAILED_UPDATE_REVISION",
    "FAILED_UPDATE_STATUS",
    "FOUND_NEW_REVISION",
    "INVALID",
    "INVALID_ROLLOUT",
    "INVALID_ROLLOUT_CONTROL",
    "INVALID_SPEC",
    "NEW_REVISION_AVAILABLE",
    "NEW_REVISION_CREATED",
    "PROGRESSING",
    "PROGRESS_DEADLINE_EXCEEDED",
    "READINESS_GATE_TIMEOUT",
    "READINESS_TAINT_ADDED",
    "REPLICA_FAILURE",
    "REVISION_OUT_OF_RANGE",
    "REVISION_UPDATED",
    "ROLLOUT_HELD",
    "ROLLOUT_SKIPPED_NODES",
    "SELECTING_ALL",
    "SUCCEEDED_DAEMON_POD",
    "SUCCESSFUL_CREATE",
    "SUCCESSFUL_DELETE",
    "SUCCESSFUL_IN_PLACE_UPDATE",
    "UNHEALTHY_NODES",
    "ConditionReason",
    "EventReason",
]

EventType = Literal["Normal", "Warning"]

# -- Event reasons ----------------------------------------------------------------------------

SELECTING_ALL = "SelectingAll"
INVALID_SPEC = "InvalidSpec"
REVISION_OUT_OF_RANGE = "RevisionOutOfRange"
INVALID_ROLLOUT_CONTROL = "InvalidRolloutControl"
INVALID_ROLLOUT = "InvalidRollout"
DEPRECATED_ANNOTATION = "DeprecatedAnnotation"
FAILED_DAEMON_POD = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD = "SucceededDaemonPod"
SUCCESSFUL_CREATE = "SuccessfulCreate"
SUCCESSFUL_DELETE = "SuccessfulDelete"
SUCCESSFUL_IN_PLACE_UPDATE = "SuccessfulInPlaceUpdate"
FAILED_IN_PLACE_UPDATE = "FailedInPlaceUpdate"
FAILED_CREATE = "FailedCreate"
FAILED_DELETE = "FailedDelete"
FAILED_PATCH_POD = "FailedPatchPod"
FAILED_CREATE_REVISION = "FailedCreateRevision"
FAILED_UPDATE_REVISION = "FailedUpdateRevision"
FAILED_PATCH_REVISION = "FailedPatchRevision"
FAILED_DELETE_REVISION = "FailedDeleteRevision"
FAILED_UPDATE_STATUS = "FailedUpdateStatus"
DISRUPTION_BUDGET_NOT_OWNED = "DisruptionBudgetNotOwned"
FAILED_CREATE_DISRUPTION_BUDGET = "FailedCreateDisruptionBudget"
FAILED_PATCH_DISRUPTION_BUDGET = "FailedPatchDisruptionBudget"
FAILED_DELETE_DISRUPTION_BUDGET = "FailedDeleteDisruptionBudget"

# The node readiness gate records its events on the Node (dsctl.daemonset.readinessgate).
READINESS_GATE_TIMEOUT = "ReadinessGateTimeout"
READINESS_TAINT_ADDED = "ReadinessTaintAdded"
FAILED_PATCH_NODE = "FailedPatchNode"

# -- condition types and their reasons --------------------------------------------------------

INVALID = "Invalid"
REPLICA_FAILURE = "ReplicaFailure"
PROGRESSING = "Progressing"

NEW_REVISION_CREATED = "NewRevisionCreated"
FOUND_NEW_REVISION = "FoundNewRevision"
REVISION_UPDATED = "RevisionUpdated"
NEW_REVISION_AVAILABLE = "NewRevisionAvailable"
PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
DAEMONSET_PAUSED = "DaemonSetPaused"
ROLLOUT_HELD = "RolloutHeld"
UNHEALTHY_NODES = "UnhealthyNodes"
DEPARTING_NODES = "DepartingNodes"

ROLLOUT_SKIPPED_NODES = "RolloutSkippedNodes"
DISRUPTION_BUDGET_FAILURE = "DisruptionBudgetFailure"


@dataclass(frozen=True, slots=True)
class EventReason:
    """One Event the controller records: its reason, type, and what it means."""

    reason: str
    type: EventType
    meaning: str


@dataclass(frozen=True, slots=True)
class ConditionReason:
    """One (condition type, status, reason) the controller writes to ``.status.conditions``."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    meaning: str


EVENT_REASONS: tuple[EventReason, ...] = (
    EventReason(SELECTING_ALL, "Warning", "The selector is empty; no pod is touched until it selects something."),
    EventReason(INVALID_SPEC, "Warning", "The spec cannot be reconciled (one event per problem); nothing is done."),
    EventReason(REVISION_OUT_OF_RANGE, "Warning",
                "A revision number would leave int64; the revision is not adopted, or the sync stops."),
    EventReason(INVALID_ROLLOUT_CONTROL, "Warning",
                "An extension field cannot be read; the rolling update is held, or its default applies."),
    EventReason(INVALID_ROLLOUT, "Warning", "maxUnavailable or maxSurge cannot be read; the rolling update waits."),
    EventReason(DEPRECATED_ANNOTATION, "Warning",
                "An extension annotation is set under its older camelCase name; the message names the new one."),
    EventReason(FAILED_DAEMON_POD, "Warning", "A daemon pod failed; it is deleted and replaced after a backoff."),
    EventReason(SUCCEEDED_DAEMON_POD, "Normal", "A daemon pod exited successfully; it is deleted and replaced."),
    EventReason(SUCCESSFUL_CREATE, "Normal", "A daemon pod was created."),
    EventReason(SUCCESSFUL_DELETE, "Normal", "A daemon pod was deleted."),
    EventReason(SUCCESSFUL_IN_PLACE_UPDATE, "Normal", "A pod's images were patched in place (InPlaceIfPossible)."),
    EventReason(FAILED_IN_PLACE_UPDATE, "Warning", "An in-place patch was refused; the sync is retried."),
    EventReason(FAILED_CREATE, "Warning", "A pod create was refused; the message has the API's answer."),
    EventReason(FAILED_DELETE, "Warning", "A pod delete was refused."),
    EventReason(FAILED_PATCH_POD, "Warning", "Adopting, releasing or relabelling a pod was refused."),
    EventReason(FAILED_CREATE_REVISION, "Warning", "Creating the current ControllerRevision was refused."),
    EventReason(FAILED_UPDATE_REVISION, "Warning",
                "Updating a ControllerRevision (hash label, renumbering) was refused."),
    EventReason(FAILED_PATCH_REVISION, "Warning", "Adopting or releasing a ControllerRevision was refused."),
    EventReason(FAILED_DELETE_REVISION, "Warning", "Deleting an old or duplicate ControllerRevision was refused."),
    EventReason(FAILED_UPDATE_STATUS, "Warning", "Writing the DaemonSet's status was refused."),
    EventReason(DISRUPTION_BUDGET_NOT_OWNED, "Warning",
                "maxDisruptions is set but a PodDisruptionBudget of the DaemonSet's name belongs to someone else; "
                "it is left alone."),
    EventReason(FAILED_CREATE_DISRUPTION_BUDGET, "Warning", "Creating the DaemonSet's budget was refused."),
    EventReason(FAILED_PATCH_DISRUPTION_BUDGET, "Warning", "Updating the DaemonSet's PodDisruptionBudget was refused."),
    EventReason(FAILED_DELETE_DISRUPTION_BUDGET, "Warning", "Deleting the DaemonSet's budget was refused."),
    EventReason(READINESS_GATE_TIMEOUT, "Warning",
                "On a Node: still carrying the readiness taint after --readiness-timeout; the message names the "
                "gating DaemonSets not ready there. The taint stays."),
    EventReason(READINESS_TAINT_ADDED, "Warning",
                "On a Node (continuous mode): a gating DaemonSet's pod was not Ready for "
                "--readiness-retaint-seconds, so the readiness taint was added back."),
    EventReason(FAILED_PATCH_NODE, "Warning",
                "On a Node: removing or adding the readiness taint was refused; the gate retries."),
)
"""Every Event reason, on the DaemonSet unless the message names a pod."""

_WRITE_FAILED = "True while a write of this kind fails; cleared by a sync whose writes all succeed."

CONDITIONS: tuple[ConditionReason, ...] = (
    ConditionReason(INVALID, "True", INVALID_SPEC, "The spec cannot be reconciled; the message lists why."),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_CREATE, "A pod create is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_DELETE, "A pod delete is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_PATCH_POD, "A pod patch is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_CREATE_REVISION,
                    "The revision create is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_UPDATE_REVISION,
                    "A revision update is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_PATCH_REVISION, "A revision patch is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_DELETE_REVISION,
                    "A revision delete is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", REVISION_OUT_OF_RANGE,
                    "The next revision number would leave int64; nothing is done until history is cleaned."),
    ConditionReason(PROGRESSING, "True", NEW_REVISION_CREATED, "This sync created the current revision."),
    ConditionReason(PROGRESSING, "True", FOUND_NEW_REVISION, "A rollout to the current revision started."),
    ConditionReason(PROGRESSING, "True", REVISION_UPDATED, "More pods are updated or available than before."),
    ConditionReason(PROGRESSING, "True", NEW_REVISION_AVAILABLE,
                    "Every node that should run the pod runs an available pod of the current revision."),
    ConditionReason(PROGRESSING, "False", PROGRESS_DEADLINE_EXCEEDED,
                    "No progress for progressDeadlineSeconds; kubectl and dsctl rollout status fail."),
    ConditionReason(PROGRESSING, "Unknown", DAEMONSET_PAUSED,
                    "The rollout is paused; the message says where and how many pods wait. No deadline runs."),
    ConditionReason(PROGRESSING, "Unknown", ROLLOUT_HELD,
                    "A partition or node selector holds old pods back; the message names it and the count."),
    ConditionReason(PROGRESSING, "Unknown", INVALID_ROLLOUT_CONTROL,
                    "A rollout control cannot be read; the rollout is held until it is fixed."),
    ConditionReason(PROGRESSING, "Unknown", UNHEALTHY_NODES,
                    "Every other node is updated; the rollout waits for nodes skipped as unhealthy. No deadline runs."),
    ConditionReason(PROGRESSING, "Unknown", DEPARTING_NODES,
                    "Every other node is updated; the rollout leaves departing nodes alone. No deadline runs."),
    ConditionReason(ROLLOUT_SKIPPED_NODES, "True", UNHEALTHY_NODES,
                    "unhealthyNodePolicy Skip leaves nodes out of the rolling update; the message counts them and "
                    "names up to 10. Removed when none is skipped."),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_CREATE_DISRUPTION_BUDGET,
                    "The PodDisruptionBudget create is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_PATCH_DISRUPTION_BUDGET,
                    "A PodDisruptionBudget update is refused. " + _WRITE_FAILED),
    ConditionReason(REPLICA_FAILURE, "True", FAILED_DELETE_DISRUPTION_BUDGET,
                    "The PodDisruptionBudget delete is refused. " + _WRITE_FAILED),
    ConditionReason(DISRUPTION_BUDGET_FAILURE, "True", INVALID_ROLLOUT_CONTROL,
                    "maxDisruptions cannot be read; the PodDisruptionBudget is left as it is until it is fixed."),
    ConditionReason(DISRUPTION_BUDGET_FAILURE, "True", DISRUPTION_BUDGET_NOT_OWNED,
                    "A PodDisruptionBudget of the DaemonSet's name belongs to someone else; none is kept."),
)
"""Every (condition type, status, reason) written to ``.status.conditions``."""
