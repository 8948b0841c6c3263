"""Which nodes changed for which DaemonSet since its last plan: the input of incremental planning.

The handlers note every change a plan could depend on (``dsctl.daemonset.nodetable`` says which):

- a node joined, left, or changed its labels or taints: that node, for every DaemonSet;
- a pod of a DaemonSet (or an orphan it may adopt) appeared, changed in a way a planner
  sees, or went: the pod's target node, for that DaemonSet.

A sync takes its set (``take``) in the same synchronous step that reads the caches, so a
change that arrives while the sync awaits its writes is in the next sync's set. A DaemonSet
the log has not seen yet, or one marked ``full`` (its resync, a relist), is planned from
scratch. Memory is one set of node names per DaemonSet, emptied by every sync.
"""

from __future__ import annotations

__all__ = ["ChangeLog"]


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

    def forget(self, key: str) -> None:
        """A deleted DaemonSet: stop collecting for it."""
        self._changed.pop(key, None)
        self._full.discard(key)

    def __len__(self) -> int:
        return len(self._changed)
