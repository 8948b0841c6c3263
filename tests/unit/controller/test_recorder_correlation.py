"""What each recorded event becomes: its own Event, a count bump, the aggregate, or nothing.

The correlator reads no clock: each step passes its time, so windows and refills are exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from dsctl.controller.recorder import AGGREGATE_PREFIX, EventCorrelator, EventRecorder, EventWrite
from dsctl.kube import errors
from dsctl.kube.resources import EVENTS
from tests.unit.controller.fakeclient import FakeClient

REF: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "namespace": "ops",
                       "uid": "u-1", "resourceVersion": "7"}
OTHER: dict[str, Any] = {**REF, "name": "other", "uid": "u-2"}
DS: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                      "metadata": {"name": "agent", "namespace": "ops", "uid": "u-1"}}
BAD = "dsctl.io/partition: must be a non-negative integer"


@dataclass(frozen=True)
class Step:
    """Record ``message`` (reason ``reason``, about ``ref``) at time ``at``."""

    at: float
    message: str
    reason: str = "InvalidRolloutControl"
    ref: tuple[tuple[str, Any], ...] = tuple(REF.items())


Outcome = tuple[str, str, int] | None
"""("create" or "bump", message, count), or None when the event is dropped."""


def _outcome(write: EventWrite | None) -> Outcome:
    if write is None:
        return None
    return ("bump" if write.existing else "create", write.message, write.count)


def _run(correlator: EventCorrelator, steps: list[Step]) -> list[Outcome]:
    return [_outcome(correlator.correlate(dict(s.ref), "Warning", s.reason, s.message, now=s.at)) for s in steps]


def _repeats(message: str, times: int, *, start: float = 0.0, every: float = 1.0) -> list[Step]:
    return [Step(start + i * every, message) for i in range(times)]


def _bad(value: int) -> str:
    return f"{BAD}, not '{value}'"


def _cases() -> Iterator[Any]:
    yield pytest.param(
        _repeats(_bad(-1), 3),
        [("create", _bad(-1), 1), ("bump", _bad(-1), 2), ("bump", _bad(-1), 3)],
        id="a-repeat-bumps-the-count",
    )
    yield pytest.param(
        [*_repeats(_bad(-1), 30), Step(30, _bad(-2))],
        [("create", _bad(-1), 1), *(("bump", _bad(-1), n) for n in range(2, 26)), *([None] * 5),
         ("create", _bad(-2), 1)],
        id="a-new-message-passes-while-the-old-one-is-throttled",
    )
    yield pytest.param(
        [*_repeats(_bad(-1), 26), Step(25 + 300, _bad(-1))],
        [("create", _bad(-1), 1), *(("bump", _bad(-1), n) for n in range(2, 26)), None, ("bump", _bad(-1), 27)],
        id="a-throttled-repeat-is-counted-in-the-next-write",
    )
    yield pytest.param(
        [Step(0, _bad(-1)), Step(600, _bad(-1))],
        [("create", _bad(-1), 1), ("create", _bad(-1), 1)],
        id="a-repeat-after-the-dedup-window-is-a-new-event",
    )
    yield pytest.param(
        [Step(0, _bad(-1)), Step(599, _bad(-1))],
        [("create", _bad(-1), 1), ("bump", _bad(-1), 2)],
        id="a-repeat-inside-the-dedup-window-bumps",
    )
    yield pytest.param(
        [Step(i, _bad(i)) for i in range(12)],
        [*(("create", _bad(i), 1) for i in range(9)), ("create", AGGREGATE_PREFIX + _bad(9), 1),
         ("bump", AGGREGATE_PREFIX + _bad(10), 2), ("bump", AGGREGATE_PREFIX + _bad(11), 3)],
        id="the-tenth-similar-message-starts-the-aggregate-which-shows-the-latest",
    )
    yield pytest.param(
        [*(Step(i, _bad(i)) for i in range(10)), Step(10, _bad(3))],
        [*(("create", _bad(i), 1) for i in range(9)), ("create", AGGREGATE_PREFIX + _bad(9), 1),
         ("bump", _bad(3), 2)],
        id="an-earlier-message-keeps-its-own-event-after-aggregation",
    )
    yield pytest.param(
        [*(Step(i, _bad(i)) for i in range(9)), Step(9 + 601, _bad(9))],
        [*(("create", _bad(i), 1) for i in range(9)), ("create", _bad(9), 1)],
        id="similar-messages-further-apart-than-the-window-are-not-aggregated",
    )
    yield pytest.param(
        [Step(i, f"Created pod: agent-{i}", reason="SuccessfulCreate") for i in range(9)]
        + [Step(9 + i, _bad(i)) for i in range(2)],
        [*(("create", f"Created pod: agent-{i}", 1) for i in range(9)), ("create", _bad(0), 1),
         ("create", _bad(1), 1)],
        id="messages-of-another-reason-are-not-similar",
    )
    yield pytest.param(
        [*_repeats(_bad(-1), 26), Step(26, _bad(-1), ref=tuple(OTHER.items()))],
        [("create", _bad(-1), 1), *(("bump", _bad(-1), n) for n in range(2, 26)), None, ("create", _bad(-1), 1)],
        id="another-object-has-its-own-budget",
    )


@pytest.mark.parametrize(("steps", "expected"), list(_cases()))
def test_correlation(steps: list[Step], expected: list[Outcome]) -> None:
    """Each recorded event becomes the write the correlation rules give, step by step."""
    assert _run(EventCorrelator(), steps) == expected


def test_the_aggregate_is_rate_limited_like_any_event() -> None:
    """A stream of new messages (one per pod) costs 9 Events plus 25 writes of the aggregate."""
    correlator = EventCorrelator()
    outcomes = _run(correlator, [Step(0, f"Created pod: agent-{i}", reason="SuccessfulCreate") for i in range(5000)])
    assert sum(o is not None for o in outcomes) == 9 + 25


def test_event_names_never_repeat_within_one_instant() -> None:
    """Two Events about one object at the same clock reading get different names."""
    correlator = EventCorrelator()
    first = correlator.correlate(REF, "Warning", "A", "one", now=5.0)
    second = correlator.correlate(REF, "Warning", "A", "two", now=5.0)
    assert first is not None and second is not None
    assert first.name != second.name and first.name.startswith("agent.")


def test_caches_are_bounded() -> None:
    """Events about many objects keep at most ``capacity`` entries per cache."""
    correlator = EventCorrelator(capacity=8)
    for i in range(100):
        correlator.correlate({**REF, "name": f"ds-{i}", "uid": f"u-{i}"}, "Normal", "R", "m", now=float(i))
    assert max(len(correlator._similar), len(correlator._observed), len(correlator._buckets)) == 8


class Clock:
    """A wall clock a test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def _flush(recorder: EventRecorder) -> None:
    recorder.start()
    await recorder.stop(timeout=5)


