"""Taking over a DaemonSet from kube-controller-manager on a live cluster, in apps/v1 mode.

The cluster state is built as kube-controller-manager leaves it: ControllerRevisions named
``<ds>-<hash>`` whose ``data`` is Go's encoding of upstream's ``getPatch`` (keys sorted, ``&``
and ``>`` escaped), pods labelled with its ``controller-revision-hash`` and
``pod-template-generation``, and a status it wrote. The hashes are kube-controller-manager's,
not dsctl's: dsctl must recognise its revisions by their data, as upstream's history does, and
leave every pod and revision alone. Teams switch controllers on live fleets.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, PODS
from dsctl_api import gojson
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, is_ready
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.requestaudit import is_controller_agent
from tests.support.simproc import SimProcess

NODES = 3
# kube-controller-manager's names for the two templates (its ComputeHash, not dsctl's).
OLD_HASH, NEW_HASH = "5d4f8b7c9", "7b9c6d5f4"
# Shell in a command is where `&&` and `>` live in real templates.
OLD_COMMAND = ["sh", "-c", "test -d /host && exec agent --v=1 > /var/log/agent.log"]
NEW_COMMAND = ["sh", "-c", "test -d /host && exec agent --v=2 > /var/log/agent.log"]
KCM_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]

KCM = pytest.mark.parametrize("sim", [{"nodes": NODES, "args": ["--pod-startup-seconds", "0.2"]}], indirect=True)


def kcm_revision_data(ds: dict[str, Any]) -> bytes:
    """upstream getPatch: the DaemonSet through a map, spec.template with $patch replace, Marshal."""
    template = copy.deepcopy(ds["spec"]["template"])
    template["$patch"] = "replace"
    return gojson.encode({"spec": {"template": template}}, sort_keys=True)


def early_dsctl_revision_data(ds: dict[str, Any]) -> bytes:
    """What dsctl releases before Go-compatible encoding sent: template order, ``<>&`` unescaped."""
    return orjson.dumps({"spec": {"template": {**ds["spec"]["template"], "$patch": "replace"}}})


async def post_revision(sim: SimProcess, ds: dict[str, Any], *, hash_: str, number: int,
                        encode: Callable[[dict[str, Any]], bytes] = kcm_revision_data) -> None:
    """POST a ControllerRevision exactly as kube-controller-manager's snapshot does, data bytes included."""
    meta = ds["metadata"]
    revision_meta = {
        "name": f"{meta['name']}-{hash_}", "namespace": meta["namespace"],
        "labels": {**ds["spec"]["template"]["metadata"]["labels"], "controller-revision-hash": hash_},
        "annotations": dict(meta.get("annotations") or {}),
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"], "uid": meta["uid"],
                             "controller": True, "blockOwnerDeletion": True}],
    }
    head = gojson.encode({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": revision_meta,
                          "revision": number})
    body = head[:-1] + b',"data":' + encode(ds) + b"}"
    status, out = await sim.request("POST", f"/apis/apps/v1/namespaces/{meta['namespace']}/controllerrevisions",
                                    data=body, headers={"Content-Type": "application/json"})
    assert status == 201, out


def kcm_pod(ds: dict[str, Any], node: str, *, hash_: str) -> dict[str, Any]:
    """A daemon pod as kube-controller-manager creates it for ``node``."""
    meta, template = ds["metadata"], ds["spec"]["template"]
    spec = copy.deepcopy(template["spec"])
    spec["tolerations"] = [*spec.get("tolerations", []), *KCM_TOLERATIONS]
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    generation = meta["annotations"]["deprecated.daemonset.template.generation"]
    labels = {**template["metadata"]["labels"], "controller-revision-hash": hash_,
              "pod-template-generation": generation}
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {
        "generateName": f"{meta['name']}-", "namespace": meta["namespace"], "labels": labels,
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"], "uid": meta["uid"],
                             "controller": True, "blockOwnerDeletion": True}]}}


