"""Spec-level rollout limits beyond upstream: ``progressDeadlineSeconds`` and ``burstReplicas``.

Unlike ``controls`` (which live under ``spec.updateStrategy.rollingUpdate``), these sit at
``spec`` level, where Deployment keeps ``progressDeadlineSeconds``. Read in both modes, the
field first, then the annotation:

- ``progressDeadlineSeconds`` (default 600, as Deployment's): field
  ``spec.progressDeadlineSeconds: 300``, annotation ``dsctl.io/progress-deadline-seconds: "300"``.
  A rollout that makes no progress for that long is reported ``ProgressDeadlineExceeded``
  (see ``progress``).
- ``burstReplicas`` (default: the controller's ``--burst-replicas``): field
  ``spec.burstReplicas: 10``, annotation ``dsctl.io/burst-replicas: "10"``. At most this many
  pod creates, and this many deletes, are in flight for the DaemonSet; it can only lower the
  global burst (kubernetes issue 113287).

Both are positive integers; anything else raises ``InvalidControl`` naming where it was read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl.daemonset.controls import ANNOTATION_PREFIX, InvalidControl
from dsctl_api.objects import annotations_of, as_map, spec

__all__ = [
    "BURST_ANNOTATION",
    "DEADLINE_ANNOTATION",
    "DEFAULT_PROGRESS_DEADLINE_SECONDS",
    "burst_replicas",
    "effective_burst",
    "progress_deadline_seconds",
]

DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
"""Deployment's default, kept for DaemonSets."""

DEADLINE_ANNOTATION = ANNOTATION_PREFIX + "progress-deadline-seconds"
BURST_ANNOTATION = ANNOTATION_PREFIX + "burst-replicas"


def _positive_int(ds: Mapping[str, Any], field: str, annotation: str) -> int | None:
    """The value of ``spec.<field>`` or else the annotation; None when neither is set."""
    value = as_map(spec(ds)).get(field)
    where = f"spec.{field}"
    if value is None:
        value = annotations_of(ds).get(annotation)
        where = f"metadata.annotations[{annotation}]"
        if value is None:
            return None
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.isdigit():
            raise InvalidControl(where, f"must be a positive integer, not {value!r}")
        value = int(stripped)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidControl(where, f"must be a positive integer, not {value!r}")
    return value


def progress_deadline_seconds(ds: Mapping[str, Any]) -> int:
    """Seconds without progress before a rollout is reported stuck; raises ``InvalidControl``."""
    found = _positive_int(ds, "progressDeadlineSeconds", DEADLINE_ANNOTATION)
    return DEFAULT_PROGRESS_DEADLINE_SECONDS if found is None else found


def burst_replicas(ds: Mapping[str, Any]) -> int | None:
    """The DaemonSet's own burst, or None when unset; raises ``InvalidControl``."""
    return _positive_int(ds, "burstReplicas", BURST_ANNOTATION)


def effective_burst(ds: Mapping[str, Any], *, global_burst: int) -> int:
    """min(global, per-DaemonSet): a DaemonSet may lower the burst, never raise it.

    An unreadable value falls back to the global burst (the caller reports it).
    """
    try:
        own = burst_replicas(ds)
    except InvalidControl:
        return global_burst
    return global_burst if own is None else min(global_burst, own)
