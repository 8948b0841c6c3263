"""One run that makes the controller do everything it can do, for the least-privilege audit.

``run_scenario`` drives a simulated cluster through every code path that talks to the API:
leader election (acquire, renew, release), informers (list + watch of every kind), a
revision-name collision (live gets of the revision and the DaemonSet, a collisionCount bump),
a surge rollout, a rollback (revision renumbered) and history cleanup, orphaning and
re-adoption of pods and revisions, release of a relabelled pod, an OnDelete update, a failing
pod (delete plus ``FailedDaemonPod``), the node readiness gate removing its taint (a node
patch), a repeated ``FailedCreate`` (the event recorder patches the count), and then CRD mode.
It returns the permissions the controller used in each mode.

It asserts only what it must to know a step happened; reconciliation itself is pinned by the
integration tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    EVENTS,
    NAMESPACES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    Resource,
    crd_daemonsets,
)
from dsctl.kube.resources import NODES as NODES_RESOURCE
from tests.rbac.grants import MANIFESTS
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, ds_status, is_ready
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.requestaudit import Permission, permissions_used, read_all_requests
from tests.support.simproc import SimProcess

__all__ = ["CRD_FILE", "LEADER_ARGS", "ScenarioUsage", "run_scenario"]

CRD_FILE = MANIFESTS / "crd" / "daemonsets.dsctl.io.yaml"
NODES = 3
LEADER_ARGS = [
    "--leader-elect", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", "3",
    "--leader-elect-renew-deadline", "2", "--leader-elect-retry-period", "0.5",
]
IMAGE = "registry.example/agent:{}"


@dataclass(frozen=True)
class ScenarioUsage:
    """Permissions the controller used, per mode."""

    apps: frozenset[Permission]
    crd: frozenset[Permission]


async def _converged(kube: KubeClient, name: str, *, resource: Resource = DAEMONSETS, nodes: int = NODES,
                     namespace: str = "default") -> dict[str, Any] | None:
    """The live DaemonSet once its status says every node runs a ready, updated pod of this generation."""
    ds = await kube.get(resource, name, namespace=namespace)
    status = ds.get("status") or {}
    done = (status.get("observedGeneration") == ds["metadata"].get("generation")
            and status.get("desiredNumberScheduled") == nodes
            and status.get("updatedNumberScheduled") == nodes
            and status.get("numberAvailable") == nodes
            and status.get("numberReady") == nodes)
    if not done:
        return None
    pods = await daemon_pods(kube, name, namespace=namespace, include_terminating=True)
    return ds if len(pods) == nodes and all(is_ready(p) for p in pods) else None


def _until(probe: Callable[[], Awaitable[Any]], message: str, *, timeout: float = 30.0) -> Awaitable[Any]:
    return eventually(probe, timeout=timeout, interval=0.1, message=message)


async def _set_image(kube: KubeClient, name: str, image: str, *, resource: Resource = DAEMONSETS) -> None:
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": image}]
    await kube.patch(resource, name, patch, namespace="default", patch_type="json")


async def _revision_name_for(kube: KubeClient, template_image: str) -> str:
    """The revision name DaemonSet ``agent`` gets for this template, learnt in a scratch namespace."""
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}})
    ds = daemonset("agent", namespace="probe", image=template_image)
    created = await kube.create(DAEMONSETS, ds, namespace="probe")

    async def revision() -> str | None:
        for rev in (await kube.list(CONTROLLER_REVISIONS, namespace="probe"))["items"]:
            refs = rev["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == created["metadata"]["uid"] for r in refs):
                return str(rev["metadata"]["name"])
        return None

    name: str = await _until(revision, "revision of the probe DaemonSet")
    await kube.delete(DAEMONSETS, "agent", namespace="probe")
    return name


async def _apps_mode_steps(sim: SimProcess, kube: KubeClient) -> None:
    # Independent DaemonSets progress side by side; the injected create failure comes last, alone.
    async with asyncio.TaskGroup() as stories:
        stories.create_task(_agent_story(sim, kube))
        stories.create_task(_on_delete_story(kube))
        stories.create_task(_failing_pod_story(kube))
        stories.create_task(_in_place_story(kube))
        stories.create_task(_budget_story(kube))
        stories.create_task(_readiness_gate_story(kube))
    await _failed_create_story(sim, kube)


async def _agent_story(sim: SimProcess, kube: KubeClient) -> None:
    # A revision-name collision: a foreign revision already holds the name of agent's first revision.
    taken = await _revision_name_for(kube, IMAGE.format("a"))
    await kube.create(CONTROLLER_REVISIONS, {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": taken, "namespace": "default", "labels": {"owner": "someone-else"}},
        "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"owner": "someone-else"}}}}},
        "revision": 1,
    }, namespace="default")
    agent = daemonset("agent", image=IMAGE.format("a"), strategy=rolling(max_unavailable=0, max_surge=1),
                      revision_history_limit=1)
    await kube.create(DAEMONSETS, agent, namespace="default")
    await _until(lambda: _converged(kube, "agent"), "agent converged")
    assert (await ds_status(kube, "agent")).get("collisionCount") == 1, "the name collision was not resolved"

    # Surge rollout, rollback (renumbers the old revision), another rollout (history cleanup).
    for image in ("b", "a", "c"):
        await _set_image(kube, "agent", IMAGE.format(image))
        await _until(lambda: _converged(kube, "agent"), f"agent rolled out to image {image}")

    # Orphan everything, then a new DaemonSet adopts the pods and revisions.
    await sim.kubectl("delete", "daemonset", "agent", "--cascade=orphan", "--wait=true")

    async def orphaned() -> bool:
        pods = (await kube.list(PODS, namespace="default", label_selector="app=agent"))["items"]
        return bool(pods) and all(not p["metadata"].get("ownerReferences") for p in pods)

    await _until(orphaned, "agent's pods orphaned")
    again = daemonset("agent", image=IMAGE.format("c"), strategy=rolling(max_unavailable=0, max_surge=1),
                      revision_history_limit=1)
    new_uid = (await kube.create(DAEMONSETS, again, namespace="default"))["metadata"]["uid"]

    async def adopted() -> bool:
        pods = (await kube.list(PODS, namespace="default", label_selector="app=agent"))["items"]
        revs = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
        owned = [o for o in [*pods, *revs]
                 if any(r.get("uid") == new_uid for r in o["metadata"].get("ownerReferences") or [])]
        return len(owned) == len(pods) + len(revs) and len(pods) == NODES

    await _until(adopted, "pods and revisions adopted")

    # Release: a pod relabelled out of the selector is let go and replaced.
    victim = (await daemon_pods(kube, "agent"))[0]["metadata"]["name"]
    await sim.kubectl("label", "pod", victim, "app=released", "--overwrite")

    async def released() -> bool:
        pod = await kube.get(PODS, victim, namespace="default")
        return not pod["metadata"].get("ownerReferences") and await _converged(kube, "agent") is not None

    await _until(released, "relabelled pod released and replaced")


async def _on_delete_story(kube: KubeClient) -> None:
    # OnDelete: a new template reaches a node only when its pod is deleted.
    await kube.create(DAEMONSETS, daemonset("ondel", image=IMAGE.format("a"), strategy={"type": "OnDelete"}),
                      namespace="default")
    await _until(lambda: _converged(kube, "ondel"), "ondel converged")
    await _set_image(kube, "ondel", IMAGE.format("b"))
    old = (await daemon_pods(kube, "ondel"))[0]
    await kube.delete(PODS, old["metadata"]["name"], namespace="default")

    async def replaced_with_new_template() -> bool:
        pods = await daemon_pods(kube, "ondel")
        on_node = [p for p in pods if p["spec"]["affinity"] == old["spec"]["affinity"]]
        return any(p["spec"]["containers"][0]["image"] == IMAGE.format("b") for p in on_node)

    await _until(replaced_with_new_template, "ondel pod replaced with the new template")


async def _in_place_story(kube: KubeClient) -> None:
    # rollingUpdateType InPlaceIfPossible: an image change is a live get and a patch of the pod.
    body = daemonset("inplace", image=IMAGE.format("a"), node_selector={"kubernetes.io/hostname": "node-0"})
    body["metadata"]["annotations"] = {"dsctl.io/rolling-update-type": "InPlaceIfPossible"}
    await kube.create(DAEMONSETS, body, namespace="default")
    await _until(lambda: _converged(kube, "inplace", nodes=1), "inplace converged")
    await _set_image(kube, "inplace", IMAGE.format("b"))

    async def patched() -> bool:
        pods = await daemon_pods(kube, "inplace")
        return bool(pods) and pods[0]["spec"]["containers"][0]["image"] == IMAGE.format("b")

    await _until(patched, "inplace pod patched")


async def _budget_story(kube: KubeClient) -> None:
    # maxDisruptions: the DaemonSet's PodDisruptionBudget is created, patched, then deleted.
    body = daemonset("budgeted", image=IMAGE.format("a"))
    body["metadata"]["annotations"] = {"dsctl.io/max-disruptions": "1"}
    await kube.create(DAEMONSETS, body, namespace="default")

    async def min_available(wanted: int | None) -> bool:
        try:
            pdb = await kube.get(POD_DISRUPTION_BUDGETS, "budgeted", namespace="default")
        except errors.NotFound:
            return wanted is None
        return bool(pdb["spec"].get("minAvailable") == wanted)

    await _until(lambda: min_available(NODES - 1), "budget created")
    await kube.patch(DAEMONSETS, "budgeted", {"metadata": {"annotations": {"dsctl.io/max-disruptions": "0"}}},
                     namespace="default")
    await _until(lambda: min_available(NODES), "budget patched")
    await kube.patch(DAEMONSETS, "budgeted", {"metadata": {"annotations": {"dsctl.io/max-disruptions": None}}},
                     namespace="default")
    await _until(lambda: min_available(None), "budget deleted")


async def _readiness_gate_story(kube: KubeClient) -> None:
    # The node readiness gate: a node carrying the taint, no gating DaemonSet wanting it: a node patch.
    taint = {"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}
    await kube.patch(NODES_RESOURCE, "node-2", {"spec": {"taints": [taint]}})

    async def untainted() -> bool:
        return not ((await kube.get(NODES_RESOURCE, "node-2")).get("spec") or {}).get("taints")

    await _until(untainted, "the readiness taint removed from node-2")


async def _failing_pod_story(kube: KubeClient) -> None:
    # A pod that fails is deleted and reported.
    crashy = daemonset("crashy", node_selector={"kubernetes.io/hostname": "node-0"},
                       annotations={"sim.dsctl.io/fail-after-seconds": "0.2"})
    await kube.create(DAEMONSETS, crashy, namespace="default")
    await _until(lambda: _event_with(kube, "FailedDaemonPod"), "FailedDaemonPod event")
    await kube.delete(DAEMONSETS, "crashy", namespace="default")


async def _failed_create_story(sim: SimProcess, kube: KubeClient) -> None:
    # The same FailedCreate twice: the recorder bumps the count with a patch.
    await sim.set_faults(errors=[{"verb": "create", "resource": "pods", "code": 500, "rate": 1.0}])
    await kube.create(DAEMONSETS, daemonset("blocked", node_selector={"kubernetes.io/hostname": "node-1"}),
                      namespace="default")
    await _until(lambda: _event_with(kube, "FailedCreate", min_count=2), "FailedCreate counted twice")
    await sim.set_faults()
    await _until(lambda: _converged(kube, "blocked", nodes=1), "blocked converged once creates succeed")


async def _event_with(kube: KubeClient, reason: str, *, min_count: int = 1) -> bool:
    events = (await kube.list(EVENTS, namespace="default"))["items"]
    return any(e.get("reason") == reason and int(e.get("count") or 1) >= min_count for e in events)


async def _crd_mode_steps(sim: SimProcess, kube: KubeClient) -> None:
    resource = crd_daemonsets()
    body = daemonset("custom", image=IMAGE.format("a"), api_version="dsctl.io/v1",
                     strategy={"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": 1, "rollingUpdateType": "InPlaceIfPossible"}})
    await kube.create(resource, body, namespace="default")
    await _until(lambda: _converged(kube, "custom", resource=resource), "custom DaemonSet converged")
    await _set_image(kube, "custom", IMAGE.format("b"), resource=resource)
    await _until(lambda: _converged(kube, "custom", resource=resource), "custom DaemonSet rolled out")


async def _served(sim: SimProcess) -> bool:
    result = await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)
    return result.returncode == 0


async def run_scenario() -> ScenarioUsage:
    """Run every step against a fresh simulated cluster; the permissions used per mode."""
    async with SimProcess(nodes=NODES, args=["--pod-startup-seconds", "0.1"]) as sim:
        kube = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        try:
            async with ControllerProcess(sim.kubeconfig, args=LEADER_ARGS) as ctl:
                await _until(lambda: _logged(ctl, "leader_acquired"), "leadership")
                await _apps_mode_steps(sim, kube)
            assert not ctl.errors(), f"controller logged errors: {ctl.errors()[:3]}"
            records, cursor = await read_all_requests(sim)
            apps = permissions_used(records)

            await sim.kubectl("apply", "-f", str(CRD_FILE))
            await _until(lambda: _served(sim), "CRD served")
            async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1", *LEADER_ARGS]) as ctl:
                await _crd_mode_steps(sim, kube)
            assert not ctl.errors(), f"controller logged errors: {ctl.errors()[:3]}"
            records, _ = await read_all_requests(sim, since=cursor)
            crd = permissions_used(records)
        finally:
            await kube.close()
    return ScenarioUsage(apps=frozenset(apps), crd=frozenset(crd))


async def _logged(ctl: ControllerProcess, event: str) -> bool:
    return any(entry.get("event") == event for entry in ctl.logs)
