"""``preflight``: an overloaded server is waited out for a while; a misconfiguration is not."""

from __future__ import annotations

import random
from typing import Any, cast

import pytest

from dsctl.app.preflight import OVERLOAD_PATIENCE, UNREACHABLE_PATIENCE, overload_backoff, preflight
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.ratelimit import Backoff
from dsctl.kube.resources import DAEMONSETS
from tests.support.fakeclock import SleepClock


class ScriptedLists:
    """A client whose ``list`` raises the scripted errors in turn, then answers."""

    host = "https://127.0.0.1:6443"

    def __init__(self, *answers: errors.ApiError | None) -> None:
        self.answers = list(answers)
        self.calls = 0

    async def list(self, res: Any, **_: Any) -> dict[str, Any]:
        self.calls += 1
        answer = self.answers.pop(0) if self.answers else None
        if answer is not None:
            raise answer
        return {"items": []}


class Ceiling(random.Random):
    """Jitter that always lands on the full delay."""

    def random(self) -> float:
        return 1.0


def _busy(retry_after: float | None = None) -> errors.ApiError:
    return errors.TooManyRequests(429, "TooManyRequests", "slow down", retry_after=retry_after)


async def test_an_overloaded_server_is_waited_out() -> None:
    client = ScriptedLists(_busy(), errors.ServerError(503, "ServiceUnavailable", "restarting"), _busy(), None)
    clock = SleepClock()
    await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep,
                    backoff=Backoff(base=0.5, cap=5.0, rng=Ceiling()))
    assert client.calls == 4
    assert clock.slept == [0.5, 1.0, 2.0]


async def test_the_waits_are_jittered_and_capped() -> None:
    """Replicas started together spread out: each wait is in [delay/2, delay], delay doubling to 5 s."""
    client = ScriptedLists(*[_busy() for _ in range(8)], None)
    clock = SleepClock()
    await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep,
                    backoff=Backoff(base=0.5, cap=5.0, rng=random.Random(7)))
    ceilings = [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0]
    assert len(clock.slept) == len(ceilings)
    assert all(c / 2 <= s <= c for s, c in zip(clock.slept, ceilings, strict=True)), clock.slept
    assert len(set(clock.slept)) == len(clock.slept)


async def test_a_longer_retry_after_is_honoured() -> None:
    client = ScriptedLists(_busy(retry_after=3.0), None)
    clock = SleepClock()
    await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep,
                    backoff=overload_backoff())
    assert clock.slept == [3.0]


async def test_an_overload_that_outlasts_the_patience_ends_start_up() -> None:
    client = ScriptedLists(*[_busy() for _ in range(100)])
    clock = SleepClock()
    with pytest.raises(errors.TooManyRequests):
        await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep)
    assert clock.now <= OVERLOAD_PATIENCE


async def test_a_server_restarting_is_waited_for() -> None:
    """Refused connections (an API server restarting as the controller starts) are retried."""
    client = ScriptedLists(errors.ConnectionFailed("connection refused"), errors.ConnectionFailed("reset"), None)
    clock = SleepClock()
    await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep,
                    backoff=Backoff(base=0.5, cap=5.0, rng=Ceiling()))
    assert client.calls == 3
    assert clock.slept == [0.5, 1.0]


@pytest.mark.parametrize(("error", "patience"), [
    pytest.param(errors.ConnectionFailed("connection refused"), UNREACHABLE_PATIENCE, id="unreachable"),
    pytest.param(errors.ServerError(503, "ServiceUnavailable", "restarting"), OVERLOAD_PATIENCE, id="overloaded"),
])
async def test_each_kind_of_failure_has_its_own_patience(error: errors.ApiError, patience: float) -> None:
    """An unreachable server is given up on after kube-controller-manager's 10 s, an overloaded one after 60 s."""
    client = ScriptedLists(*[error for _ in range(100)])
    clock = SleepClock()
    with pytest.raises(type(error)):
        await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep,
                        backoff=Backoff(base=0.5, cap=5.0, rng=Ceiling()))
    assert clock.now <= patience
    assert clock.now + 5.0 > patience, "gave up while the next wait still fitted"


@pytest.mark.parametrize("error", [
    pytest.param(errors.Unauthorized(401, "Unauthorized", "bad token"), id="bad-token"),
    pytest.param(errors.Forbidden(403, "Forbidden", "cannot list daemonsets"), id="forbidden"),
])
async def test_a_misconfiguration_fails_at_once(error: errors.ApiError) -> None:
    client = ScriptedLists(error, None)
    clock = SleepClock()
    with pytest.raises(type(error)):
        await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None, monotonic=clock, sleep=clock.sleep)
    assert client.calls == 1 and clock.slept == []


async def test_a_missing_kind_says_what_to_install() -> None:
    client = ScriptedLists(errors.NotFound(404, "NotFound", "the server could not find the requested resource"))
    with pytest.raises(errors.ConfigError, match="does not serve apps/v1 DaemonSets"):
        await preflight(cast(KubeClient, client), DAEMONSETS, namespace=None)
