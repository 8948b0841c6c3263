"""The controller's side of the ``Progressing`` condition: inputs, memory, gauge and warnings.

``dsctl.daemonset.progress`` decides (purely); this keeps what the decision needs across syncs
(the last progress time, which apps/v1 does not store) and publishes
``dsctl_daemonset_rollout_stuck``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from dsctl.daemonset.extensions import (
    DEFAULT_PROGRESS_DEADLINE_SECONDS,
    InvalidControl,
    progress_deadline_seconds,
    rollout_controls,
)
from dsctl.daemonset.progress import plan_progress, progressing_condition, with_progress
from dsctl.daemonset.status import Status
from dsctl_api.objects import name, namespace

from .progressmetrics import RolloutStuckMetric
from .recorder import EventRecorder

__all__ = ["ProgressTracker"]

Obj = Mapping[str, Any]


class ProgressTracker:
    """One per controller; ``condition`` on every status computation, ``forget`` on deletion."""

    def __init__(self, *, recorder: EventRecorder, registry: CollectorRegistry | None) -> None:
        self._recorder = recorder
        self._metric = RolloutStuckMetric(registry)
        # key -> last progress time of its rollout, for apps/v1 where lastUpdateTime is pruned.
        self._progress_at: dict[str, float] = {}

    def forget(self, key: str) -> None:
        """Drop the memory and the gauge series of a deleted DaemonSet."""
        self._progress_at.pop(key, None)
        self._metric.forget(key)

    def _deadline(self, ds: Obj) -> int:
        """The DaemonSet's progressDeadlineSeconds; an unreadable one falls back to the default."""
        try:
            return progress_deadline_seconds(ds)
        except InvalidControl as exc:
            self._recorder.record(ds, "Warning", "InvalidRolloutControl",
                                  f"{exc.field}: {exc.message}; {DEFAULT_PROGRESS_DEADLINE_SECONDS} s applies")
            return DEFAULT_PROGRESS_DEADLINE_SECONDS

    def condition(self, ds: Obj, old: Mapping[str, Any], status: Status, hash_: str, *, created: bool,
                  now: float) -> tuple[dict[str, Any], float | None]:
        """``old`` with its Progressing condition brought up to date, and when to look again."""
        key = f"{namespace(ds)}/{name(ds)}"
        try:
            controls = rollout_controls(ds)
            held = "paused" if controls.paused else ("held" if controls.holds_back else None)
        except InvalidControl:
            held = "paused"  # the rolling update is held until it is fixed (the controller says so)
        progress = plan_progress(previous=progressing_condition(old), old=Status.from_fields(old), new=status,
                                 revision=f"{name(ds)}-{hash_}", created=created, held=held,
                                 deadline=self._deadline(ds), now=now, remembered=self._progress_at.get(key))
        if progress.updated_at is not None:
            self._progress_at[key] = progress.updated_at
        self._metric.observe(key, stuck=progress.stuck)
        return with_progress(old, progress.condition), progress.requeue_after
