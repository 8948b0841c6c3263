"""``kubectl get events`` rows for both Event APIs (core/v1 and events.k8s.io/v1).

The two APIs name the same facts differently (``involvedObject``/``regarding``,
``message``/``note``, ``count``/``deprecatedCount``...); kube-apiserver prints both through the
internal type, so here events.k8s.io events are read through a field map and share one row
function. Default columns are LAST SEEN, TYPE, REASON, OBJECT and MESSAGE; there is no NAME
column except in wide output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl_sim.discovery.printers import Column, Obj, Row, age, col

__all__ = ["EVENT_COLUMNS", "event_row"]

EVENT_COLUMNS: list[Column] = [
    col("Last Seen", description="When the event was last observed."),
    col("Type", description="Normal or Warning."),
    col("Reason", description="Short machine-readable reason."),
    col("Object", description="The object the event is about."),
    col("Subobject", priority=1, description="The part of the object (a container) the event is about."),
    col("Source", priority=1, description="The component that reported the event."),
    col("Message", description="Human-readable description."),
    col("First Seen", priority=1, description="When the event was first observed."),
    col("Count", priority=1, description="How many times the event occurred."),
    col("Name", priority=1, fmt="name", description="The event's object name."),
]

# events.k8s.io/v1 field -> core/v1 field
_NEW_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}


def _as_core(event: Obj) -> dict[str, Any]:
    core = dict(event)
    for new, old in _NEW_TO_CORE.items():
        if new in event:
            core[old] = event[new]
    return core


def _section(obj: Obj, field: str) -> Obj:
    value = obj.get(field)
    return value if isinstance(value, Mapping) else {}


def event_row(event: Obj, now: float, *, new_api: bool = False) -> Row:
    """One row; ``new_api`` for an events.k8s.io/v1 object."""
    e = _as_core(event) if new_api else event
    first = age(e.get("firstTimestamp"), now) if e.get("firstTimestamp") else age(e.get("eventTime"), now)
    last = age(e.get("lastTimestamp"), now) if e.get("lastTimestamp") else first
    count = int(e.get("count") or 0)
    series = _section(e, "series")
    if series:
        last = age(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = _section(e, "involvedObject")
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = _section(e, "source")
    component = source.get("component") or e.get("reportingComponent") or ""
    host = source.get("host") or e.get("reportingInstance") or ""
    source_cell = f"{component}, {host}" if component and host else str(component)
    return [
        last,
        e.get("type", ""),
        e.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        source_cell,
        str(e.get("message") or "").strip(),
        first,
        count,
        _section(e, "metadata").get("name", ""),
    ]
