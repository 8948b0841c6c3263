"""The ``dsctl_daemonset_rollout_stuck`` gauge: 1 while a rollout is past its progress deadline.

Set from the ``Progressing`` condition each sync computes (see ``dsctl.daemonset.progress``),
so it says exactly what ``.status.conditions`` says: alert on it as on DataDog's
``ers_rolling_update_stuck``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

__all__ = ["RolloutStuckMetric"]


class RolloutStuckMetric:
    """``dsctl_daemonset_rollout_stuck{namespace,name}``; ``observe`` per sync, ``forget`` on deletion."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self._gauge = None if registry is None else Gauge(
            "dsctl_daemonset_rollout_stuck",
            "1 while the DaemonSet's rollout has made no progress for progressDeadlineSeconds, else 0.",
            ["namespace", "name"], registry=registry)

    def observe(self, key: str, *, stuck: bool) -> None:
        """Record whether DaemonSet ``namespace/name`` is stuck."""
        if self._gauge is not None:
            namespace, _, name = key.partition("/")
            self._gauge.labels(namespace, name).set(1 if stuck else 0)

    def forget(self, key: str) -> None:
        """Drop the series of a deleted DaemonSet."""
        if self._gauge is None:
            return
        namespace, _, name = key.partition("/")
        try:
            self._gauge.remove(namespace, name)
        except KeyError:
            return