def _events(fake: FakeClient) -> list[dict[str, Any]]:
    return [o for (label, _, _), o in sorted(fake.objects.items()) if label == EVENTS.label]


async def test_a_changed_message_reaches_the_api_while_the_old_one_is_throttled() -> None:
    """After the first bad value is throttled, a different one is created beside it, both counted."""
    fake, clock = FakeClient(), Clock()
    recorder = EventRecorder(fake.as_client(), wall=clock)
    for _ in range(40):
        recorder.record(DS, "Warning", "InvalidRolloutControl", _bad(-1))
        clock.now += 1
    recorder.record(DS, "Warning", "InvalidRolloutControl", _bad(-2))
    await _flush(recorder)
    events = sorted(_events(fake), key=lambda e: e["firstTimestamp"])
    assert [(e["message"], e["count"]) for e in events] == [(_bad(-1), 25), (_bad(-2), 1)]
    assert fake.verbs(EVENTS) == ["create"] + ["patch"] * 24 + ["create"]


async def test_a_bump_of_a_vanished_event_creates_it_with_the_count() -> None:
    """An Event gone from the API (expired, or its create failed) comes back with the count so far."""
    fake, clock = FakeClient(), Clock()
    recorder = EventRecorder(fake.as_client(), wall=clock)
    fake.fail("create", EVENTS, errors.ServerError(500, "InternalError", "etcd is away"))
    recorder.record(DS, "Warning", "FailedCreate", "Error creating: quota")
    clock.now += 1
    recorder.record(DS, "Warning", "FailedCreate", "Error creating: quota")
    await _flush(recorder)
    [event] = _events(fake)
    assert (event["count"], event["message"]) == (2, "Error creating: quota")
    assert fake.verbs(EVENTS) == ["create", "patch", "create"]
