"""The view's informers: the caches the grid is computed from, filled by list and watch only.

Four informers, built from the project's own ``dsctl.informer`` on the project's own client:
DaemonSets (apps/v1 or the ``dsctl.io/v1`` custom resource), pods (projected, indexed by
controller and target node), nodes (projected) and ControllerRevisions (to find the current
revision exactly as the controller does). Their handlers only mark cells dirty in the
``GridModel``; nothing here writes to the API (the client's write fence refuses any write, see
``read_only_fence``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from dsctl.app.collector import freeze_caches
from dsctl.daemonset.readinessgate import DEFAULT_TAINT, ReadinessTaint
from dsctl.informer import BY_OWNER_UID, Informer, by_owner_uid, make_pod_projection, project_node
from dsctl.kube.client import KubeClient
from dsctl.kube.errors import Fenced
from dsctl.kube.resources import CONTROLLER_REVISIONS, EVENTS, NODES, PODS, Resource
from dsctl.view.model import BY_OWNER_NODE, GridModel, by_owner_node
from dsctl.view.planfile import PlanOverlay

__all__ = ["ClusterSource", "read_only_fence", "read_pod_events"]

log = structlog.get_logger(__name__)


def read_only_fence(verb: str, resource: str) -> None:
    """A write fence that refuses every write: the view only lists and watches."""
    raise Fenced(f"{verb} {resource} refused: dsctl view is read-only")


class ClusterSource:
    """Owns the four informers and the model they feed; ``start`` then ``stop``.

    ``namespace`` limits DaemonSets, pods and revisions to one namespace (None: all). The
    model is available at once (``model``) and says ``synced`` once every informer has listed.
    ``freeze_after_sync`` moves the synced caches out of the cyclic collector's reach (for a
    process of its own; ``dsctl sim`` leaves that to the controller beside it).
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        plan: PlanOverlay | None = None,
        page_size: int = 500,
        freeze_after_sync: bool = False,
        readiness_taint: ReadinessTaint | None = DEFAULT_TAINT,
    ) -> None:
        client.write_fence = read_only_fence
        registry = CollectorRegistry()  # the view's informers are not the controller's metrics
        self.daemonsets = Informer(client, resource, namespace=namespace, registry=registry, page_size=page_size)
        self.pods = Informer(client, PODS, namespace=namespace, registry=registry, page_size=page_size,
                             indexers={BY_OWNER_NODE: by_owner_node, BY_OWNER_UID: by_owner_uid},
                             transform=make_pod_projection())
        self.nodes = Informer(client, NODES, registry=registry, transform=project_node, page_size=page_size)
        self.revisions = Informer(client, CONTROLLER_REVISIONS, namespace=namespace, registry=registry,
                                  page_size=page_size, indexers={BY_OWNER_UID: by_owner_uid})
        self.informers: Sequence[Informer] = (self.daemonsets, self.pods, self.nodes, self.revisions)
        self.model = GridModel(daemonsets=self.daemonsets.store, nodes=self.nodes.store, pods=self.pods.store,
                               revisions=self.revisions.store, resource=resource.api_version, plan=plan,
                               readiness_taint=readiness_taint)
        m = self.model
        self.daemonsets.add_handler(m.on_ds, m.on_ds_update, m.on_ds)
        self.pods.add_handler(m.on_pod, m.on_pod_update, m.on_pod)
        self.nodes.add_handler(m.on_node, m.on_node_update, m.on_node)
        self.revisions.add_handler(m.on_revision, m.on_revision_update, m.on_revision)
        self._synced: asyncio.Task[None] | None = None
        self._freeze = freeze_after_sync

    def start(self) -> None:
        """Start every informer, and a task that marks the model synced once they all listed."""
        for informer in self.informers:
            informer.run()
        self._synced = asyncio.create_task(self._mark_synced(), name="view-informers-synced")

    async def _mark_synced(self) -> None:
        await asyncio.gather(*(informer.wait_for_sync() for informer in self.informers))
        self.model.mark_synced()
        if self._freeze:
            # The caches are long-lived and acyclic: keep the cyclic collector off them, as the
            # controller does (dsctl.app.collector).
            freeze_caches()
        log.info("view.synced", nodes=len(self.nodes.store), pods=len(self.pods.store),
                 daemonsets=len(self.daemonsets.store))

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Whether every informer listed within ``timeout`` seconds."""
        results = await asyncio.gather(*(informer.wait_for_sync(timeout) for informer in self.informers))
        return all(results)

    async def stop(self) -> None:
        """Stop the informers (the caches keep their last state)."""
        if self._synced is not None:
            self._synced.cancel()
            await asyncio.gather(self._synced, return_exceptions=True)
        for informer in self.informers:
            await informer.stop()


def _event_row(event: dict[str, Any]) -> dict[str, Any]:
    raw_series = event.get("series")
    series: dict[str, Any] = raw_series if isinstance(raw_series, dict) else {}
    time_ = (event.get("lastTimestamp") or series.get("lastObservedTime") or event.get("eventTime")
             or event.get("firstTimestamp") or (event.get("metadata") or {}).get("creationTimestamp") or "")
    count = event.get("count") or series.get("count") or 1
    return {"time": str(time_), "type": str(event.get("type") or ""), "reason": str(event.get("reason") or ""),
            "message": str(event.get("message") or ""), "count": count if isinstance(count, int) else 1}


async def read_pod_events(client: KubeClient, namespace: str, name: str, pod_uid: str) -> list[dict[str, Any]]:
    """The events of one pod, oldest first: one list with a field selector on ``involvedObject``,
    as ``kubectl describe pod`` reads them. Events of an earlier pod of the same name (another
    UID) are left out."""
    selector = f"involvedObject.kind=Pod,involvedObject.namespace={namespace},involvedObject.name={name}"
    found = await client.list(EVENTS, namespace=namespace, field_selector=selector, read_timeout=10)
    items = [e for e in found.get("items") or [] if isinstance(e, dict)]
    mine = [e for e in items if not pod_uid or (e.get("involvedObject") or {}).get("uid") in (None, "", pod_uid)]
    rows = [_event_row(e) for e in mine]
    rows.sort(key=lambda r: r["time"])
    return rows
