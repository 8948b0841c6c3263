"""Failed-pod backoff: 1 s doubling to 15 min, exact boundaries, expiry and GC, on injected time."""

from __future__ import annotations

import pytest

from dsctl.controller.backoffstate import FailedPodBackoff

KEY = "uid/1/node-0"


def test_delays_double_up_to_the_maximum() -> None:
    """Each step doubles the delay, capped at the maximum."""
    backoff = FailedPodBackoff(initial=1.0, maximum=900.0)
    now = 0.0
    delays = []
    for _ in range(12):
        delays.append(backoff.next(KEY, now=now))
        now += delays[-1]
    assert delays == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900]


def test_boundaries() -> None:
    """In backoff strictly before last_update + delay; not at it."""
    backoff = FailedPodBackoff(initial=1.0, maximum=900.0)
    assert not backoff.in_backoff(KEY, now=100.0)
    backoff.next(KEY, now=100.0)
    assert backoff.in_backoff(KEY, now=100.0)
    assert backoff.in_backoff(KEY, now=100.999)
    assert backoff.remaining(KEY, now=100.25) == pytest.approx(0.75)
    assert not backoff.in_backoff(KEY, now=101.0)
    assert backoff.remaining(KEY, now=101.0) == 0.0
    assert backoff.get(KEY) == 1.0


def test_waiting_does_not_raise_the_delay() -> None:
    """Checking while in backoff leaves the delay as it was."""
    backoff = FailedPodBackoff()
    backoff.next(KEY, now=0.0)
    for t in (0.1, 0.5, 0.9):
        assert backoff.in_backoff(KEY, now=t)
    assert backoff.get(KEY) == 1.0
    assert backoff.next_delay(KEY, now=0.5) == 2.0
    assert backoff.get(KEY) == 1.0


def test_expiry_restarts_at_initial() -> None:
    """An entry idle for more than twice the maximum is forgotten: the next delay is initial again."""
    backoff = FailedPodBackoff(initial=1.0, maximum=10.0)
    backoff.next(KEY, now=0.0)
    backoff.next(KEY, now=1.0)
    assert backoff.get(KEY) == 2.0
    assert backoff.next_delay(KEY, now=21.0) == 4.0
    assert backoff.next_delay(KEY, now=21.5) == 1.0
    assert backoff.next(KEY, now=21.5) == 1.0


def test_gc_and_forget() -> None:
    """gc drops idle entries; forget drops every entry of one DaemonSet."""
    backoff = FailedPodBackoff(initial=1.0, maximum=10.0)
    backoff.next("a/1/n1", now=0.0)
    backoff.next("a/1/n2", now=15.0)
    backoff.next("b/1/n1", now=15.0)
    assert backoff.gc(now=20.5) == 1
    assert len(backoff) == 2
    assert backoff.holds("default/a", "a")
    backoff.forget("default/a", "a")
    assert not backoff.holds("default/a", "a")
    assert len(backoff) == 1 and backoff.get("b/1/n1") == 1.0


@pytest.mark.parametrize(
    ("initial", "maximum"),
    [pytest.param(0.0, 1.0, id="zero-initial"), pytest.param(2.0, 1.0, id="max-below-initial")],
)
def test_rejects_bad_bounds(initial: float, maximum: float) -> None:
    """Nonsense bounds fail at construction, not at the first failed pod."""
    with pytest.raises(ValueError):
        FailedPodBackoff(initial=initial, maximum=maximum)
