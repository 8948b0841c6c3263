"""``dsctl rollout status`` on a stuck rollout: kubectl's Deployment wording and order."""

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
