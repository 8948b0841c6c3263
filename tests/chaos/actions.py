"""What the chaos schedule does to the cluster: objects it creates and the writes it makes.

The fault rules of a scenario hit every client of the simulator, the test's own included, so
every write here goes through :func:`retrying`, which rides out injected 5xx, 429 and 409
answers until a deadline. Reads and writes use plain JSON dicts, like the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, Resource
from dsctl_sim.departing import (
    KARPENTER_TERMINATION_FINALIZER,
    karpenter_disrupted_taint,
    to_be_deleted_taint,
)
from tests.chaos.scenario import IN_PLACE, DaemonSetSpec
from tests.support.builders import daemonset, node

__all__ = [
    "CHAOS_TAINT",
    "INFRA_TAINT",
    "READINESS_TAINT",
    "add_departing_taint",
    "delete_with_finalizer",
    "departing_taint",
    "ds_body",
    "image_of",
    "join_node",
    "remove_finalizer",
    "remove_taint",
    "retrying",
    "set_image",
    "set_label",
    "set_node_ready",
    "set_strategy",
    "set_taint",
]

IN_PLACE_ANNOTATION = "dsctl.io/rolling-update-type"
MAX_DISRUPTIONS_ANNOTATION = "dsctl.io/max-disruptions"

T = TypeVar("T")

INFRA_TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}
"""Set on the scenario's infra nodes; only DaemonSets with ``tolerate_infra`` run there."""
CHAOS_TAINT = "chaos.dsctl.io/flap"
"""Key of the taints a taint flap adds and removes."""
READINESS_TAINT = {"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}
"""The controller's default readiness taint, as nodes of the ``readiness-gate`` theme register with it."""
_TRANSIENT = (errors.ServerError, errors.TooManyRequests, errors.ConnectionFailed)


async def retrying(call: Callable[[], Awaitable[T]], *, deadline: float = 20.0) -> T:
    """Run ``call`` until it stops failing with an injected-looking error (5xx, 429, 409 Conflict)."""
    until = time.monotonic() + deadline
    delay = 0.05
    while True:
        try:
            return await call()
        except errors.AlreadyExists:
            raise
        except (*_TRANSIENT, errors.Conflict):
            if time.monotonic() > until:
                raise
        await asyncio.sleep(delay)  # backoff between attempts of the test's own write
        delay = min(0.5, delay * 2)


def image_of(version: int) -> str:
    """The image of template version ``version``."""
    return f"registry.example/agent:{version}.0"


def ds_body(spec: DaemonSetSpec, *, version: int) -> dict[str, Any]:
    """The DaemonSet object for ``spec`` running template version ``version``."""
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}] \
        if spec.tolerate_infra else None
    strategy = {k: v for k, v in spec.strategy.items() if k != IN_PLACE}
    body = daemonset(spec.name, image=image_of(version), node_selector=spec.node_selector, tolerations=tolerations,
                     strategy=strategy, min_ready_seconds=spec.min_ready_seconds)
    if spec.strategy.get(IN_PLACE):
        body["metadata"]["annotations"] = {IN_PLACE_ANNOTATION: "InPlaceIfPossible"}
    if spec.max_disruptions is not None:
        body["metadata"].setdefault("annotations", {})[MAX_DISRUPTIONS_ANNOTATION] = str(spec.max_disruptions)
    if spec.gating:
        body["metadata"].setdefault("annotations", {})["dsctl.io/node-readiness-gate"] = "true"
    if spec.startup_seconds is not None:
        template_meta = body["spec"]["template"]["metadata"]
        template_meta.setdefault("annotations", {})["sim.dsctl.io/startup-seconds"] = str(spec.startup_seconds)
    body["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = spec.grace_seconds
    # Shell operators as real templates hold them: every revision update (a rollback renumbers
    # one) must then send data bytes the simulator compares as kube-apiserver does.
    body["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "test -d / && exec agent > /dev/null"]
    return body


async def set_image(client: KubeClient, name: str, version: int) -> dict[str, Any]:
    """Change the ``agent`` container's image (a new template revision)."""
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": image_of(version)}]}}}}
    return await retrying(lambda: client.patch(DAEMONSETS, name, patch, namespace="default",
                                               patch_type="strategic"))


async def set_strategy(client: KubeClient, name: str, strategy: dict[str, Any]) -> dict[str, Any]:
    """Replace ``spec.updateStrategy`` (a JSON merge patch with the old rollingUpdate nulled), and
    set or remove the in-place annotation with it (left on beside a surge, it would hold the rollout)."""
    body = {"metadata": {"annotations": {IN_PLACE_ANNOTATION: "InPlaceIfPossible" if strategy.get(IN_PLACE) else None}},
            "spec": {"updateStrategy": {"type": strategy["type"],
                                        "rollingUpdate": strategy.get("rollingUpdate")}}}
    return await retrying(lambda: client.patch(DAEMONSETS, name, body, namespace="default"))


async def _modify(client: KubeClient, res: Resource, name: str, change: Callable[[dict[str, Any]], None], *,
                  status: bool = False) -> dict[str, Any]:
    """Read-modify-write with the resourceVersion, so a concurrent write by a sim loop is not lost."""
    async def attempt() -> dict[str, Any]:
        obj = await client.get(res, name)
        change(obj)
        if status:
            return await client.update_status(res, obj)
        return await client.update(res, obj)
    return await retrying(attempt)


async def set_taint(client: KubeClient, name: str, effect: str | None) -> None:
    """Add the chaos taint with ``effect`` to node ``name``, or remove it with None."""
    def change(obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        taints = [t for t in spec.get("taints") or [] if t.get("key") != CHAOS_TAINT]
        if effect is not None:
            taints.append({"key": CHAOS_TAINT, "value": "on", "effect": effect})
        spec["taints"] = taints
    await _modify(client, NODES, name, change)


async def set_label(client: KubeClient, name: str, key: str, value: str | None) -> None:
    """Set (or with None remove) one label of node ``name``."""
    patch = {"metadata": {"labels": {key: value}}}
    await retrying(lambda: client.patch(NODES, name, patch))


async def set_node_ready(client: KubeClient, name: str, ready: bool) -> None:
    """Flip the node's Ready condition, as a kubelet losing and regaining its heartbeat would."""
    def change(obj: dict[str, Any]) -> None:
        conditions = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") != "Ready"]
        conditions.append({"type": "Ready", "status": "True" if ready else "False",
                           "reason": "KubeletReady" if ready else "KubeletNotReady"})
        obj.setdefault("status", {})["conditions"] = conditions
    await _modify(client, NODES, name, change, status=True)


async def join_node(client: KubeClient, name: str, *, blue: bool, taints: list[dict[str, Any]] | None = None) -> None:
    """Register a new Ready node (labelled ``pool=blue`` when ``blue``, carrying ``taints``)."""
    body = node(name, labels={"pool": "blue"} if blue else None, taints=taints)
    # AlreadyExists: an earlier attempt went through before its answer was lost.
    with contextlib.suppress(errors.AlreadyExists):
        await retrying(lambda: client.create(NODES, body))


def departing_taint(kind: str) -> dict[str, Any]:
    """The taint a departing node carries: ``autoscaler`` (cluster-autoscaler's, valued with the
    time) or ``karpenter`` (``karpenter.sh/disrupted``)."""
    return to_be_deleted_taint(time.time()) if kind == "autoscaler" else karpenter_disrupted_taint()


async def add_departing_taint(client: KubeClient, name: str, taint: dict[str, Any]) -> None:
    """Add ``taint`` with a read-modify-write update, as cluster-autoscaler does (409 → read again)."""
    def change(obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        spec["taints"] = [*(t for t in spec.get("taints") or [] if t.get("key") != taint["key"]), dict(taint)]
    await _modify(client, NODES, name, change)


async def remove_taint(client: KubeClient, name: str, key: str, *, deadline: float = 20.0) -> None:
    """Remove the taints with ``key`` by a JSON patch whose ``test`` of the list read first keeps a
    concurrent change from being lost: a failed test (422) means read again and retry."""
    until = time.monotonic() + deadline
    while True:
        obj = await retrying(lambda: client.get(NODES, name))
        taints = (obj.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != key]
        if len(kept) == len(taints):
            return
        ops = [{"op": "test", "path": "/spec/taints", "value": taints},
               {"op": "replace", "path": "/spec/taints", "value": kept}]
        try:
            await retrying(partial(client.patch, NODES, name, ops, patch_type="json"))
            return
        except errors.Invalid:
            if time.monotonic() > until:
                raise
        await asyncio.sleep(0.05)  # the node changed under the patch: read it again


async def delete_with_finalizer(client: KubeClient, name: str) -> None:
    """Karpenter's way out: the node keeps ``karpenter.sh/termination``, is tainted disrupted, and
    is deleted; it stays (with a deletionTimestamp) until ``remove_finalizer``."""
    def change(obj: dict[str, Any]) -> None:
        meta = obj.setdefault("metadata", {})
        meta["finalizers"] = [*(f for f in meta.get("finalizers") or [] if f != KARPENTER_TERMINATION_FINALIZER),
                              KARPENTER_TERMINATION_FINALIZER]
    await _modify(client, NODES, name, change)
    await add_departing_taint(client, name, karpenter_disrupted_taint())
    with contextlib.suppress(errors.NotFound):
        await retrying(lambda: client.delete(NODES, name))


async def remove_finalizer(client: KubeClient, name: str) -> None:
    """Drop Karpenter's finalizer: kube-apiserver then removes the deleted node."""
    def change(obj: dict[str, Any]) -> None:
        meta = obj.setdefault("metadata", {})
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != KARPENTER_TERMINATION_FINALIZER]
    with contextlib.suppress(errors.NotFound):
        await _modify(client, NODES, name, change)
