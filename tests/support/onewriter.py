"""The invariant **one writer**, judged from the simulator's request log alone.

Every controller replica sends its identity in its User-Agent (``dsctl/<v> (<identity>)``),
from the workers' client and the leader-election client alike, so the log tells who wrote and
who renewed. The simulator appends a record once it has served the request (after the write
was committed), so the log's order is the order in which writes took effect.

Definitions:

- **Lease history**: the successful (2xx) creates and updates of the leader-election Lease, in
  log order; the **holder** at a point of the log is the agent of the last one before it.
- **A write**: create, update, patch, delete or deletecollection by a controller agent on pods,
  DaemonSets (status included) or ControllerRevisions, whatever the answer: a refused write
  still left its process as a write.
- **Violation**: a write by an agent other than the holder, or before any holder.

The handover window is therefore exact: the old holder may write until the new holder's first
successful Lease write is logged, and not once after it; the new holder writes only from then
on. (A holder's own release is a Lease update too; the released holder has stopped its
workers before it, so no write of it can follow.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.requestaudit import is_controller_agent

__all__ = ["OBJECT_RESOURCES", "WRITE_VERBS", "Handover", "lease_history", "one_writer_violations"]

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
OBJECT_RESOURCES = frozenset({"pods", "daemonsets", "controllerrevisions"})


@dataclass(frozen=True)
class Handover:
    """The Lease changed hands at log position ``seq`` (``previous`` is '' for the first holder)."""

    seq: int
    previous: str
    holder: str


def _sorted(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(records, key=lambda r: int(r["seq"]))


def _is_lease_write(record: Mapping[str, Any], lease: str) -> bool:
    # A create names no object in its path, so the log has no name for it: dsctl creates
    # only its own Lease.
    named = record.get("name") == lease or (record["verb"] == "create" and not record.get("name"))
    return (record["resource"] == "leases" and named and record["verb"] in ("create", "update")
            and 200 <= int(record["code"]) < 300)


def lease_history(records: Iterable[Mapping[str, Any]], *, lease: str = "dsctl") -> list[Handover]:
    """Each change of the agent renewing the Lease, in log order."""
    changes: list[Handover] = []
    holder = ""
    for record in _sorted(records):
        agent = str(record["user_agent"])
        if _is_lease_write(record, lease) and agent != holder:
            changes.append(Handover(int(record["seq"]), holder, agent))
            holder = agent
    return changes


def one_writer_violations(records: Iterable[Mapping[str, Any]], *, lease: str = "dsctl") -> list[str]:
    """Every object write not made by the Lease holder of its moment (see the module docstring)."""
    found: list[str] = []
    holder = ""
    for record in _sorted(records):
        agent = str(record["user_agent"])
        if not is_controller_agent(agent):
            continue
        if _is_lease_write(record, lease):
            holder = agent
        elif record["resource"] in OBJECT_RESOURCES and record["verb"] in WRITE_VERBS and agent != holder:
            what = f"{record['verb']} {record['resource']}"
            if record.get("subresource"):
                what += f"/{record['subresource']}"
            found.append(f"one writer: {what} {record.get('name') or ''} (code {record['code']}, seq "
                         f"{record['seq']}) by {agent} while the Lease holder was {holder or 'nobody'}")
    return found
