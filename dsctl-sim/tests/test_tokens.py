"""Bearer-token rotation in the simulator (``dsctl_sim.tokens``), on an injected clock."""

from __future__ import annotations

import pytest

from dsctl_sim.state import ApiState
from dsctl_sim.storage import Storage
from dsctl_sim.tokens import accepts, rotate


class Clock:
    """Wall time that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _state(token: str | None) -> tuple[ApiState, Clock]:
    clock = Clock()
    return ApiState(storage=Storage(bootstrap_namespaces=False), token=token, now=clock), clock


@pytest.mark.parametrize(("grace", "later", "old_accepted"), [
    pytest.param(0.0, 0.0, False, id="revoked-at-once"),
    pytest.param(30.0, 29.0, True, id="within-grace"),
    pytest.param(30.0, 30.0, False, id="grace-over"),
])
def test_rotation_grace(grace: float, later: float, old_accepted: bool) -> None:
    """After a rotation the new token works and the old one only within its grace."""
    state, clock = _state("old")
    rotate(state, "new", grace_seconds=grace)
    clock.now += later
    assert accepts(state, "new")
    assert accepts(state, "old") is old_accepted
    assert not accepts(state, "other")


def test_second_rotation_shortens_every_grace() -> None:
    """Rotating again with grace 0 revokes tokens still inside an earlier, longer grace."""
    state, _ = _state("old")
    rotate(state, "new", grace_seconds=3600)
    assert accepts(state, "old")
    rotate(state, "new", grace_seconds=0)
    assert accepts(state, "new") and not accepts(state, "old")
    assert state.token_rotations == 2


def test_rotation_from_any_token() -> None:
    """A server that accepted any token accepts only the rotated one afterwards."""
    state, _ = _state(None)
    assert accepts(state, "whatever")
    rotate(state, "only", grace_seconds=10)
    assert accepts(state, "only") and not accepts(state, "whatever")
