"""The node readiness gate end to end: the real controller, the simulator, and a watch that judges.

Nodes join carrying ``dsctl.io/agents-not-ready:NoSchedule``, as a kubelet started with
``--register-with-taints`` registers them. ``GateWatch`` follows nodes and pods and checks, at
the resourceVersion of every removal, that no gating pod on the node was not Ready. The timing
of removals is measured by ``benchmarks/readiness_gate.py``, never asserted here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from dsctl.daemonset.reasons import INVALID_ROLLOUT_CONTROL, READINESS_GATE_TIMEOUT, READINESS_TAINT_ADDED
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, EVENTS, NODES, PODS, crd_daemonsets
from dsctl_api.pods import controller_ref
from tests.support.builders import daemonset, node
from tests.support.clusterview import daemon_pods
from tests.support.controllerproc import ControllerProcess
from tests.support.crdfiles import CRD_FILE
from tests.support.gatewatch import GateWatch
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

KEY = "dsctl.io/agents-not-ready"
TAINT = {"key": KEY, "effect": "NoSchedule"}
GATE_ANNOTATION = "dsctl.io/node-readiness-gate"
STARTUP = "sim.dsctl.io/startup-seconds"
FAST_BOOKMARKS = ["--bookmark-seconds", "0.5"]

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 1, "args": FAST_BOOKMARKS}], indirect=True)


def agent(name: str, *, gate: str | None = None, startup: float | None = None, **kwargs: Any) -> dict[str, Any]:
    """A DaemonSet; ``gate`` sets the apps/v1 annotation, ``startup`` the simulated pod start-up."""
    body = daemonset(name, annotations={STARTUP: str(startup)} if startup is not None else None, **kwargs)
    if gate is not None:
        body["metadata"]["annotations"] = {GATE_ANNOTATION: gate}
    return body


def gating_owner(names: set[str]) -> Any:
    """``GateWatch.gating`` for DaemonSets ``names`` of the default namespace."""
    def owner(pod: Mapping[str, Any]) -> str | None:
        ref = controller_ref(pod)
        return f"default/{ref['name']}" if ref is not None and ref.get("name") in names else None
    return owner


def pinned_pod(name: str, node_name: str) -> dict[str, Any]:
    """A plain pod for ``node_name`` (by its hostname label), with no toleration of the readiness taint."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node_name},
                     "containers": [{"name": "app", "image": "registry.example/app:1"}]}}


async def tainted(kube: KubeClient, name: str) -> bool:
    """Whether node ``name`` carries the readiness taint."""
    taints = ((await kube.get(NODES, name)).get("spec") or {}).get("taints") or []
    return any(t.get("key") == KEY for t in taints)


async def node_events(kube: KubeClient, name: str, reason: str) -> list[dict[str, Any]]:
    """Events about Node ``name`` with ``reason``."""
    items = (await kube.list(EVENTS, namespace="default"))["items"]
    return [e for e in items if e["involvedObject"].get("kind") == "Node" and e["involvedObject"].get("name") == name
            and e.get("reason") == reason]


