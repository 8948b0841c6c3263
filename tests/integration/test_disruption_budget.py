"""maxDisruptions end to end: the PodDisruptionBudget dsctl keeps, against the Eviction API and kubectl drain.

- apps/v1, evictions as VPA's updater makes them (one POST to ``pods/<name>/eviction`` per pod):
  with ``dsctl.io/max-disruptions: 1`` the first is allowed, the second answers 429 until the
  first pod's replacement is Ready; removing the setting deletes the budget.
- A budget of the DaemonSet's name that someone else owns is left alone; a bad value says so.
- CRD mode, where kubectl drain evicts dsctl's pods: two drains at once are served one at a time.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, EVENTS, POD_DISRUPTION_BUDGETS, crd_daemonsets
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "daemonsets.dsctl.io.yaml"
SIM = {"nodes": 4, "args": ["--pod-startup-seconds", "1"]}


async def _budget(kube: KubeClient) -> dict[str, Any] | None:
    try:
        return await kube.get(POD_DISRUPTION_BUDGETS, "agent", namespace="default")
    except errors.NotFound:
        return None


async def _pods(kube: KubeClient) -> dict[str, dict[str, Any]]:
    return {target_of(p): p for p in await daemon_pods(kube, "agent")}


async def _evict(sim: SimProcess, pod: dict[str, Any]) -> tuple[int, Any]:
    name = pod["metadata"]["name"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    return await sim.request("POST", f"/api/v1/namespaces/default/pods/{name}/eviction", json=body)


async def _allows(kube: KubeClient, minimum: int, allowed: int) -> bool:
    pdb = await _budget(kube)
    if pdb is None:
        return False
    status = pdb.get("status") or {}
    return (pdb["spec"].get("minAvailable") == minimum and status.get("disruptionsAllowed") == allowed
            and status.get("observedGeneration") == pdb["metadata"].get("generation"))


@pytest.mark.parametrize("sim", [SIM], indirect=True)
async def test_evictions_take_one_pod_at_a_time(sim: SimProcess, kube: KubeClient,
                                                controller: ControllerProcess) -> None:
    """max-disruptions 1: the first eviction passes, the second gets 429 until the first pod's
    replacement is Ready; the budget is owned by the DaemonSet and goes with the setting."""
    body = daemonset("agent")
    body["metadata"]["annotations"] = {"dsctl.io/max-disruptions": "1"}
    ds = await kube.create(DAEMONSETS, body, namespace="default")
    await eventually(lambda: _allows(kube, 3, 1), timeout=30, message="the budget: minAvailable 3, allows 1")
    pdb = await _budget(kube)
    assert pdb is not None
    (owner,) = pdb["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "DaemonSet", ds["metadata"]["uid"], True, True)
    assert pdb["spec"]["selector"] == ds["spec"]["selector"]

    pods = await _pods(kube)
    first, second = pods["node-0"], pods["node-1"]
    status, _ = await _evict(sim, first)
    assert status == 201
    refused = 0
    while True:
        status, answer = await _evict(sim, second)
        if status != 429:
            break
        assert answer["details"]["causes"][0]["reason"] == "DisruptionBudget"
        refused += 1
        replacement = (await _pods(kube)).get("node-0")
        assert replacement is None or replacement["metadata"]["uid"] != first["metadata"]["uid"]
        await asyncio.sleep(0.2)  # an evicter's retry interval (VPA retries at its next loop)
    assert status == 201 and refused > 0
    replacement = (await _pods(kube)).get("node-0")
    assert replacement is not None and is_ready(replacement), "allowed only once the replacement is Ready"
    assert replacement["metadata"]["uid"] != first["metadata"]["uid"]

    await kube.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {"dsctl.io/max-disruptions": None}}},
                     namespace="default")
    await eventually(lambda: _gone(kube), message="removing the setting deletes the budget")


async def _gone(kube: KubeClient) -> bool:
    return await _budget(kube) is None


async def _condition(kube: KubeClient, kind: str) -> dict[str, Any] | None:
    ds = await kube.get(DAEMONSETS, "agent", namespace="default")
    return next((c for c in (ds.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


async def _event_reasons(kube: KubeClient) -> set[str]:
    listed = await kube.list(EVENTS, namespace="default")
    return {e.get("reason", "") for e in listed["items"] if (e.get("involvedObject") or {}).get("name") == "agent"}


@pytest.mark.parametrize("sim", [{"nodes": 2}], indirect=True)
async def test_a_bad_value_or_a_foreign_budget_is_reported_and_left_alone(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """150 %: InvalidRolloutControl; then 1 with someone else's budget of that name:
    DisruptionBudgetNotOwned; the foreign budget is never written, the pods are unaffected."""
    foreign = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "agent", "namespace": "default"},
               "spec": {"minAvailable": 7, "selector": {"matchLabels": {"app": "other"}}}}
    stored = await kube.create(POD_DISRUPTION_BUDGETS, foreign, namespace="default")
    body = daemonset("agent")
    body["metadata"]["annotations"] = {"dsctl.io/max-disruptions": "150%"}
    await kube.create(DAEMONSETS, body, namespace="default")

    async def reported(reason: str) -> bool:
        cond = await _condition(kube, "DisruptionBudgetFailure")
        return cond is not None and cond["status"] == "True" and cond["reason"] == reason

    await eventually(lambda: reported("InvalidRolloutControl"), message="the bad value is reported")
    assert "InvalidRolloutControl" in await _event_reasons(kube)
    await kube.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {"dsctl.io/max-disruptions": "1"}}},
                     namespace="default")
    await eventually(lambda: reported("DisruptionBudgetNotOwned"), message="the foreign budget is reported")
    assert "DisruptionBudgetNotOwned" in await _event_reasons(kube)
    after = await _budget(kube)
    assert after is not None and after["spec"] == stored["spec"] and "ownerReferences" not in after["metadata"]
    assert len(await daemon_pods(kube, "agent")) == 2


async def _drain(sim: SimProcess, node: str) -> tuple[float, str]:
    out = await sim.kubectl("drain", node, "--ignore-daemonsets", "--timeout=60s", timeout=90)
    return time.monotonic(), out.stdout


@pytest.mark.parametrize("sim", [{"nodes": 3, "args": ["--pod-startup-seconds", "1"]}], indirect=True)
async def test_crd_mode_two_drains_at_once_are_served_one_at_a_time(sim: SimProcess, kube: KubeClient) -> None:
    """CRD mode, maxDisruptions 1: draining two nodes at once evicts one daemon pod; the other
    eviction is refused until that pod's replacement is Ready, then both drains complete."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))

    async def served() -> bool:
        return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0

    await eventually(served, message="CRD served")
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        body = daemonset("agent", api_version="dsctl.io/v1")
        body["spec"]["maxDisruptions"] = 1
        await kube.create(crd_daemonsets(), body, namespace="default")
        await eventually(lambda: _allows(kube, 2, 1), timeout=30, message="the budget allows one")
        cursor = (await sim.stats())["requests"]
        results = await asyncio.gather(_drain(sim, "node-0"), _drain(sim, "node-1"))
        assert all("drained" in stdout for _, stdout in results)
        log = (await sim.requests(since=cursor))["items"]
        evictions = [(r["name"], r["code"], r["time"]) for r in log if r["subresource"] == "eviction"]
        allowed = [e for e in evictions if e[1] == 201]
        assert len(allowed) == 2, evictions
        later = max(allowed, key=lambda e: e[2])
        assert any(name == later[0] and code == 429 for name, code, _ in evictions), (
            "the second eviction waited for the budget", evictions)
        assert later[2] - min(e[2] for e in allowed) >= 1.0, "not before the first replacement could be Ready"

        async def back() -> bool:
            pods = await _pods(kube)
            return len(pods) == 3 and all(is_ready(p) for p in pods.values())

        await eventually(back, message="a Ready daemon pod on every node again")
        assert not ctl.errors()
