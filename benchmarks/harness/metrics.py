"""What the processes say about themselves: Prometheus text and the simulator's request log.

The controller's ``/metrics`` gives sync and request counts; the simulator's request log
(``GET /sim/requests``) gives every request it answered, with its client's user agent and its
own clock, so a benchmark can count a process's writes or find a create window afterwards.
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.simproc import SimProcess

__all__ = ["bucket_quantiles", "histogram", "request_log", "watch_delivery", "writes_by"]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def histogram(text: str, name: str) -> dict[str, float]:
    """``{"count", "sum"}`` of histogram ``name`` in Prometheus text, summed over its series."""
    out = {"count": 0.0, "sum": 0.0}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        metric, value = match.group(1), float(match.group(3))
        if metric == f"{name}_count":
            out["count"] += value
        elif metric == f"{name}_sum":
            out["sum"] += value
    return out


def bucket_quantiles(text: str, name: str, *, labels: dict[str, str], quantiles: tuple[float, ...] = (0.5, 0.9, 0.99),
                     ) -> dict[str, float | None]:
    """Count, mean and quantiles (each the upper bound of the bucket it falls in; None past the
    last finite bucket) of histogram ``name``'s one series whose labels include ``labels``."""
    buckets: list[tuple[float, float]] = []
    count = total = 0.0
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or not match.group(1).startswith(name):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if any(found.get(k) != v for k, v in labels.items()):
            continue
        metric, value = match.group(1), float(match.group(3))
        if metric == f"{name}_bucket":
            buckets.append((float(found["le"]), value))
        elif metric == f"{name}_count":
            count = value
        elif metric == f"{name}_sum":
            total = value
    buckets.sort()
    out: dict[str, float | None] = {"count": count, "mean": total / count if count else None}
    for q in quantiles:
        bound = next((le for le, seen in buckets if count and seen >= q * count), None)
        out[f"p{round(q * 100)}"] = bound if bound is not None and bound != float("inf") else None
    return out


async def watch_delivery(sim: SimProcess, *, resource: str) -> dict[str, Any]:
    """How long the sim's watch streams of ``resource`` held a change before sending it
    (``sim_apiserver_watch_delivery_seconds``): batches sent, and per batch its oldest change's
    wait in ms (mean; p50/p90/p99 as bucket upper bounds). Empty on a sim without the metric."""
    status, text = await sim.request("GET", "/metrics")
    if status != 200 or not isinstance(text, str):
        return {}
    found = bucket_quantiles(text, "sim_apiserver_watch_delivery_seconds", labels={"resource": resource})
    if not found["count"]:
        return {}
    return {"batches": int(found["count"] or 0),
            **{f"{k}_ms": round(v * 1000, 2) for k, v in found.items() if k != "count" and v is not None}}


async def request_log(sim: SimProcess, *, since: int) -> tuple[list[dict[str, Any]], int, int]:
    """Every request-log record after cursor ``since``: ``(records, next cursor, dropped)``."""
    records: list[dict[str, Any]] = []
    dropped = 0
    while True:
        page = await sim.requests(since=since, limit=10_000)
        records.extend(page["items"])
        dropped += int(page.get("dropped") or 0)
        if not page["items"]:
            return records, int(page["next"]), dropped
        since = int(page["next"])


def writes_by(records: list[dict[str, Any]], *, agent: str, start: float | None = None,
              end: float | None = None) -> dict[str, int]:
    """Write requests (by ``verb resource[/subresource]``) whose user agent starts with
    ``agent``, optionally only those the sim logged between ``start`` and ``end`` (its clock)."""
    writes: dict[str, int] = {}
    for r in records:
        if not str(r["user_agent"]).startswith(agent) or r["verb"] not in WRITE_VERBS:
            continue
        if (start is not None and r["time"] < start) or (end is not None and r["time"] > end):
            continue
        key = f"{r['verb']} {r['resource']}{'/' + r['subresource'] if r['subresource'] else ''}"
        writes[key] = writes.get(key, 0) + 1
    return dict(sorted(writes.items()))