def metric(text: str, name: str) -> float | None:
    """The value of an unlabelled sample in a /metrics page."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def test_taint_goes_only_after_the_last_gating_pod_is_ready(sim: SimProcess, kube: KubeClient) -> None:
    """Six nodes join tainted: each loses the taint only once its three gating pods are Ready (never before, by
    the watch), plain DaemonSets never hold it, and a pod pinned there without the toleration binds only after."""
    gating = {"cni": 0.5, "csi": 1.0, "gpu": 1.5}
    for name, startup in gating.items():
        await kube.create(DAEMONSETS, agent(name, gate="true", startup=startup), namespace="default")
    for name in ("logs", "metrics", "dns"):
        await kube.create(DAEMONSETS, agent(name), namespace="default")
    # An unreadable value gates (the safe side) and is reported; it stalls nobody.
    await kube.create(DAEMONSETS, agent("typo", gate="yes"), namespace="default")
    owners = {*gating, "typo"}
    async with ControllerProcess(sim.kubeconfig) as ctl, \
            GateWatch(kube, KEY, gating_owner(owners)) as watch:
        joined = [f"joined-{i}" for i in range(6)]
        for name in joined:
            await kube.create(NODES, node(name, taints=[TAINT]))
            await kube.create(PODS, pinned_pod(f"app-on-{name}", name), namespace="default")

        async def all_removed_and_judged() -> bool:
            return all(watch.removal_of(n) is not None for n in joined) and watch.pending == 0
        await eventually(all_removed_and_judged, timeout=30, message="every joined node untainted and judged")
        assert watch.violations == [] and watch.errors == []
        assert watch.judged == len(joined)
        for name in joined:
            removal = watch.removal_of(name)
            assert removal is not None
            assert watch.last_ready(name, {f"default/{o}" for o in owners}) is not None
            ready_rvs = [s.rv for states in watch.history.values() for s in states
                         if s.node == name and s.ready and s.live]
            assert ready_rvs and min(ready_rvs) < removal.rv

        async def bound_after_removal() -> bool:
            return all(f"default/app-on-{n}" in watch.bound_rv for n in joined)
        await eventually(bound_after_removal, timeout=15, message="the pinned pods bound")
        for name in joined:
            removal = watch.removal_of(name)
            assert removal is not None and watch.bound_rv[f"default/app-on-{name}"] > removal.rv, name

        async def typo_reported() -> list[dict[str, Any]]:
            items = (await kube.list(EVENTS, namespace="default"))["items"]
            return [e for e in items if e["involvedObject"].get("name") == "typo"
                    and e.get("reason") == INVALID_ROLLOUT_CONTROL and GATE_ANNOTATION in e.get("message", "")]
        await eventually(typo_reported, timeout=10, message="the unreadable gate value reported on its DaemonSet")
        for pod in await daemon_pods(kube, "logs"):
            assert {"key": KEY, "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"]
        _, page = await ctl.get("/metrics")
        assert metric(page, "dsctl_node_readiness_gated_nodes") == 0.0
        assert metric(page, "dsctl_node_readiness_gate_duration_seconds_count") == float(len(joined))
        assert not ctl.errors(), ctl.errors()[:3]


async def test_crd_field_excluded_node_is_not_held_and_timeout_warns(sim: SimProcess, kube: KubeClient) -> None:
    """CRD mode: a gating DaemonSet whose nodeSelector excludes a node does not hold it; on the node it wants,
    where its pod never gets Ready, the timeout gives a Warning on the Node and the gauge, and the taint stays."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))
    custom = crd_daemonsets()

    async def served() -> bool:
        return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0
    await eventually(served, message="CRD served")
    body = daemonset("gpu-agent", node_selector={"pool": "gpu"}, annotations={"sim.dsctl.io/never-ready": "true"},
                     api_version="dsctl.io/v1")
    body["spec"]["nodeReadinessGate"] = True
    await kube.create(custom, body, namespace="default")
    args = ["--resource", "dsctl.io/v1", "--readiness-timeout", "2s"]
    async with ControllerProcess(sim.kubeconfig, args=args) as ctl:
        await kube.create(NODES, node("cpu-1", taints=[TAINT]))
        await kube.create(NODES, node("gpu-1", labels={"pool": "gpu"}, taints=[TAINT]))

        async def cpu_untainted() -> bool:
            return not await tainted(kube, "cpu-1")
        await eventually(cpu_untainted, timeout=15, message="the node the gating DaemonSet excludes untainted")

        async def warned() -> list[dict[str, Any]]:
            return await node_events(kube, "gpu-1", READINESS_GATE_TIMEOUT)
        [event] = await eventually(warned, timeout=20, message="a timeout Warning on gpu-1")
        assert event["type"] == "Warning" and "default/gpu-agent" in event["message"], event
        assert await tainted(kube, "gpu-1"), "the taint stays after the timeout"

        async def gauges() -> bool:
            _, page = await ctl.get("/metrics")
            return (metric(page, "dsctl_node_readiness_timed_out_nodes") == 1.0
                    and metric(page, "dsctl_node_readiness_gated_nodes") == 1.0)
        await eventually(gauges, timeout=10, message="one gated node, timed out")
        assert not ctl.errors(), ctl.errors()[:3]


async def test_continuous_mode_retaints_and_untaints(sim: SimProcess, kube: KubeClient) -> None:
    """Continuous mode: a gating pod not Ready for the retaint time taints its node again, with a Warning on
    the Node; Ready again, the taint goes; never while it is not Ready."""
    await kube.create(DAEMONSETS, agent("cni", gate="true"), namespace="default")
    args = ["--readiness-taint-mode", "continuous", "--readiness-retaint-seconds", "1"]
    async with ControllerProcess(sim.kubeconfig, args=args) as ctl, \
            GateWatch(kube, KEY, gating_owner({"cni"})) as watch:
        await kube.create(NODES, node("n-1", taints=[TAINT]))

        async def removed(count: int) -> bool:
            return len([r for r in watch.removals if r.node == "n-1"]) >= count and watch.pending == 0
        await eventually(lambda: removed(1), timeout=15, message="first removal")
        [pod] = [p for p in await daemon_pods(kube, "cni") if p["spec"].get("nodeName") == "n-1"]
        name = pod["metadata"]["name"]
        await kube.patch(PODS, name, {"metadata": {"annotations": {"sim.dsctl.io/never-ready": "true"}}},
                         namespace="default")

        async def retainted() -> bool:
            return any(a.node == "n-1" for a in watch.added)
        await eventually(retainted, timeout=15, message="the taint added back")

        async def retaint_event() -> list[dict[str, Any]]:
            return await node_events(kube, "n-1", READINESS_TAINT_ADDED)
        [event] = await eventually(retaint_event, timeout=10, message="a ReadinessTaintAdded Warning on n-1")
        assert "default/cni" in event["message"]
        await kube.patch(PODS, name, {"metadata": {"annotations": {"sim.dsctl.io/never-ready": None}}},
                         namespace="default")
        await eventually(lambda: removed(2), timeout=15, message="removed again once Ready")
        assert watch.violations == [] and watch.errors == []
        assert not ctl.errors(), ctl.errors()[:3]
