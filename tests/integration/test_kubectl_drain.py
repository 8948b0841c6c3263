"""``kubectl drain`` (the real kubectl 1.36) against the simulator's eviction subresource and PDBs.

- apps/v1 mode: ``--ignore-daemonsets`` leaves the daemon pods alone, evicts the rest and
  completes, exactly as with kube-controller-manager's DaemonSet controller.
- A PodDisruptionBudget that allows no disruption blocks the eviction (kubectl retries the
  429 until its timeout); once the budget allows one, the same drain completes.
- CRD mode (``--resource dsctl.io/v1``): kubectl since 1.32 only skips pods whose controller is
  an ``apps`` DaemonSet, so it evicts dsctl's pods. dsctl re-creates the pod on the cordoned
  node (daemon pods tolerate ``node.kubernetes.io/unschedulable``, as upstream's do), the
  drain completes, and the node ends with one daemon pod after a single eviction: no churn.
  A ``--pod-selector`` that leaves the daemon pods out drains without touching them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, PODS, crd_daemonsets
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, is_ready
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "daemonsets.dsctl.io.yaml"
DRAINED = "node-1"

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)


def plain_pod(name: str, node: str) -> dict[str, Any]:
    """A pod with no controller, bound to ``node``, selected by the ``app=web`` budget."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "web", "image": "registry.example/web:1.0"}]}}


