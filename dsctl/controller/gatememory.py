"""What the node readiness gate keeps between syncs: per node, when its gate began and whether it
timed out (``GateMemory``); per gating DaemonSet, its placement rules.

Both are runtime state, owned by ``dsctl.controller.state.RuntimeState``: a node's entry is
dropped with the node (``forget_node``) and when its taint goes (the gate keeps ``None``), a
DaemonSet's rules with the DaemonSet (``forget``). The rules are rebuilt when the DaemonSet's UID or
generation changes, as ``PlanMemory`` rebuilds its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.readinessgate import GateMemory
from dsctl_api.objects import generation as generation_of
from dsctl_api.objects import uid as uid_of

__all__ = ["ReadinessGateMemory"]

Obj = Mapping[str, Any]


class ReadinessGateMemory:
    """Per node, the gate's ``GateMemory``; per DaemonSet key, its ``Eligibility`` with ``extra``
    tolerations (the readiness taint's, so the taint itself never rules a node out).

    Only the gate's workers write it; one worker per node key and per sync means no lock.
    """

    def __init__(self, *, extra: tuple[Mapping[str, Any], ...] = ()) -> None:
        self._extra = extra
        self._nodes: dict[str, GateMemory] = {}
        self._timed_out = 0
        self._rules: dict[str, tuple[str, int, Eligibility]] = {}

    # -- nodes --------------------------------------------------------------------------------

    def get(self, node: str) -> GateMemory | None:
        """What is kept about ``node``, if anything."""
        return self._nodes.get(node)

    def keep(self, node: str, memory: GateMemory | None) -> None:
        """Keep ``memory`` about ``node``; None forgets it."""
        old = self._nodes.pop(node, None) if memory is None else self._nodes.get(node)
        if memory is not None:
            self._nodes[node] = memory
        self._timed_out += int(memory is not None and memory.timed_out) - int(old is not None and old.timed_out)

    def timed_out(self) -> int:
        """Nodes whose gate passed ``--readiness-timeout`` and still hold the taint."""
        return self._timed_out

    def __len__(self) -> int:
        return len(self._nodes)

    def forget_node(self, node: str) -> None:
        """Drop what is kept about ``node`` (it was deleted)."""
        self.keep(node, None)

    def holds_node(self, node: str) -> bool:
        """Whether anything is kept about ``node``."""
        return node in self._nodes

    # -- DaemonSets ---------------------------------------------------------------------------

    def rules(self, key: str, ds: Obj) -> Eligibility:
        """The placement rules of DaemonSet ``ds`` (cache key ``key``), built once per UID and generation."""
        uid, generation = uid_of(ds), generation_of(ds)
        kept = self._rules.get(key)
        if kept is None or kept[0] != uid or kept[1] != generation:
            kept = (uid, generation, Eligibility.of(ds, extra=self._extra))
            self._rules[key] = kept
        return kept[2]

    def forget(self, key: str, uid: str) -> None:
        """Drop the rules of DaemonSet ``key``."""
        self._rules.pop(key, None)

    def holds(self, key: str, uid: str) -> bool:
        """Whether rules are kept for ``key``."""
        return key in self._rules
