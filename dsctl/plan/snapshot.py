"""Reading what a plan is made from: the nodes, the DaemonSet's pods and revisions, the live
DaemonSet, and (for ``dsctl.io/v1``) the CRD's schema. Lists and gets only.

Every list is paginated (``limit``/``continue``, as informers list) and the reads run
concurrently; nothing is watched, because a plan is one snapshot. The client's write fence
refuses any write, so a bug here can never change the cluster.

Pods and revisions are listed with the DaemonSet's label selector (and the live object's,
when it differs): those are all the controller can own or adopt. A pod or revision it owns
that no longer matches is released by the controller, not planned, so leaving it out
changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, NODES, PODS, Resource
from dsctl.plan.manifest import Manifest
from dsctl_api.labels import SelectorError, selector_from_label_selector
from dsctl_api.objects import as_map, uid

__all__ = ["CRDS", "CRD_NAME", "ClusterSnapshot", "read_cluster", "read_only"]

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                namespaced=False)
CRD_NAME = "daemonsets.dsctl.io"
PAGE_SIZE = 500
_RELISTS = 3


def read_only(verb: str, resource: str) -> None:
    """A write fence that refuses every write: a plan only reads."""
    raise errors.Fenced(f"{verb} {resource} refused: dsctl plan is read-only")


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """What the cluster held when the plan was made. ``live`` None: the DaemonSet is new."""

    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    revisions: list[dict[str, Any]]
    live: dict[str, Any] | None
    crd: dict[str, Any] | None = None
    requests: dict[str, int] = field(default_factory=dict)
    """Pages read per resource (for the benchmark and the docs)."""


async def _list_all(client: KubeClient, res: Resource, *, namespace: str | None = None,
                    label_selector: str | None = None, pages: dict[str, int]) -> list[dict[str, Any]]:
    """Every item, page by page; an expired continue token starts the list over."""
    for _ in range(_RELISTS):
        items: list[dict[str, Any]] = []
        token: str | None = None
        try:
            while True:
                page = await client.list(res, namespace=namespace, label_selector=label_selector,
                                         limit=PAGE_SIZE, continue_=token)
                pages[res.label] = pages.get(res.label, 0) + 1
                items.extend(i for i in page.get("items") or [] if isinstance(i, dict))
                token = as_map(page.get("metadata")).get("continue") or None
                if not token:
                    return items
        except errors.Gone:
            continue
    raise errors.Gone(410, "Expired", f"listing {res.label} kept expiring; try again")


def _selector_text(obj: Mapping[str, Any] | None) -> str | None:
    """The label selector of a DaemonSet in list syntax; None when it has none or it is unreadable."""
    if obj is None:
        return None
    try:
        selector = selector_from_label_selector(as_map(obj.get("spec")).get("selector"))
    except (SelectorError, TypeError, ValueError):
        return None
    return None if selector.empty else str(selector)


async def _get_or_none(client: KubeClient, res: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
    try:
        return await client.get(res, name, namespace=namespace)
    except errors.NotFound:
        return None


async def _by_selectors(client: KubeClient, res: Resource, namespace: str, selectors: list[str],
                        pages: dict[str, int]) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for batch in await asyncio.gather(*(_list_all(client, res, namespace=namespace, label_selector=s, pages=pages)
                                        for s in selectors)):
        for item in batch:
            found.setdefault(uid(item) or str(id(item)), item)
    return list(found.values())


async def read_cluster(client: KubeClient, manifest: Manifest) -> ClusterSnapshot:
    """One snapshot for ``manifest``; raises ``dsctl.kube.errors.KubeError``.

    The selector comes from the file; a manifest without a readable selector lists no pods
    (the plan then reports the spec as invalid, as the controller would).
    """
    pages: dict[str, int] = {}
    namespace = manifest.namespace
    live_task = asyncio.create_task(_get_or_none(client, manifest.resource, manifest.name, namespace))
    crd_task = asyncio.create_task(_get_or_none(client, CRDS, CRD_NAME, None)) if manifest.custom else None
    try:
        nodes = await _list_all(client, NODES, pages=pages)
        live = await live_task
        crd = await crd_task if crd_task is not None else None
    finally:
        # A failed node list leaves the gets behind: cancel them, and collect what they raised
        # so the one error reported is the list's, never a stray "exception never retrieved".
        pending = [task for task in (live_task, crd_task) if task is not None]
        for task in pending:
            if not task.done():
                task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    selectors = [s for s in {_selector_text(manifest.obj), _selector_text(live)} if s]
    pods, revisions = await asyncio.gather(
        _by_selectors(client, PODS, namespace, sorted(selectors), pages),
        _by_selectors(client, CONTROLLER_REVISIONS, namespace, sorted(selectors), pages),
    )
    return ClusterSnapshot(nodes=nodes, pods=pods, revisions=revisions, live=live, crd=crd, requests=pages)
