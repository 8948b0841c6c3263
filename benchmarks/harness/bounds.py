"""Lower bounds a rollout cannot beat, against which its wall time is judged.

Without surge, a node's new pod can only start once its old one is gone, and at most
``maxUnavailable`` nodes may be down at once, so a rolling update takes at least
``waves × (termination + startup)`` with ``waves = ceil(desired / maxUnavailable)``. A ratio
of 1.0 to this bound is a perfect controller with zero API latency.
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
    """The budget (nodes down at once), the number of waves, and the bound in seconds."""

    budget: int
    waves: int
    seconds: float


def rolling_update_bound(desired: int, max_unavailable: int | str, *, startup: float,
                         termination: float = SIM_TERMINATION_CAP) -> RolloutBound:
    """The lower bound of a surge-free rolling update of ``desired`` pods.

    ``max_unavailable`` is an int or a percentage of ``desired``, rounded up as the DaemonSet
    controller rounds it; 0 counts as 1 (the API's rule when maxSurge is 0 too).
    """
    budget = max(1, scaled_value(max_unavailable, desired, round_up=True)) if desired else 1
    waves = math.ceil(desired / budget) if desired else 0
    return RolloutBound(budget=budget, waves=waves, seconds=waves * (termination + startup))
