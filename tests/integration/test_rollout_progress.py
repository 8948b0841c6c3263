"""progressDeadlineSeconds and burstReplicas end to end, against the real controller (apps/v1
annotations; the CRD fields share the readers and are pinned in the unit tests)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.errors import ApiError
from dsctl.kube.resources import DAEMONSETS, EVENTS, Resource, crd_daemonsets
from tests.integration.test_rollout_controls import CRD_FILE, V1, V2, images_by_node, rollout, settled
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

DEADLINE = 5
# The controller requeues one second past the deadline; the rest is slack for a loaded machine.
DETECTION_BOUND = DEADLINE + 1 + 6


async def progressing(kube: KubeClient, name: str = "agent", resource: Resource = DAEMONSETS
                      ) -> dict[str, Any] | None:
    """The DaemonSet's Progressing condition."""
    ds = await kube.get(resource, name, namespace="default")
    for condition in (ds.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Progressing":
            return dict(condition)
    return None


async def stuck_gauge(ctl: ControllerProcess, name: str = "agent") -> float | None:
    """dsctl_daemonset_rollout_stuck for default/<name>, if exported."""
    _, body = await ctl.get("/metrics")
    for line in body.splitlines():
        if line.startswith("dsctl_daemonset_rollout_stuck{") and f'name="{name}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_never_ready_rollout_exceeds_deadline_and_undo_clears_it(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """A never-ready template is ProgressDeadlineExceeded within deadline + 1 s requeue; undo clears it."""
    nodes = [f"node-{i}" for i in range(3)]
    body = daemonset("agent", image=V1, strategy=rolling(max_unavailable=1))
    body["metadata"]["annotations"] = {"dsctl.io/progress-deadline-seconds": str(DEADLINE)}
    await kube.create(DAEMONSETS, body, namespace="default")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="first rollout")

    async def reason_is(reason: str, status: str) -> bool:
        cond = await progressing(kube)
        return cond is not None and (cond["reason"], cond["status"]) == (reason, status)

    await eventually(lambda: reason_is("NewRevisionAvailable", "True"), message="first rollout complete")
    assert await stuck_gauge(controller) == 0

    patch = {"spec": {"template": {"metadata": {"annotations": {"sim.dsctl.io/never-ready": "true"}},
                                   "spec": {"containers": [{"name": "agent", "image": V2}]}}}}
    await kube.patch(DAEMONSETS, "agent", patch, namespace="default", patch_type="strategic")
    changed = time.monotonic()
    await eventually(lambda: reason_is("ProgressDeadlineExceeded", "False"), timeout=DETECTION_BOUND,
                     message="ProgressDeadlineExceeded within the deadline plus the requeue")
    assert time.monotonic() - changed >= DEADLINE - 1  # not reported before the deadline (1 s stamp precision)
    cond = await progressing(kube)
    assert cond is not None and '"agent-' in cond["message"] and "timed out progressing" in cond["message"]
    await eventually(lambda: _equals(stuck_gauge(controller), 1.0), message="gauge shows the stuck rollout")
    status = await rollout(sim, "status", "ds/agent", check=False)
    assert status.returncode == 1
    assert 'error: daemon set "agent" exceeded its progress deadline' in status.stderr

    await rollout(sim, "undo", "ds/agent")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="undo rolled back")
    await eventually(lambda: reason_is("NewRevisionAvailable", "True"), message="condition back to True")
    await eventually(lambda: _equals(stuck_gauge(controller), 0.0), message="gauge back to 0")
    assert await images_by_node(kube) == dict.fromkeys(nodes, V1)


async def _equals(value: Any, expected: float) -> bool:
    return bool(await value == expected)


@pytest.mark.parametrize("sim", [{"nodes": 8}], indirect=True)
async def test_burst_replicas_caps_creates_per_sync(sim: SimProcess, kube: KubeClient,
                                                    controller: ControllerProcess) -> None:
    """dsctl.io/burst-replicas=2: no sync issues more than 2 creates, and all 8 pods still come."""
    body = daemonset("agent", image=V1)
    body["metadata"]["annotations"] = {"dsctl.io/burst-replicas": "2"}
    await kube.create(DAEMONSETS, body, namespace="default")
    await eventually(lambda: _count_is(kube, 8), message="a pod on every node")
    # The last sync's log line can arrive after its pods are visible in the API: wait for it.
    await eventually(lambda: _all_creates_logged(controller, 8), message="every create logged by a sync")
    creates = _creates_per_sync(controller)
    assert max(creates) <= 2 and sum(creates) == 8