async def leave_kcm_state(sim: SimProcess, kube: KubeClient, *,
                          encode: Callable[[dict[str, Any]], bytes] = kcm_revision_data) -> dict[str, Any]:
    """Build what kube-controller-manager leaves after rolling agent from OLD to NEW; returns the DaemonSet."""
    ds = daemonset("agent", image="registry.example/agent:1.0", strategy=rolling(max_unavailable=1))
    ds["spec"]["template"]["spec"]["containers"][0]["command"] = OLD_COMMAND
    old = await kube.create(DAEMONSETS, ds, namespace="default")
    changed = copy.deepcopy(old)
    changed["spec"]["template"]["spec"]["containers"][0].update(image="registry.example/agent:2.0",
                                                                command=NEW_COMMAND)
    new = await kube.update(DAEMONSETS, changed, namespace="default")
    assert new["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
    await post_revision(sim, old, hash_=OLD_HASH, number=1, encode=encode)
    await post_revision(sim, new, hash_=NEW_HASH, number=2, encode=encode)
    for i in range(NODES):
        await kube.create(PODS, kcm_pod(new, f"node-{i}", hash_=NEW_HASH), namespace="default")

    async def all_ready() -> list[dict[str, Any]] | None:
        pods = await daemon_pods(kube, "agent")
        return pods if len(pods) == NODES and all(is_ready(p) for p in pods) else None

    await eventually(all_ready, timeout=20, message="kube-controller-manager's pods to be ready")
    status = {"currentNumberScheduled": NODES, "desiredNumberScheduled": NODES, "numberAvailable": NODES,
              "numberMisscheduled": 0, "numberReady": NODES, "observedGeneration": new["metadata"]["generation"],
              "updatedNumberScheduled": NODES}
    return await kube.update_status(DAEMONSETS, {**new, "status": status}, namespace="default")


async def synced(controller: ControllerProcess, hash_: str) -> None:
    """Wait for a completed sync of default/agent that settled on revision ``hash_``."""
    async def probe() -> bool:
        return any(e.get("event") == "sync" and e.get("key") == "default/agent" and e.get("hash") == hash_
                   for e in controller.logs)

    await eventually(probe, timeout=20, message=f"a sync of default/agent on revision {hash_}")


async def revisions(kube: KubeClient) -> dict[str, tuple[int, str]]:
    """Each revision's name → (revision number, resourceVersion)."""
    items = (await kube.list(CONTROLLER_REVISIONS, namespace="default"))["items"]
    return {r["metadata"]["name"]: (int(r["revision"]), r["metadata"]["resourceVersion"]) for r in items}


@KCM
async def test_takeover_rewrites_nothing(sim: SimProcess, kube: KubeClient) -> None:
    """dsctl adopts kube-controller-manager's revisions and pods as they are: no pod or revision write."""
    await leave_kcm_state(sim, kube)
    pods_before = {p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in await daemon_pods(kube, "agent")}
    revisions_before = await revisions(kube)
    cursor = (await sim.requests())["next"]
    async with ControllerProcess(str(sim.kubeconfig)) as controller:
        await synced(controller, NEW_HASH)
        # A second pass over the adopted state (a label nudges the DaemonSet) must agree too.
        await sim.kubectl("label", "ds", "agent", "team=infra")
        await eventually(lambda: _count_syncs(controller, NEW_HASH, at_least=2), timeout=20,
                         message="a second sync on kube-controller-manager's revision")
        assert not controller.errors(), controller.errors()[:3]
    writes = [f"{r['method']} {r['resource']}/{r['name']}"
              for r in (await sim.requests(since=cursor))["items"]
              if is_controller_agent(r["user_agent"]) and r["method"] in ("POST", "PUT", "PATCH", "DELETE")
              and r["resource"] in ("pods", "controllerrevisions")]
    assert writes == []
    assert {p["metadata"]["name"]: p["metadata"]["resourceVersion"]
            for p in await daemon_pods(kube, "agent")} == pods_before
    assert await revisions(kube) == revisions_before


async def _count_syncs(controller: ControllerProcess, hash_: str, *, at_least: int) -> bool:
    return sum(1 for e in controller.logs if e.get("event") == "sync" and e.get("key") == "default/agent"
               and e.get("hash") == hash_) >= at_least


@KCM
@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(kcm_revision_data, id="kube-controller-manager"),
        pytest.param(early_dsctl_revision_data, id="earlier-dsctl-unescaped"),
    ],
)
async def test_rollback_renumbers_a_revision_in_its_stored_bytes(
    sim: SimProcess, kube: KubeClient, encode: Callable[[dict[str, Any]], bytes]
) -> None:
    """`kubectl rollout undo` to a revision whose data holds && and > renumbers it, whoever encoded it."""
    await leave_kcm_state(sim, kube, encode=encode)
    async with ControllerProcess(str(sim.kubeconfig)) as controller:
        await synced(controller, NEW_HASH)
        await sim.kubectl("rollout", "undo", "ds/agent")

        async def rolled_back() -> dict[str, tuple[int, str]] | None:
            pods = await daemon_pods(kube, "agent")
            done = len(pods) == NODES and all(
                is_ready(p) and p["metadata"]["labels"]["controller-revision-hash"] == OLD_HASH
                and p["spec"]["containers"][0]["command"] == OLD_COMMAND for p in pods)
            found = await revisions(kube)
            return found if done and found.get(f"agent-{OLD_HASH}", (0, ""))[0] == 3 else None

        found = await eventually(rolled_back, timeout=30, message="the rollback to revision 1, renumbered 3")
        assert not controller.errors(), controller.errors()[:3]
        # Go's bytes first; the unescaped bytes only for a revision stored that way.
        fallbacks = [e for e in controller.logs if e.get("event") == "revision_written_unescaped"]
        assert bool(fallbacks) is (encode is early_dsctl_revision_data), fallbacks
    assert {name: number for name, (number, _) in found.items()} == {f"agent-{OLD_HASH}": 3, f"agent-{NEW_HASH}": 2}
