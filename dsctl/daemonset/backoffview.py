"""The domain's read-only face of the failed-pod backoff: its key, and the view planners read.

A pod that the kubelet keeps rejecting (a host port in use, a bad volume) fails again right
after each replacement; without a brake the controller and the kubelet fight in a hot loop.
So each (DaemonSet, generation, node) has a delay during which its failed pod is left alone.
The key includes ``status.observedGeneration``: a new template generation gets a fresh start.

The state itself changes as the controller replaces pods, so it lives beside the executor
(``dsctl.controller.backoffstate.FailedPodBackoff``). Planners see only ``BackoffView``: they
ask whether a key is in backoff and for how long, and return the keys to step in
``Plan.backoff_steps``; the controller steps them when it applies the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from dsctl_api.objects import as_int, as_map, uid

__all__ = ["BackoffView", "backoff_key"]


def backoff_key(ds: Mapping[str, Any], node_name: str) -> str:
    """``<ds uid>/<status.observedGeneration>/<node>``."""
    generation = as_int(as_map(as_map(ds).get("status")).get("observedGeneration"))
    return f"{uid(ds)}/{generation}/{node_name}"


class BackoffView(Protocol):
    """The read-only face of the backoff state that planners see. Time is passed in (``now``)."""

    def in_backoff(self, key: str, *, now: float) -> bool: ...

    def remaining(self, key: str, *, now: float) -> float: ...

    def next_delay(self, key: str, *, now: float) -> float: ...
