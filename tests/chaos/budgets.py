"""The budget invariant: a DaemonSet's PodDisruptionBudget never allows more than ``maxDisruptions``.

Every chaos DaemonSet with ``max_disruptions`` set has a budget the controller keeps
(``dsctl.daemonset.budget``). The disruption controller recomputes its status on every pod
change; each status that reflects the budget's current spec (``observedGeneration`` equal to
``generation``) must allow at most ``maxDisruptions`` evictions, whatever the faults: the
controller counts surge pods, pods of nodes being drained of the DaemonSet and pods on nodes
that are gone as extra before they can turn healthy, and writes the budget before the pods.
Once settled the budget is exactly ``desired - maxDisruptions``.

The watch resumes from its last resourceVersion when the faults drop it, and relists on a 410;
its errors are counted, never violations (the faults hit its client too).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, POD_DISRUPTION_BUDGETS

__all__ = ["BudgetWatch"]


@dataclass
class BudgetWatch:
    """``async with BudgetWatch(client, {"ds-a": 1}) as watch:``; ``violations`` after exit."""

    client: KubeClient
    limits: dict[str, int]
    namespace: str = "default"
    violations: list[str] = field(default_factory=list)
    errors: int = 0
    statuses: int = 0
    """Budget statuses checked (each reflecting its current spec)."""

    def __post_init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._seen: set[tuple[str, int]] = set()

    async def __aenter__(self) -> BudgetWatch:
        if self.limits:
            self._task = asyncio.create_task(self._watch(), name="chaos-budget-watch")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _check(self, pdb: dict[str, Any]) -> None:
        meta, status = pdb.get("metadata") or {}, pdb.get("status") or {}
        name = str(meta.get("name") or "")
        limit = self.limits.get(name)
        if limit is None or status.get("observedGeneration") != meta.get("generation"):
            return
        self.statuses += 1
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed > limit and (name, allowed) not in self._seen:
            self._seen.add((name, allowed))
            self.violations.append(
                f"budget ds/{name}: disruptionsAllowed {allowed} > maxDisruptions {limit} (minAvailable "
                f"{(pdb.get('spec') or {}).get('minAvailable')}, currentHealthy {status.get('currentHealthy')})")

    async def _watch(self) -> None:
        rv = ""
        while True:
            try:
                if not rv:
                    listed = await self.client.list(POD_DISRUPTION_BUDGETS, namespace=self.namespace)
                    for pdb in listed["items"]:
                        self._check(pdb)
                    rv = str(listed["metadata"]["resourceVersion"])
                async with contextlib.aclosing(self.client.watch(POD_DISRUPTION_BUDGETS, namespace=self.namespace,
                                                                 resource_version=rv)) as events:
                    async for event in events:
                        obj = event.get("object") or {}
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self._check(obj)
            except errors.Gone:
                rv = ""
            except errors.ApiError:
                self.errors += 1
                await asyncio.sleep(0.1)  # backoff before re-watching under an injected storm

    async def settled_problems(self) -> list[str]:
        """Once settled: each budget asks for exactly ``desired - maxDisruptions``."""
        problems: list[str] = []
        for name, limit in self.limits.items():
            try:
                ds = await self.client.get(DAEMONSETS, name, namespace=self.namespace)
                pdb = await self.client.get(POD_DISRUPTION_BUDGETS, name, namespace=self.namespace)
            except errors.NotFound:
                problems.append(f"budget ds/{name}: missing")
                continue
            desired = int((ds.get("status") or {}).get("desiredNumberScheduled") or 0)
            wanted = max(0, desired - limit)
            if (pdb.get("spec") or {}).get("minAvailable") != wanted:
                problems.append(f"budget ds/{name}: minAvailable {(pdb.get('spec') or {}).get('minAvailable')}, "
                                f"want {wanted} ({desired} desired)")
        return problems
