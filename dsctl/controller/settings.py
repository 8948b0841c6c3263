"""The settings the controller reads, as a structural type.

``dsctl.app.config.Settings`` satisfies it; tests and benchmarks may pass any object with these
attributes. Declaring it here keeps the controller package free of the app layer.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ControllerSettings"]


class ControllerSettings(Protocol):
    """What ``DaemonSetController`` needs to know."""

    @property
    def namespace(self) -> str:
        """Namespace to watch; empty for all."""

    @property
    def workers(self) -> int:
        """Concurrent syncs."""

    @property
    def burst_replicas(self) -> int:
        """Most creates or deletes per sync."""

    @property
    def list_page_size(self) -> int:
        """Objects per page when an informer lists."""

    @property
    def direct_binding(self) -> bool:
        """Set ``spec.nodeName`` on new pods instead of the node-name affinity alone."""

    @property
    def failed_pod_backoff_max(self) -> float:
        """Ceiling of the failed-pod backoff, seconds."""

    @property
    def stuck_sync_seconds(self) -> float:
        """A sync running longer than this is reported stuck."""

    @property
    def node_join_priority(self) -> bool:
        """Sync the DaemonSets a new node wants in their pods' priority order (else FIFO)."""

    @property
    def incremental_planning(self) -> bool:
        """Re-plan only the nodes that changed since a DaemonSet's last sync (else every node)."""
