"""Lower bounds a rollout cannot beat, against which its wall time is judged.

Without surge, a node's new pod can only start once its old one is gone, and at most
``maxUnavailable`` nodes may be down at once, so a rolling update takes at least
``waves × (termination + startup)`` with ``waves = ceil(desired / maxUnavailable)``: the
*wave bound*, a perfect controller's on an API server with no cost per write.

Every node also needs one delete and one create, and the API server takes only so many writes
a second. At the write rate a tight raw client reaches on the same simulator in the same run,
the writes alone take ``2 × desired / rate``: the *write bound*. Both hold at once, so the
rollout takes at least the larger of the two (``api_seconds``, ADR 0196). Not their sum:
deletes and creates overlap with other nodes' termination and start-up, and a controller that
keeps the API busy beats the sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dsctl_api.intstr import scaled_value

__all__ = ["SIM_TERMINATION_CAP", "RolloutBound", "rolling_update_bound"]

SIM_TERMINATION_CAP = 1.0
"""Seconds the simulator's kubelet lets a deleted pod terminate (its cap on the grace period)."""


@dataclass(frozen=True, slots=True)
class RolloutBound:
    """The budget (nodes down at once), the number of waves, the wave bound in seconds, and
    the write bound (0 when no write rate is known)."""

    budget: int
    waves: int
    seconds: float
    write_seconds: float = 0.0

    @property
    def api_seconds(self) -> float:
        """The bound with the API server's write rate: the larger of the two."""
        return max(self.seconds, self.write_seconds)


def rolling_update_bound(desired: int, max_unavailable: int | str, *, startup: float,
                         termination: float = SIM_TERMINATION_CAP, write_rate: float | None = None) -> RolloutBound:
    """The lower bound of a surge-free rolling update of ``desired`` pods.

    ``max_unavailable`` is an int or a percentage of ``desired``, rounded up as the DaemonSet
    controller rounds it; 0 counts as 1 (the API's rule when maxSurge is 0 too). ``write_rate``
    is the writes per second the API server takes from a raw client, for the write bound.
    """
    budget = max(1, scaled_value(max_unavailable, desired, round_up=True)) if desired else 1
    waves = math.ceil(desired / budget) if desired else 0
    writes = 2 * desired / write_rate if write_rate else 0.0
    return RolloutBound(budget=budget, waves=waves, seconds=waves * (termination + startup), write_seconds=writes)
