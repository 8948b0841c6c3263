"""What the controller asked of the API server, as RBAC sees it: (API group, resource, verb).

The simulated API server logs every request with its User-Agent. The controller's agent is
``dsctl/<version> (<identity>_<8 hex>)``; the tests' own clients and kubectl send other agents,
so filtering on that shape isolates the controller's traffic even with several replicas.

Two uses:

- a scenario test derives the permissions one run used (``permissions_used``) and compares
  them with the manifests' grants (see ``tests/rbac/``);
- integration fixtures call ``record_controller_requests(sim, source=...)`` at teardown, so one
  pytest session accumulates what the whole integration suite used in ``SESSION``. When the
  environment variable ``DSCTL_REQUEST_AUDIT`` names a file, each record is also appended
  there as one JSON line, so runs split over processes can be merged (``load_audit_file``).

Counting rules (how kube-apiserver authorizes): a request needs its verb on its resource
whatever the answer was, so failed requests (404 on a get, 409 on an update) count too; a
subresource is its own resource (``daemonsets/status``); a watch needs ``watch``, a list
``list``. Lease requests also keep the object name, because the leader-election Role limits
``get``/``update`` to one ``resourceName``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "AUDIT_FILE_ENV",
    "CONTROLLER_AGENT",
    "SESSION",
    "Permission",
    "RequestAudit",
    "is_controller_agent",
    "load_audit_file",
    "permission_of",
    "permissions_used",
    "read_all_requests",
    "record_controller_requests",
]

AUDIT_FILE_ENV = "DSCTL_REQUEST_AUDIT"

# dsctl/0.1.0 (worker-7_0a1b2c3d): the identity is the pod name or host name plus a nonce.
CONTROLLER_AGENT = re.compile(r"^dsctl/\S+ \((?P<identity>.+)_[0-9a-f]{8}\)$")

# Resources whose permission checks may be limited by object name in the manifests.
NAMED_RESOURCES = frozenset({("coordination.k8s.io", "leases")})


@dataclass(frozen=True, order=True)
class Permission:
    """One RBAC-relevant use: ``verb`` on ``resource`` (``plural[/subresource]``) in ``group``.

    ``name`` is set only for resources in ``NAMED_RESOURCES`` and verbs that address one
    object; elsewhere it is ``""`` so that uses collapse to what a rule without
    ``resourceNames`` grants.
    """

    group: str
    resource: str
    verb: str
    name: str = ""

    def __str__(self) -> str:
        group = self.group or "core"
        named = f" name={self.name}" if self.name else ""
        return f"{self.verb} {group}/{self.resource}{named}"

    def without_name(self) -> Permission:
        """The same use, ignoring the object name."""
        return Permission(self.group, self.resource, self.verb)


class _RequestSource(Protocol):
    async def requests(self, *, since: int = 0, limit: int = 10_000) -> dict[str, Any]:
        """Request log records after ``since``."""
        ...


def is_controller_agent(user_agent: str) -> bool:
    """Whether a User-Agent is the controller's (and not kubectl's or a test client's)."""
    return CONTROLLER_AGENT.match(user_agent) is not None


def permission_of(record: Mapping[str, Any]) -> Permission | None:
    """The permission one request-log record needed; None for non-resource paths."""
    resource = str(record.get("resource") or "")
    if not resource:
        return None
    group = str(record.get("group") or "")
    sub = str(record.get("subresource") or "")
    verb = str(record.get("verb") or "")
    full = f"{resource}/{sub}" if sub else resource
    name = ""
    if (group, resource) in NAMED_RESOURCES and verb in ("get", "update", "patch", "delete"):
        name = str(record.get("name") or "")
    return Permission(group, full, verb, name)


def permissions_used(records: Iterable[Mapping[str, Any]], *, agent: str | None = None) -> set[Permission]:
    """Permissions needed by the controller's requests among ``records``.

    ``agent`` narrows to one process (its exact User-Agent); by default every controller
    process counts.
    """
    used: set[Permission] = set()
    for record in records:
        ua = str(record.get("user_agent") or "")
        if not is_controller_agent(ua) or (agent is not None and ua != agent):
            continue
        permission = permission_of(record)
        if permission is not None:
            used.add(permission)
    return used


async def read_all_requests(sim: _RequestSource, *, since: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Every request-log record after ``since`` (following the cursor page by page), and the next cursor.

    Raises ``AssertionError`` when the ring buffer dropped records: an audit with holes
    would under-report.
    """
    items: list[dict[str, Any]] = []
    cursor = since
    while True:
        page = await sim.requests(since=cursor)
        if page.get("dropped"):
            raise AssertionError(f"request log dropped {page['dropped']} records; the audit would be incomplete")
        batch = list(page.get("items") or [])
        items.extend(batch)
        cursor = int(page.get("next", cursor))
        if not batch:
            return items, cursor


class RequestAudit:
    """Permissions seen across many tests, with which test first needed each one."""

    def __init__(self) -> None:
        self.first_seen: dict[Permission, str] = {}

    def add(self, permissions: Iterable[Permission], *, source: str) -> None:
        """Record uses; ``source`` names the test (or scenario) they came from."""
        for permission in permissions:
            self.first_seen.setdefault(permission, source)

    def permissions(self) -> set[Permission]:
        """Everything recorded so far."""
        return set(self.first_seen)

    def __bool__(self) -> bool:
        return bool(self.first_seen)


SESSION = RequestAudit()


def _audit_path() -> Path | None:
    value = os.environ.get(AUDIT_FILE_ENV, "")
    return Path(value) if value else None


async def record_controller_requests(
    sim: _RequestSource, *, source: str, since: int = 0, audit: RequestAudit | None = None
) -> set[Permission]:
    """Add what the controller used on ``sim`` (after cursor ``since``) to ``audit`` (default ``SESSION``).

    Call it at fixture teardown, after the controller process has stopped, so its last
    requests (the lease release) are in the log. Returns the permissions of this run.
    """
    records, _ = await read_all_requests(sim, since=since)
    used = permissions_used(records)
    (audit if audit is not None else SESSION).add(used, source=source)
    path = _audit_path()
    if path is not None and used:
        _append(path, used, source=source)
    return used


def _append(path: Path, used: Iterable[Permission], *, source: str) -> None:
    lines = [json.dumps({"source": source, "group": p.group, "resource": p.resource, "verb": p.verb,
                         "name": p.name}) for p in sorted(used)]
    with path.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")


def load_audit_file(path: Path, *, into: RequestAudit | None = None) -> RequestAudit:
    """Read a ``DSCTL_REQUEST_AUDIT`` file back into an audit."""
    audit = into if into is not None else RequestAudit()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        audit.add([Permission(row["group"], row["resource"], row["verb"], row.get("name", ""))],
                  source=str(row.get("source", path.name)))
    return audit
