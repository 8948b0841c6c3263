"""Every write the controller issues, and the signal its failure produces.

The table is ``dsctl.controller.writes.WRITES``; these tests pin what each entry produces
(event, condition, metric, log), that it covers every write the ClusterRole grants, and that
the executor and the event recorder report through it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
import structlog
import yaml
from prometheus_client import CollectorRegistry

from dsctl.controller.expectations import Expectations
from dsctl.controller.metrics import WriteErrorMetrics
from dsctl.controller.podwrites import PodWriter
from dsctl.controller.recorder import EventRecorder
from dsctl.controller.writes import (
    CREATE_EVENT,
    CREATE_POD,
    CREATE_REVISION,
    DELETE_POD,
    DELETE_REVISION,
    PATCH_EVENT,
    PATCH_POD,
    PATCH_REVISION,
    UPDATE_REVISION,
    UPDATE_STATUS,
    WRITES,
    Failure,
    Write,
    WriteSignals,
    event_message,
)
from dsctl.daemonset.podplan import Plan, PodRef
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import Resource

CLUSTERROLE = Path(__file__).resolve().parents[3] / "manifests" / "rbac" / "clusterrole.yaml"
DS: dict[str, Any] = {
    "apiVersion": "dsctl.io/v1", "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "ops", "uid": "uid-1"},
    "spec": {"template": {"metadata": {"labels": {"app": "agent"}},
                          "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}},
}
LABEL_MESSAGE = ('ControllerRevision.apps "agent-abc" is invalid: metadata.labels: Invalid value: "ünï-cødé": '
                 "a valid label must be an empty string or consist of alphanumeric characters")


def invalid_labels() -> errors.Invalid:
    """A 422 as kube-apiserver answers a bad label value, with its cause."""
    return errors.Invalid(422, "Invalid", LABEL_MESSAGE,
                          details={"causes": [{"field": "metadata.labels", "reason": "FieldValueInvalid"}]})


class Events:
    """A recorder that keeps what it is asked to record."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str]] = []

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self.recorded.append((obj["metadata"]["name"], event_type, reason, message))


def counter(registry: CollectorRegistry, write: Write, reason: str) -> float:
    """The write-error counter's value for one write and API reason."""
    value = registry.get_sample_value("dsctl_sync_write_errors_total",
                                      {"verb": write.verb, "resource": write.resource, "reason": reason})
    return value or 0.0


@pytest.mark.parametrize(
    ("write", "event", "condition"),
    [
        pytest.param(CREATE_POD, "FailedCreate", "FailedCreate", id="create-pod"),
        pytest.param(DELETE_POD, "FailedDelete", "FailedDelete", id="delete-pod"),
        pytest.param(PATCH_POD, "FailedPatchPod", "FailedPatchPod", id="patch-pod-adopt-release-relabel"),
        pytest.param(CREATE_REVISION, "FailedCreateRevision", "FailedCreateRevision", id="create-revision"),
        pytest.param(UPDATE_REVISION, "FailedUpdateRevision", "FailedUpdateRevision", id="update-revision"),
        pytest.param(PATCH_REVISION, "FailedPatchRevision", "FailedPatchRevision", id="patch-revision"),
        pytest.param(DELETE_REVISION, "FailedDeleteRevision", "FailedDeleteRevision", id="delete-revision"),
        # The condition lives in the status that could not be written.
        pytest.param(UPDATE_STATUS, "FailedUpdateStatus", None, id="update-status-no-condition"),
        # An event about a failed event would fail the same way: log and metric only.
        pytest.param(CREATE_EVENT, None, None, id="create-event-log-and-metric-only"),
        pytest.param(PATCH_EVENT, None, None, id="patch-event-log-and-metric-only"),
    ],
)
def test_each_write_failure_signals(write: Write, event: str | None, condition: str | None) -> None:
    """A failed write gives its Warning event (object, field, API message), condition, count and warning line."""
    events, registry = Events(), CollectorRegistry()
    signals = WriteSignals(recorder=events, metrics=WriteErrorMetrics(registry))
    with structlog.testing.capture_logs() as logs:
        signals.report(DS, write, invalid_labels(), name="agent-abc")
    assert counter(registry, write, "Invalid") == 1.0
    [line] = [entry for entry in logs if entry["event"] == "write_failed"]
    assert line["log_level"] == "warning"
    assert (line["verb"], line["resource"], line["field"], line["daemonset"]) == (
        write.verb, write.resource, "metadata.labels", "ops/agent")
    if event is None:
        assert events.recorded == []
    else:
        [(obj, kind, reason, message)] = events.recorded
        assert (obj, kind, reason) == ("agent", "Warning", event)
        assert LABEL_MESSAGE in message
        if write not in (CREATE_POD, DELETE_POD):  # those keep upstream's "Error creating: ..." wording
            assert "ops/agent-abc" in message and "(field metadata.labels)" in message
    taken = signals.take("ops/agent")
    assert (taken.reason if taken else None) == condition
    assert signals.take("ops/agent") is None, "a failure is taken once"