def budget(min_available: int) -> bytes:
    """A policy/v1 PodDisruptionBudget over ``app=web`` pods, as YAML-compatible JSON for kubectl."""
    return orjson.dumps({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                         "metadata": {"name": "web", "namespace": "default"},
                         "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}}})


async def web_pods_ready(kube: KubeClient) -> bool:
    """Both plain pods are Ready."""
    listed = await kube.list(PODS, namespace="default", label_selector="app=web")
    return len(listed["items"]) == 2 and all(is_ready(p) for p in listed["items"])


async def budget_allows(sim: SimProcess, allowed: int) -> bool:
    """The disruption controller has observed the PDB and allows ``allowed`` disruptions."""
    _, pdb = await sim.request("GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web")
    status = pdb.get("status") or {}
    return (status.get("observedGeneration") == pdb["metadata"]["generation"]
            and status.get("disruptionsAllowed") == allowed and status.get("currentHealthy") == 2)


async def evictions(sim: SimProcess, since: int) -> list[tuple[str, int]]:
    """``(pod name, code)`` of every eviction request after cursor ``since``."""
    log = (await sim.requests(since=since))["items"]
    return [(r["name"], r["code"]) for r in log if r["resource"] == "pods" and r["subresource"] == "eviction"]


async def test_drain_ignores_apps_v1_daemon_pods_and_evicts_the_rest(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """apps/v1: drain --ignore-daemonsets evicts the plain pod, leaves the daemon pod in place, and completes."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)
    before = {p["spec"].get("nodeName", ""): p["metadata"]["uid"] for p in await daemon_pods(kube, "agent")}
    for name, node in (("web-a", DRAINED), ("web-b", "node-2")):
        await kube.create(PODS, plain_pod(name, node), namespace="default")
    await eventually(lambda: web_pods_ready(kube), message="web pods ready")
    cursor = (await sim.stats())["requests"]
    out = await sim.kubectl("drain", DRAINED, "--ignore-daemonsets", "--force", "--timeout=30s")
    assert f"node/{DRAINED} drained" in out.stdout, out
    assert "ignoring DaemonSet-managed Pods" in out.stderr and "evicting pod default/web-a" in out.stdout, out
    assert await evictions(sim, cursor) == [("web-a", 201)]
    after = {p["spec"].get("nodeName", ""): p["metadata"]["uid"] for p in await daemon_pods(kube, "agent")}
    assert after == before, "the daemon pods must not have been touched"
    remaining = {p["metadata"]["name"] for p in (await kube.list(PODS, namespace="default",
                                                                label_selector="app=web"))["items"]}
    assert remaining == {"web-b"}
    assert (await kube.get(NODES, DRAINED))["spec"].get("unschedulable") is True


async def test_budget_blocks_drain_until_it_allows_a_disruption(sim: SimProcess, kube: KubeClient) -> None:
    """minAvailable 2 of 2: eviction gets 429 and drain times out; at minAvailable 1 the same drain completes."""
    for name, node in (("web-a", DRAINED), ("web-b", "node-2")):
        await kube.create(PODS, plain_pod(name, node), namespace="default")
    await eventually(lambda: web_pods_ready(kube), message="web pods ready")
    await sim.kubectl("apply", "-f", "-", input=budget(2))
    await eventually(lambda: budget_allows(sim, 0), message="budget observed")
    cursor = (await sim.stats())["requests"]
    blocked = await sim.kubectl("drain", DRAINED, "--force", "--timeout=3s", check=False)
    assert blocked.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in blocked.stderr, blocked
    assert {code for _, code in await evictions(sim, cursor)} == {429}
    assert (await kube.get(PODS, "web-a", namespace="default"))["metadata"].get("deletionTimestamp") is None

    await sim.kubectl("apply", "-f", "-", input=budget(1))
    await eventually(lambda: budget_allows(sim, 1), message="budget relaxed")
    cursor = (await sim.stats())["requests"]
    done = await sim.kubectl("drain", DRAINED, "--force", "--timeout=30s")
    assert f"node/{DRAINED} drained" in done.stdout, done
    assert await evictions(sim, cursor) == [("web-a", 201)]
    await eventually(lambda: budget_allows_after_eviction(sim), message="budget recomputed after the eviction")


async def budget_allows_after_eviction(sim: SimProcess) -> bool:
    """One pod left and healthy: nothing more may be disrupted, and no eviction is pending."""
    _, pdb = await sim.request("GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web")
    status = pdb.get("status") or {}
    return (status.get("currentHealthy"), status.get("disruptionsAllowed"), status.get("disruptedPods")) == (1, 0, None)


async def test_crd_mode_drain_evicts_once_and_the_pod_comes_back_on_the_cordoned_node(
    sim: SimProcess, kube: KubeClient
) -> None:
    """CRD mode: drain --ignore-daemonsets evicts dsctl's pod once, completes, and the node keeps one daemon pod."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))

    async def served() -> bool:
        return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0

    await eventually(served, message="CRD served")
    custom = crd_daemonsets()
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        await kube.create(custom, daemonset("agent", api_version="dsctl.io/v1"), namespace="default")

        async def one_ready_pod_per_node() -> dict[str, dict[str, Any]] | None:
            pods = await daemon_pods(kube, "agent", include_terminating=True)
            by_node = {p["spec"].get("nodeName", ""): p for p in pods}
            ok = len(pods) == 3 == len(by_node) and all(is_ready(p) for p in pods)
            return by_node if ok else None

        before = await eventually(one_ready_pod_per_node, message="one ready pod per node")
        cursor = (await sim.stats())["requests"]
        # The documented way to keep the daemon pod through a drain: leave it out by label.
        kept = await sim.kubectl("drain", "node-0", "--ignore-daemonsets", "--pod-selector=app!=agent",
                                 "--timeout=30s")
        assert "node/node-0 drained" in kept.stdout and await evictions(sim, cursor) == [], kept
        out = await sim.kubectl("drain", DRAINED, "--ignore-daemonsets", "--timeout=30s")
        assert f"node/{DRAINED} drained" in out.stdout, out
        evicted = before[DRAINED]["metadata"]["name"]
        assert await evictions(sim, cursor) == [(evicted, 201)], "kubectl 1.32+ evicts pods of a non-apps DaemonSet"
        after = await eventually(one_ready_pod_per_node, message="the daemon pod back on the cordoned node")
        assert after[DRAINED]["metadata"]["uid"] != before[DRAINED]["metadata"]["uid"]
        for node in ("node-0", "node-2"):
            assert after[node]["metadata"]["uid"] == before[node]["metadata"]["uid"], f"{node} pod replaced"
        log = (await sim.requests(since=cursor))["items"]
        creates = [r for r in log if r["verb"] == "create" and r["resource"] == "pods" and not r["subresource"]
                   and r["user_agent"].startswith("dsctl/")]
        assert len(creates) == 1, "one re-creation, no churn"
        assert not ctl.errors()
