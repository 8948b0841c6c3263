"""Plan values: merging manage and update output, and Status field mapping."""

from __future__ import annotations

import pytest

import dsctl.daemonset as domain
from dsctl.daemonset.podplan import Event, Plan, PodRef, merge_plans
from dsctl.daemonset.status import STATUS_FIELDS, Status

A = PodRef("ns", "a", "uid-a", "n1")
A_AGAIN = PodRef("ns", "a", "uid-a", "")
B = PodRef("ns", "b", "uid-b", "n2")


def test_merge_plans() -> None:
    """Merging keeps order, drops repeated creates and deletes, and keeps the soonest requeue."""
    first = Plan(
        creates=("n1", "n2"),
        deletes=(A,),
        events=(Event("Normal", "R", "m"),),
        requeue_after=5.0,
        backoff_steps=("k1",),
    )
    second = Plan(creates=("n2", "n3"), deletes=(A_AGAIN, B), requeue_after=2.0, backoff_steps=("k1", "k2"))
    merged = merge_plans([first, second])
    assert merged.creates == ("n1", "n2", "n3")
    assert merged.deletes == (A, B)
    assert merged.events == first.events
    assert merged.requeue_after == 2.0
    assert merged.backoff_steps == ("k1", "k2")


@pytest.mark.parametrize(
    ("requeues", "expected"),
    [
        pytest.param([None, None], None, id="none"),
        pytest.param([None, 3.0], 3.0, id="one"),
        pytest.param([4.0, 3.0, None], 3.0, id="soonest"),
    ],
)
def test_merge_requeue(requeues: list[float | None], expected: float | None) -> None:
    """The merged requeue is the soonest requested, or None."""
    assert merge_plans(Plan(requeue_after=r) for r in requeues).requeue_after == expected


def test_plan_flags() -> None:
    """has_writes is about pods only; empty means nothing at all to do."""
    assert Plan().empty and not Plan().has_writes
    assert Plan(creates=("n",)).has_writes
    assert not Plan(events=(Event("Warning", "X", "m"),)).has_writes
    assert not Plan(requeue_after=1.0).empty


def test_pod_ref_of_malformed_pod() -> None:
    """A ref built from a pod with missing metadata has empty fields, not an exception."""
    assert PodRef.of({"metadata": {"name": 3}}, node="n") == PodRef("", "", "", "n")


def test_status_fields_round_trip() -> None:
    """Status maps to and from the API field names, ignoring malformed values."""
    status = Status(1, 2, 3, 4, 5, 6, 7)
    fields = status.as_fields()
    assert list(fields) == list(STATUS_FIELDS.values())
    assert fields["numberMisscheduled"] == 3
    assert Status.from_fields(fields) == status
    assert Status.from_fields({"numberReady": "4", "desiredNumberScheduled": True}) == Status()


def test_public_surface() -> None:
    """Everything the package exports exists."""
    for public in domain.__all__:
        assert hasattr(domain, public), public
