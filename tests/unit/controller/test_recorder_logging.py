"""Which events the recorder logs: Warnings always, Normal events only when debug is on."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, cast

import pytest
import structlog

from dsctl.controller.recorder import EventRecorder
from dsctl.kube.client import KubeClient

DS: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                      "metadata": {"name": "agent", "namespace": "ops", "uid": "u-1"}}


@pytest.fixture
def recorder_level() -> Iterator[logging.Logger]:
    """The recorder's stdlib logger, its level restored after the test."""
    logger = logging.getLogger("dsctl.controller.recorder")
    before = logger.level
    yield logger
    logger.setLevel(before)


@pytest.mark.parametrize(
    ("level", "event_type", "logged_at"),
    [
        pytest.param(logging.INFO, "Normal", None, id="normal-at-info-not-logged"),
        pytest.param(logging.DEBUG, "Normal", "debug", id="normal-at-debug-logged"),
        pytest.param(logging.INFO, "Warning", "info", id="warning-at-info-logged"),
        pytest.param(logging.WARNING, "Warning", "info", id="warning-not-gated-by-the-stdlib-level"),
    ],
)
async def test_event_log_lines_follow_the_level(
    recorder_level: logging.Logger, level: int, event_type: str, logged_at: str | None
) -> None:
    """A Normal event is logged only when debug is enabled; a Warning is always logged at info."""
    recorder_level.setLevel(level)
    recorder = EventRecorder(cast(KubeClient, object()))
    with structlog.testing.capture_logs() as logs:
        recorder.record(DS, event_type, "SuccessfulCreate", "Created pod: agent-x")
    lines = [entry for entry in logs if entry["event"] == "event"]
    if logged_at is None:
        assert lines == []
    else:
        [line] = lines
        assert (line["log_level"], line["type"], line["object"]) == (logged_at, event_type, "ops/agent")
    assert recorder.pending == 1
