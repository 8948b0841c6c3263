"""The chaos invariant checker: ``RolloutObserver`` per DaemonSet, composed with chaos knowledge.

What it adds to the rollout observer of the updates issue (which it uses unchanged):

- **incarnations**: a DaemonSet deleted and re-created under the same name, or whose strategy
  the schedule switched, gets a fresh observer (``reobserve``). The fresh observer's baseline
  exempts the nodes already down at that moment; it is opened only once the controller has
  observed the new generation, because until then the controller rightly acts on the old
  spec's budget. Violations of every incarnation are kept.
- **chaos exclusions**: nodes the schedule disturbs (flapped, deleted, joined) are excluded
  from the budget of every observer, present and future (invariant b). A percentage budget
  shrinking with the desired count is handled by the observer itself (``BUDGET_GRACE``).
- **pods per node** (invariant a), checked after every watch event through an observer guard:
  never more than 2 live pods of one DaemonSet on a node; never 2 without surge, except on a
  DaemonSet whose surge the schedule switched off (its surge pods are legitimately still
  there until it settles; the settled recount then demands exactly one).
- **deleted DaemonSets** (invariant d) through :class:`~tests.chaos.ledger.DeletionLedger`.
- **the readiness gate**, when the scenario has gating DaemonSets (``watch_gate``): a readiness
  taint is never removed while a gating pod on that node is not Ready, judged by
  :class:`~tests.support.gatewatch.GateWatch` at the removal's resourceVersion. Removals whose
  order a relist after a 410 hides are counted (``gate_gaps``), not judged.

Observer watch errors are transient by construction here (the faults hit the observer's
client too) and do not lose events, since the observer re-watches from its last
resourceVersion; they are counted, not reported as violations.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.errors import ApiError
from dsctl.kube.resources import DAEMONSETS, NODES
from dsctl_api.pods import controller_ref
from tests.chaos.ledger import DeletionLedger
from tests.support.gatewatch import GateWatch
from tests.support.invariants import RolloutObserver, Violation
from tests.support.poll import eventually

__all__ = ["ChaosChecker"]

_FOREVER = 24 * 3600.0


@dataclass
class _Watched:
    observer: RolloutObserver
    guard: asyncio.Task[None]


@dataclass
class ChaosChecker:
    """``async with ChaosChecker(client) as checker:``; ``observe(name)`` each DaemonSet."""

    client: KubeClient
    namespace: str = "default"
    excluded: set[str] = field(default_factory=set)
    surge_relaxed: set[str] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    observer_errors: int = 0
    max_pods_on_node: int = 0

    def __post_init__(self) -> None:
        self._watched: dict[str, _Watched] = {}
        self._crowded: set[tuple[str, str]] = set()
        self.ledger = DeletionLedger(self.client, namespace=self.namespace)
        self.gate: GateWatch | None = None

    async def __aenter__(self) -> ChaosChecker:
        await self.ledger.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for name in list(self._watched):
            await self.unobserve(name)
        if self.gate is not None:
            await self.gate.__aexit__(*exc_info)
        await self.ledger.__aexit__(*exc_info)

    # -- the readiness gate ---------------------------------------------------------------

    async def watch_gate(self, taint_key: str, gating: list[str], *, deadline: float = 20.0) -> None:
        """Judge every removal of ``taint_key`` against the pods of the gating DaemonSets ``gating``."""
        keys = {f"{self.namespace}/{name}" for name in gating}

        def owner(pod: Mapping[str, Any]) -> str | None:
            ref = controller_ref(pod)
            key = f"{self.namespace}/{ref.get('name')}" if ref is not None else ""
            return key if key in keys else None

        until = time.monotonic() + deadline
        while True:
            watch = GateWatch(self.client, taint_key, owner, namespace=self.namespace)
            try:
                self.gate = await watch.__aenter__()
                return
            except ApiError:
                await watch.__aexit__(None, None, None)
                if time.monotonic() > until:
                    raise
            await asyncio.sleep(0.1)  # backoff between attempts under an injected error storm

    async def finish_gate(self, *, timeout: float = 15.0) -> None:
        """Wait until the gate's watch has seen everything written so far and judged every removal."""
        gate = self.gate
        if gate is None:
            return
        now = int((await self.client.list(NODES, limit=1))["metadata"]["resourceVersion"])

        async def judged() -> bool:
            return gate.caught_up(now)
        try:
            await eventually(judged, timeout=timeout, interval=0.1, message="every readiness-taint removal judged")
        except AssertionError:
            self.violations.append(f"readiness gate: the watch did not catch up with rv {now} "
                                   f"({gate.pending} removals not judged)")

    @property
    def gate_gaps(self) -> int:
        """Relists of the gate's watch, whose gaps are not judged."""
        return self.gate.gaps if self.gate is not None else 0

    # -- observers ------------------------------------------------------------------------

    async def observe(self, name: str, *, deadline: float = 20.0) -> None:
        """Start watching DaemonSet ``name`` (it must exist); retried while the faults refuse the reads."""
        until = time.monotonic() + deadline
        while True:
            observer = RolloutObserver(self.client, name, namespace=self.namespace)
            try:
                await observer.__aenter__()
                break
            except ApiError:
                await observer.__aexit__(None, None, None)
                if time.monotonic() > until:
                    raise
            await asyncio.sleep(0.1)  # backoff between attempts under an injected error storm
        observer.exclude(*self.excluded)

        def guard(obs: RolloutObserver) -> bool:
            self._check_pods_per_node(name, obs)
            return True

        task = asyncio.create_task(observer.holds(guard, seconds=_FOREVER, message="pods per node"),
                                   name=f"chaos-guard-{name}")
        self._watched[name] = _Watched(observer, task)

    async def unobserve(self, name: str) -> None:
        """Stop watching ``name``, keeping what its observer saw."""
        watched = self._watched.pop(name, None)
        if watched is None:
            return
        watched.guard.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watched.guard
        await watched.observer.__aexit__(None, None, None)
        self._collect(name, watched.observer)

    async def observe_when_seen(self, name: str, *, generation: int, timeout: float = 20.0) -> None:
        """Observe a new incarnation once the controller has seen ``generation`` (see the module docstring).

        Call ``unobserve`` before the write that changes the budget: an observer that saw the
        change would judge pods the controller removed under the old budget by the new one.
        """
        async def observed() -> bool:
            try:
                ds = await self.client.get(DAEMONSETS, name, namespace=self.namespace)
            except ApiError:
                return False  # an injected error; ask again
            return int((ds.get("status") or {}).get("observedGeneration") or 0) >= generation

        await eventually(observed, timeout=timeout, interval=0.05,
                         message=f"ds/{name} observedGeneration >= {generation}")
        await self.observe(name)

    def observer(self, name: str) -> RolloutObserver | None:
        """The live observer of ``name``, if any."""
        watched = self._watched.get(name)
        return watched.observer if watched is not None else None

    def exclude(self, *nodes: str) -> None:
        """Nodes the schedule disturbs: not counted against any budget from now on."""
        self.excluded.update(nodes)
        for watched in self._watched.values():
            watched.observer.exclude(*nodes)

    def relax_surge(self, name: str) -> None:
        """The schedule switched surge off for ``name``: two pods on a node stay legal until it settles."""
        self.surge_relaxed.add(name)

    # -- rules ----------------------------------------------------------------------------

    def _check_pods_per_node(self, name: str, obs: RolloutObserver) -> None:
        live = Counter(p.node for p in obs.pods.values() if not p.terminating)
        limit = 2 if obs.surge > 0 or name in self.surge_relaxed else 1
        for node, count in live.items():
            self.max_pods_on_node = max(self.max_pods_on_node, count)
            key = (name, node)
            if count > limit and key not in self._crowded:
                self._crowded.add(key)
                pods = ", ".join(sorted(f"{p.name}@{p.hash}" for p in obs.pods_on(node) if not p.terminating))
                self.violations.append(f"pods-per-node ds/{name}: {node} has {count} live pods "
                                       f"(limit {limit}): {pods}")
            elif count <= limit:
                self._crowded.discard(key)

    @staticmethod
    def _counts(violation: Violation) -> bool:
        # Pods per node is judged by this checker's own rule above. A percentage budget
        # shrinking under the schedule's node churn is the observer's concern
        # (``tests.support.invariants.BUDGET_GRACE``): nodes already down when it shrinks, and
        # deletions decided just before, are judged by the old budget there.
        return violation.rule != "pods-per-node"

    def _collect(self, name: str, observer: RolloutObserver) -> None:
        self.observer_errors += len(observer.errors)
        self.violations += [f"ds/{name} {v}" for v in observer.violations if self._counts(v)]

    def problems(self) -> list[str]:
        """Every violation so far (observers still running included) and late pod creations."""
        found = list(self.violations)
        for name, watched in self._watched.items():
            found += [f"ds/{name} {v}" for v in watched.observer.violations if self._counts(v)]
        if self.gate is not None:
            found += [f"readiness gate: {v}" for v in self.gate.violations]
            found += [f"readiness gate watch: {e}" for e in self.gate.errors]
        return found + self.ledger.violations()
