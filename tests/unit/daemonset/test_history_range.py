"""Revision numbers stay within int64: an orphan that would force a larger one is not adopted,
and a plan never numbers a revision beyond ``MAX_REVISION``."""

from __future__ import annotations

import pytest

from dsctl.daemonset.history import MAX_REVISION, RevisionOverflow, adoption_refusal, plan_history
from tests.unit.daemonset.test_history_plan import make_ds, make_revision


@pytest.mark.parametrize(
    ("number", "refused"),
    [
        pytest.param(1, False, id="ordinary"),
        pytest.param(MAX_REVISION - 1, False, id="one-below-max-leaves-room"),
        pytest.param(MAX_REVISION, True, id="int64-max"),
        pytest.param(MAX_REVISION + 1, True, id="beyond-int64"),
    ],
)
def test_adoption_refusal(number: int, refused: bool) -> None:
    """An orphan numbered at or above int64's maximum is refused, with the field and the value named."""
    reason = adoption_refusal(make_revision("agent-orphan", "agent:0", number))
    assert (reason is not None) == refused
    if reason is not None:
        assert "revision" in reason and str(number) in reason and "ops/agent-orphan" in reason


@pytest.mark.parametrize(
    "current_image",
    [
        pytest.param("agent:new", id="snapshot-needs-max-plus-one"),
        pytest.param("agent:1", id="rollback-renumber-needs-max-plus-one"),
    ],
)
def test_plan_refuses_a_number_beyond_int64(current_image: str) -> None:
    """With an owned revision at int64's maximum, a plan that needs a higher number raises, naming it."""
    revisions = [make_revision("agent-1", "agent:1", 1), make_revision("agent-top", "agent:2", MAX_REVISION)]
    with pytest.raises(RevisionOverflow) as caught:
        plan_history(ds=make_ds(current_image), revisions=revisions)
    assert caught.value.names == ("agent-top",)
    assert str(MAX_REVISION) in str(caught.value)


def test_current_revision_at_max_needs_no_write() -> None:
    """The current template already numbered int64's maximum is kept as it is: nothing overflows."""
    revisions = [make_revision("agent-1", "agent:1", 1), make_revision("agent-top", "agent:2", MAX_REVISION)]
    plan = plan_history(ds=make_ds("agent:2"), revisions=revisions)
    assert not plan.has_writes and plan.revision == MAX_REVISION


def test_snapshot_may_take_int64_max_itself() -> None:
    """The highest old revision at max-1 leaves exactly one number: the snapshot gets int64's maximum."""
    plan = plan_history(ds=make_ds("agent:new"), revisions=[make_revision("agent-1", "agent:1", MAX_REVISION - 1)])
    assert plan.create is not None and plan.create["revision"] == MAX_REVISION
