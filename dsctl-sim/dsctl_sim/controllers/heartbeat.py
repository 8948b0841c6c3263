"""Which kubelets have gone quiet, and since when: the node health signal, kept cheap.

A real kubelet proves it is alive by renewing its node's Lease in ``kube-node-lease`` every
10 s and by posting node status; kube-controller-manager's node lifecycle controller notes
the last time either moved and, past its grace period, marks the node Unknown. Writing a
Lease per node every few seconds would cost the simulator thousands of writes a second at
100,000 nodes, for a signal nobody but the node lifecycle reads. So the simulated kubelet
does not write heartbeats; a running kubelet counts as heartbeating *now*, and this registry
records only the exceptions: the nodes whose kubelet is stopped, with the moment it stopped
(its last heartbeat). Memory and work are per stopped node, never per node.

The kubelet loop writes it (``stop``/``start``); the node lifecycle loop reads it
(``silent_since``) and subscribes to changes (``on_change``) to arm one timer per stop. See
ADR 0100.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

__all__ = ["Heartbeats", "Listener"]

log = structlog.get_logger(__name__)

Listener = Callable[[str, "float | None"], None]
"""``listener(node, silent_since)``: ``silent_since`` is None when the kubelet runs again."""


class Heartbeats:
    """Stopped kubelets by node name. Listeners run synchronously inside ``stop``/``start``."""

    def __init__(self) -> None:
        self._silent: dict[str, float] = {}
        self._listeners: list[Listener] = []

    def on_change(self, listener: Listener) -> None:
        """Call ``listener`` whenever a kubelet stops or starts again."""
        self._listeners.append(listener)

    def stop(self, node: str, *, at: float) -> None:
        """The kubelet of ``node`` stops heartbeating; ``at`` is its last heartbeat."""
        if self._silent.get(node) == at:
            return
        self._silent[node] = at
        self._notify(node, at)

    def start(self, node: str) -> None:
        """The kubelet of ``node`` heartbeats again."""
        if self._silent.pop(node, None) is not None:
            self._notify(node, None)

    def forget(self, node: str) -> None:
        """The node is gone: drop what is known about it, without telling anyone."""
        self._silent.pop(node, None)

    def silent_since(self, node: str) -> float | None:
        """When the kubelet of ``node`` last heartbeat, if it has stopped; None while it runs."""
        return self._silent.get(node)

    @property
    def silent(self) -> int:
        """How many kubelets are stopped."""
        return len(self._silent)

    def _notify(self, node: str, since: float | None) -> None:
        for listener in self._listeners:
            try:
                listener(node, since)
            except Exception:
                log.exception("sim_heartbeat_listener_failed", node=node)
