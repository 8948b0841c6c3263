"""What incremental planning remembers between syncs: the changes since each DaemonSet's last
plan (``ChangeLog``), that plan's node table and the eligibility verdicts it reused (``PlanMemory``).

The handlers note every change a plan could depend on (``dsctl.daemonset.nodetable`` says which):

- a node joined, left, or changed its labels or taints: that node, for every DaemonSet;
- a pod of a DaemonSet (or an orphan it may adopt) appeared, changed in a way a planner
  sees, or went: the pod's target node, for that DaemonSet.

A sync takes its set (``ChangeLog.take``) in the same synchronous step that reads the caches,
so a change that arrives while the sync awaits its writes is in the next sync's set. A
DaemonSet the log has not seen yet, or one marked ``full`` (its resync, a relist), is planned
from scratch. The sync keeps the table its plan produced (``PlanMemory.keep``), and the next
sync re-plans only the changed nodes on top of it.

Both are per-DaemonSet runtime state, owned by ``dsctl.controller.state.RuntimeState``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dsctl.daemonset.eligibility import Eligibility, Fit
from dsctl.daemonset.nodetable import NodeTable
from dsctl_api.objects import generation as generation_of
from dsctl_api.objects import name as name_of
from dsctl_api.objects import resource_version
from dsctl_api.objects import uid as uid_of

__all__ = ["ChangeLog", "PlanMemory"]

Obj = Mapping[str, Any]


class ChangeLog:
    """Per DaemonSet key: changed node names, or "everything"."""

    def __init__(self) -> None:
        self._changed: dict[str, set[str]] = {}
        self._full: set[str] = set()

    def node_changed(self, node: str) -> None:
        """A node's eligibility inputs changed (or it joined or left): every DaemonSet cares."""
        if not node:
            return
        for nodes in self._changed.values():
            nodes.add(node)

    def pod_changed(self, key: str, node: str | None) -> None:
        """A pod of (or adoptable by) DaemonSet ``key`` targeting ``node`` changed.

        A pod without a target node is never planned per node; the next full plan claims it.
        """
        nodes = self._changed.get(key)
        if nodes is not None and node:
            nodes.add(node)

    def everything(self, key: str) -> None:
        """Plan ``key`` from scratch next time (its resync, or a change the log cannot name)."""
        self._full.add(key)

    def take(self, key: str) -> frozenset[str] | None:
        """The nodes changed for ``key`` since the last ``take``; None means plan every node.

        From now on changes for ``key`` are collected for its next sync.
        """
        nodes = self._changed.get(key)
        self._changed[key] = set()
        if nodes is None or key in self._full:
            self._full.discard(key)
            return None
        return frozenset(nodes)

    def forget(self, key: str, uid: str) -> None:
        """Stop collecting for ``key``: its next plan is made from scratch."""
        self._changed.pop(key, None)
        self._full.discard(key)

    def holds(self, key: str, uid: str) -> bool:
        """Whether anything is kept for ``key``."""
        return key in self._changed or key in self._full

    def __len__(self) -> int:
        return len(self._changed)


class _Fits:
    """Eligibility verdicts of one DaemonSet object and generation, reused while a node's version is unchanged."""

    __slots__ = ("generation", "rules", "uid", "verdicts")

    def __init__(self, uid: str, generation: int, rules: Eligibility) -> None:
        self.uid = uid
        self.generation = generation
        self.rules = rules
        self.verdicts: dict[str, tuple[str, Fit]] = {}

    def fit(self, node: Obj) -> Fit:
        name, rv = name_of(node), resource_version(node)
        hit = self.verdicts.get(name)
        if hit is not None and hit[0] == rv and rv:
            return hit[1]
        verdict = self.rules.check(node)
        self.verdicts[name] = (rv, verdict)
        return verdict


class PlanMemory:
    """Per DaemonSet key: the ``NodeTable`` of its last plan, and its eligibility verdicts by node.

    ``extra`` are the tolerations every pod gets beyond upstream's (the readiness taint's): the
    verdicts are for the pod that is really created.

    With each table goes the time of the last plan made from scratch, which tells when the
    periodic recount is due (``dsctl.controller.syncer``).
    """

    def __init__(self, *, extra: tuple[Mapping[str, Any], ...] = ()) -> None:
        self._extra = extra
        self._tables: dict[str, tuple[NodeTable, float]] = {}
        self._fits: dict[str, _Fits] = {}

    def table(self, key: str) -> tuple[NodeTable, float] | None:
        """The last table of ``key`` and when it was last planned from scratch, if any."""
        return self._tables.get(key)

    def keep(self, key: str, table: NodeTable | None, *, full: bool, now: float) -> None:
        """Remember the table of the plan just made; ``full``: it planned every node, at ``now``."""
        if table is None:
            self._tables.pop(key, None)
        elif full:
            self._tables[key] = (table, now)
        else:
            kept = self._tables.get(key)
            self._tables[key] = (table, kept[1] if kept is not None else now)

    def fit(self, key: str, ds: Obj) -> Callable[[Obj], Fit]:
        """``ds``'s eligibility verdict for a node, cached by node version for this object and generation."""
        uid, generation = uid_of(ds), generation_of(ds)
        fits = self._fits.get(key)
        if fits is None or fits.uid != uid or fits.generation != generation:
            fits = _Fits(uid, generation, Eligibility.of(ds, extra=self._extra))
            self._fits[key] = fits
        return fits.fit

    def forget(self, key: str, uid: str) -> None:
        """Drop the table and the verdicts of ``key``."""
        self._tables.pop(key, None)
        self._fits.pop(key, None)

    def holds(self, key: str, uid: str) -> bool:
        """Whether a table or verdicts are kept for ``key``."""
        return key in self._tables or key in self._fits

    def forget_node(self, node: str) -> None:
        """Drop every verdict about ``node`` (it was deleted)."""
        for fits in self._fits.values():
            fits.verdicts.pop(node, None)

    def holds_node(self, node: str) -> bool:
        """Whether some verdict about ``node`` is kept."""
        return any(node in fits.verdicts for fits in self._fits.values())