def _creates_per_sync(controller: ControllerProcess) -> list[int]:
    return [e["creates"] for e in controller.logs if e.get("event") == "sync" and e.get("key") == "default/agent"
            and e.get("creates")]


async def _all_creates_logged(controller: ControllerProcess, count: int) -> bool:
    return sum(_creates_per_sync(controller)) >= count


async def _count_is(kube: KubeClient, count: int) -> bool:
    return len(await daemon_pods(kube, "agent")) == count


@pytest.mark.parametrize("sim", [{"nodes": 2}], indirect=True)
async def test_crd_fields_deadline_and_burst(sim: SimProcess, kube: KubeClient) -> None:
    """CRD mode: spec.progressDeadlineSeconds reports a stuck rollout with lastUpdateTime kept, and
    spec.burstReplicas 1 creates one pod per sync; undo clears the condition."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))
    custom = crd_daemonsets()

    async def served() -> bool:
        return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0

    await eventually(served, message="CRD served")
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        body = daemonset("agent", image=V1, strategy=rolling(max_unavailable=1), api_version="dsctl.io/v1")
        body["spec"] |= {"progressDeadlineSeconds": DEADLINE, "burstReplicas": 1}
        await kube.create(custom, body, namespace="default")
        await eventually(lambda: settled(kube, {"node-0": V1, "node-1": V1}), message="first rollout")
        creates = [e["creates"] for e in ctl.logs if e.get("event") == "sync" and e.get("creates")]
        assert creates and max(creates) == 1

        async def reason_is(reason: str) -> bool:
            cond = await progressing(kube, resource=custom)
            return cond is not None and cond["reason"] == reason

        patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": V2},
                 {"op": "add", "path": "/spec/template/metadata/annotations",
                  "value": {"sim.dsctl.io/never-ready": "true"}}]
        await kube.patch(custom, "agent", patch, namespace="default", patch_type="json")
        await eventually(lambda: reason_is("ProgressDeadlineExceeded"), timeout=DETECTION_BOUND,
                         message="ProgressDeadlineExceeded in CRD mode")
        cond = await progressing(kube, resource=custom)
        assert cond is not None and cond["status"] == "False" and cond.get("lastUpdateTime")
        await rollout(sim, "undo", "dds/agent")
        await eventually(lambda: reason_is("NewRevisionAvailable"), message="undo clears it in CRD mode")
        for field in ("burstReplicas", "progressDeadlineSeconds"):
            bad = daemonset(f"zero-{field.lower()}", api_version="dsctl.io/v1")
            bad["spec"][field] = 0
            with pytest.raises(ApiError) as info:
                await kube.create(custom, bad, namespace="default")
            assert info.value.status == 422 and field in str(info.value)
        assert not ctl.errors(), ctl.errors()[:3]


@pytest.mark.parametrize("sim", [{"nodes": 2}], indirect=True)
async def test_unreadable_limits_warn_and_fall_back(sim: SimProcess, kube: KubeClient,
                                                    controller: ControllerProcess) -> None:
    """Unreadable burst/deadline annotations get InvalidRolloutControl warnings naming them; the
    DaemonSet still converges (global burst, default deadline)."""
    body = daemonset("agent", image=V1)
    body["metadata"]["annotations"] = {"dsctl.io/burst-replicas": "lots", "dsctl.io/progress-deadline-seconds": "-5"}
    await kube.create(DAEMONSETS, body, namespace="default")
    await eventually(lambda: settled(kube, {"node-0": V1, "node-1": V1}), message="converged on the defaults")

    async def warned() -> bool:
        events = (await kube.list(EVENTS, namespace="default"))["items"]
        messages = " ".join(str(e.get("message")) for e in events if e.get("reason") == "InvalidRolloutControl")
        return "dsctl.io/burst-replicas" in messages and "dsctl.io/progress-deadline-seconds" in messages

    await eventually(warned, message="InvalidRolloutControl events name both annotations")