def test_the_table_covers_every_write_the_clusterrole_grants() -> None:
    """WRITES lists exactly the (verb, resource) writes the ClusterRole grants, so a new write needs a signal."""
    granted: set[tuple[str, str]] = set()
    for rule in yaml.safe_load(CLUSTERROLE.read_text())["rules"]:
        for resource in rule["resources"]:
            for verb in rule["verbs"]:
                if verb in ("create", "update", "patch", "delete") and resource != "daemonsets/finalizers":
                    granted.add((verb, resource))
    assert {(w.verb, w.resource) for w in WRITES} == granted


def test_the_first_failure_of_a_sync_is_the_condition() -> None:
    """Several failures in one sync: the first is the condition's reason (the root cause)."""
    signals = WriteSignals(recorder=Events())
    signals.report(DS, CREATE_REVISION, invalid_labels(), name="agent-abc")
    signals.report(DS, UPDATE_STATUS, errors.ServerError(500, "InternalError", "etcd timeout"), name="agent")
    assert signals.take("ops/agent") == Failure("FailedCreateRevision", signals_message(CREATE_REVISION))


def signals_message(write: Write) -> str:
    """The event message for the label refusal of ``agent-abc``."""
    return event_message(write, name="agent-abc", namespace="ops", exc=invalid_labels())


async def test_guard_passes_expected_errors_silently() -> None:
    """An expected error (NotFound on a delete) is re-raised with no signal; others are signalled and re-raised."""
    events = Events()
    signals = WriteSignals(recorder=events)
    with pytest.raises(errors.NotFound):
        async with signals.guard(DS, DELETE_REVISION, name="old", expected=(errors.NotFound,)):
            raise errors.NotFound(404, "NotFound", "gone")
    assert events.recorded == [] and signals.take("ops/agent") is None
    with pytest.raises(errors.Forbidden):
        async with signals.guard(DS, DELETE_REVISION, name="old", expected=(errors.NotFound,)):
            raise errors.Forbidden(403, "Forbidden", "no delete on controllerrevisions")
    assert [r[2] for r in events.recorded] == ["FailedDeleteRevision"]


class FailingClient:
    """The client boundary: creates and deletes of pods fail with the given errors."""

    def __init__(self, *, create: errors.ApiError | None = None, delete: errors.ApiError | None = None) -> None:
        self.create_error, self.delete_error = create, delete

    async def create(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        if self.create_error is not None:
            raise self.create_error
        return {"metadata": {"name": "p"}}

    async def delete(self, res: Resource, name: str, **_: Any) -> dict[str, Any]:
        if self.delete_error is not None:
            raise self.delete_error
        return {}

    async def patch(self, *_: Any, **__: Any) -> dict[str, Any]:
        raise AssertionError("the executor patches nothing")


@pytest.mark.parametrize(
    ("client", "plan", "write", "reason"),
    [
        pytest.param(FailingClient(create=errors.Invalid(422, "Invalid", 'Pod "" is invalid: metadata.labels: bad')),
                     Plan(creates=("node-1",)), CREATE_POD, "Invalid", id="create-422"),
        pytest.param(FailingClient(delete=errors.ServerError(500, "InternalError", "etcd leader changed")),
                     Plan(deletes=(PodRef("ops", "agent-x", "uid-x", "node-1"),)), DELETE_POD, "InternalError",
                     id="delete-500"),
    ],
)
async def test_executor_reports_pod_write_failures(client: FailingClient, plan: Plan, write: Write,
                                                   reason: str) -> None:
    """A failed pod create or delete from the executor gives its event, condition, count, and fails the sync."""
    events, registry = Events(), CollectorRegistry()
    signals = WriteSignals(recorder=events, metrics=WriteErrorMetrics(registry))
    executor = PodWriter(client=cast(KubeClient, client), expectations=Expectations(clock=time.monotonic),
                            recorder=cast(EventRecorder, events), signals=signals)
    result = await executor.execute(key="ops/agent", ds=DS, plan=plan, hash_="h1")
    assert result.errors
    assert [r[2] for r in events.recorded] == [write.event_reason]
    taken = signals.take("ops/agent")
    assert taken is not None and taken.reason == write.condition_reason
    assert counter(registry, write, reason) == 1.0


class RefusingEvents:
    """The client boundary for the event recorder: every event create is forbidden."""

    def __init__(self) -> None:
        self.attempts = 0

    async def create(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        self.attempts += 1
        raise errors.Forbidden(403, "Forbidden", 'events is forbidden: User "dsctl" cannot create resource "events"')


async def test_a_failed_event_write_is_logged_with_its_object_and_counted() -> None:
    """An event the API refuses: a warning line naming the object and reason, and the write-error counter."""
    registry = CollectorRegistry()
    client = RefusingEvents()
    recorder = EventRecorder(cast(KubeClient, client), write_errors=WriteErrorMetrics(registry))
    recorder.start()
    with structlog.testing.capture_logs() as logs:
        recorder.record(DS, "Warning", "FailedCreateRevision", "create ControllerRevision ... failed")
        await recorder.stop(timeout=5.0)  # flushes the queue first
    [line] = [entry for entry in logs if entry["event"] == "event_write_failed"]
    assert (line["log_level"], line["object"], line["kind"], line["reason"], line["status"]) == (
        "warning", "ops/agent", "DaemonSet", "FailedCreateRevision", 403)
    assert counter(registry, CREATE_EVENT, "Forbidden") == 1.0
