"""``dsctl rollout status``: kubectl's Deployment wording on a stuck rollout, and why a held one waits."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube.resources import DAEMONSETS
from dsctl.rollout.target import Target
from dsctl.rollout.views import RolloutError, status_message

TARGET = Target(DAEMONSETS, "default", "agent")


def _ds(*, generation: int, observed: int, reason: str, status: str = "False") -> dict[str, Any]:
    return {"metadata": {"name": "agent", "generation": generation},
            "spec": {"updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": 3, "updatedNumberScheduled": 1,
                       "numberAvailable": 2,
                       "conditions": [{"type": "Progressing", "status": status, "reason": reason}]}}


@pytest.mark.parametrize(
    ("ds", "error", "line"),
    [
        pytest.param(_ds(generation=2, observed=2, reason="ProgressDeadlineExceeded"),
                     'daemon set "agent" exceeded its progress deadline', None, id="stuck-errors"),
        pytest.param(_ds(generation=3, observed=2, reason="ProgressDeadlineExceeded"), None,
                     "Waiting for daemon set spec update to be observed...", id="new-generation-not-yet-judged"),
        pytest.param(_ds(generation=2, observed=2, reason="RevisionUpdated", status="True"), None,
                     'Waiting for daemon set "agent" rollout to finish: 1 out of 3 new pods have been updated...',
                     id="progressing-waits"),
    ],
)
def test_status_on_progress_deadline(ds: dict[str, Any], error: str | None, line: str | None) -> None:
    """As kubectl for Deployments: the deadline error only once the generation was observed."""
    if error is not None:
        with pytest.raises(RolloutError, match=error):
            status_message(TARGET, ds)
    else:
        assert status_message(TARGET, ds) == (line, False)


HELD = 'Rollout of revision "agent-5d8f" is held by partition 1 (dsctl.io/partition): 1 of 3 pods are held on ' \
       "older revisions."


@pytest.mark.parametrize(
    ("reason", "status", "second"),
    [
        pytest.param("RolloutHeld", "Unknown", f"RolloutHeld: {HELD}", id="held-says-why"),
        pytest.param("DaemonSetPaused", "Unknown", f"DaemonSetPaused: {HELD}", id="paused-says-why"),
        pytest.param("InvalidRolloutControl", "Unknown", f"InvalidRolloutControl: {HELD}", id="invalid-says-why"),
        pytest.param("UnhealthyNodes", "Unknown", f"UnhealthyNodes: {HELD}", id="skipped-nodes-say-why"),
        pytest.param("DepartingNodes", "Unknown", f"DepartingNodes: {HELD}", id="departing-nodes-say-why"),
        pytest.param("RevisionUpdated", "True", None, id="progressing-has-one-line"),
    ],
)
def test_a_held_rollout_says_why(reason: str, status: str, second: str | None) -> None:
    """Under kubectl's line, a rollout held on purpose gets the condition's reason and message."""
    ds = _ds(generation=2, observed=2, reason=reason, status=status)
    ds["status"]["conditions"][0]["message"] = HELD
    message, done = status_message(TARGET, ds)
    first = 'Waiting for daemon set "agent" rollout to finish: 1 out of 3 new pods have been updated...'
    assert (message, done) == ("\n".join(line for line in (first, second) if line), False)
