"""Expectations: set before writes, counted down by observations, expiring after 5 minutes."""

from __future__ import annotations

from dsctl.controller.expectations import EXPECTATIONS_TTL, Expectations

KEY = "default/foo"


class ManualClock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_no_record_is_satisfied() -> None:
    """A DaemonSet never synced may act."""
    assert Expectations(clock=ManualClock()).satisfied(KEY)


def test_observations_count_down_to_satisfied() -> None:
    """Each observed create and delete counts down; zero on both sides satisfies."""
    exp = Expectations(clock=ManualClock())
    exp.set(KEY, adds=2, dels=1)
    assert not exp.satisfied(KEY)
    exp.creation_observed(KEY)
    exp.deletion_observed(KEY)
    assert not exp.satisfied(KEY)
    exp.creation_observed(KEY)
    assert exp.satisfied(KEY)
    exp.creation_observed(KEY)
    assert exp.satisfied(KEY), "over-observation (a stray event) stays satisfied"


def test_lower_and_raise() -> None:
    """lower skips writes never attempted; raise_ adds more."""
    exp = Expectations(clock=ManualClock())
    exp.set(KEY, adds=10, dels=0)
    exp.lower(KEY, adds=9)
    record = exp.get(KEY)
    assert record is not None and record.adds == 1
    exp.raise_(KEY, dels=2)
    assert record.dels == 2


def test_changes_without_record_do_nothing() -> None:
    """Observations for a DaemonSet without a record create none."""
    exp = Expectations(clock=ManualClock())
    exp.creation_observed(KEY)
    exp.lower(KEY, adds=3)
    assert exp.get(KEY) is None and len(exp) == 0


def test_expiry_at_five_minutes() -> None:
    """An unfulfilled record stops blocking once older than the TTL, not before."""
    clock = ManualClock()
    exp = Expectations(clock=clock)
    exp.set(KEY, adds=1, dels=0)
    clock.now += EXPECTATIONS_TTL
    assert not exp.satisfied(KEY) and not exp.expired(KEY)
    clock.now += 0.001
    assert exp.satisfied(KEY) and exp.expired(KEY)


def test_set_restarts_expiry() -> None:
    """A new set overwrites counts and timestamp."""
    clock = ManualClock()
    exp = Expectations(clock=clock)
    exp.set(KEY, adds=1, dels=0)
    clock.now += EXPECTATIONS_TTL - 1
    exp.set(KEY, adds=1, dels=1)
    clock.now += 2
    assert not exp.satisfied(KEY)


def test_forget_drops_the_record() -> None:
    """forget drops the record (the DaemonSet is gone), and forgetting twice is harmless."""
    exp = Expectations(clock=ManualClock())
    exp.set(KEY, adds=5, dels=5)
    exp.forget(KEY, "uid")
    exp.forget(KEY, "uid")
    assert exp.satisfied(KEY) and not exp.holds(KEY, "uid")


def test_expires_in_counts_down_while_unfulfilled() -> None:
    """Seconds until a waiting record stops holding its key back; None once nothing waits."""
    now = [100.0]
    expectations = Expectations(clock=lambda: now[0], ttl=300)
    assert expectations.expires_in("k") is None
    expectations.set("k", adds=2, dels=0)
    now[0] = 160.0
    assert expectations.expires_in("k") == 240.0
    now[0] = 500.0
    assert expectations.expires_in("k") == 0.0
    expectations.set("k", adds=1, dels=0)
    expectations.creation_observed("k")
    assert expectations.expires_in("k") is None
