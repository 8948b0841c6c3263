"""``rollingUpdateType: InPlaceIfPossible`` end to end: image-only changes are patched into the
running pods (same UID, same node) within ``maxUnavailable``, under a ``RolloutObserver``; any
other change recreates the pods; a surge with it is refused and holds the rollout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, EVENTS, crd_daemonsets
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

V1, V2 = "registry.example/agent:1.0", "registry.example/agent:2.0"
IN_PLACE = {"dsctl.io/rolling-update-type": "InPlaceIfPossible"}
CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "daemonsets.dsctl.io.yaml"


def _agent(strategy: dict[str, Any]) -> dict[str, Any]:
    """The ``agent`` DaemonSet with the in-place annotation on the DaemonSet itself."""
    ds = daemonset("agent", image=V1, strategy=strategy)
    ds["metadata"]["annotations"] = dict(IN_PLACE)
    return ds


async def _pods_by_uid(kube: KubeClient) -> dict[str, str]:
    """Pod UID to node, for the DaemonSet's live pods."""
    return {p["metadata"]["uid"]: target_of(p) for p in await daemon_pods(kube, "agent")}


async def _running(kube: KubeClient, image: str, count: int) -> bool:
    """Every pod Ready, with ``image`` in its spec and reported by its kubelet."""
    pods = await daemon_pods(kube, "agent")
    return len(pods) == count and all(
        is_ready(p) and p["spec"]["containers"][0]["image"] == image
        and [c["image"] for c in p["status"].get("containerStatuses") or []] == [image]
        for p in pods
    )


async def _same_pods_restarted_once(kube: KubeClient, before: dict[str, str]) -> None:
    assert await _pods_by_uid(kube) == before, "every pod keeps its UID and its node"
    restarts = {c["restartCount"] for p in await daemon_pods(kube, "agent") for c in p["status"]["containerStatuses"]}
    assert restarts == {1}


@pytest.mark.parametrize("sim", [{"nodes": 50}], indirect=True)
async def test_image_change_is_patched_in_place_over_50_nodes(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """apps/v1, driven with kubectl: an image-only change keeps every pod's UID and node, within maxUnavailable,
    and ends with the new image Ready."""
    await kube.create(DAEMONSETS, daemonset("agent", image=V1, strategy=rolling(max_unavailable="10%")),
                      namespace="default")
    await eventually(lambda: _running(kube, V1, 50), timeout=60, message="first rollout")
    await sim.kubectl("annotate", "ds", "agent", "dsctl.io/rolling-update-type=InPlaceIfPossible")
    before = await _pods_by_uid(kube)
    async with RolloutObserver(kube, "agent") as obs:
        await sim.kubectl("set", "image", "ds/agent", f"agent={V2}")
        await obs.wait_rolled_out(90)
        await eventually(lambda: _running(kube, V2, 50), timeout=60, message="new image Ready everywhere")
    obs.assert_clean()
    assert obs.budget == 5
    assert 0 < obs.max_unavailable_seen <= 5
    assert obs.max_pods_on_node == 1
    await _same_pods_restarted_once(kube, before)


@pytest.mark.parametrize("sim", [{"nodes": 4}], indirect=True)
async def test_a_command_change_recreates_the_pods(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """With InPlaceIfPossible, a change beyond images (the command) replaces every pod."""
    await kube.create(DAEMONSETS, _agent(rolling(max_unavailable=2)), namespace="default")
    await eventually(lambda: _running(kube, V1, 4), timeout=60, message="first rollout")
    before = await _pods_by_uid(kube)
    async with RolloutObserver(kube, "agent") as obs:
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": V2,
                                                                 "command": ["/agent", "--v2"]}]}}}}
        await kube.patch(DAEMONSETS, "agent", patch, namespace="default", patch_type="strategic")
        await obs.wait_rolled_out(60)
    obs.assert_clean()
    after = await _pods_by_uid(kube)
    assert not set(before) & set(after), "every pod was recreated"
    assert sorted(after.values()) == sorted(before.values())


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_in_place_with_surge_is_refused_and_holds_the_rollout(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """apps/v1 cannot refuse the annotation, so the controller warns and updates no pod."""
    await kube.create(DAEMONSETS, _agent(rolling(max_unavailable=0, max_surge=1)), namespace="default")
    await eventually(lambda: _running(kube, V1, 3), timeout=60, message="first rollout")
    before = await _pods_by_uid(kube)
    await update_template(kube, "agent", image=V2)

    async def warned() -> bool:
        events = (await kube.list(EVENTS, namespace="default"))["items"]
        return any(e.get("reason") == "InvalidRolloutControl" and "maxSurge" in e.get("message", "")
                   for e in events)

    await eventually(warned, message="InvalidRolloutControl warning")
    assert await _pods_by_uid(kube) == before
    assert await _running(kube, V1, 3)


async def _crd_served(sim: SimProcess) -> bool:
    return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0


@pytest.mark.parametrize("sim", [{"nodes": 6}], indirect=True)
async def test_crd_mode_field_patches_in_place(sim: SimProcess, kube: KubeClient) -> None:
    """dsctl.io/v1: the rollingUpdateType field drives the same in-place rollout."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))
    await eventually(lambda: _crd_served(sim), message="CRD served")
    custom = crd_daemonsets()
    strategy: dict[str, Any] = rolling(max_unavailable=2)
    strategy["rollingUpdate"]["rollingUpdateType"] = "InPlaceIfPossible"
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        await kube.create(custom, daemonset("agent", image=V1, strategy=strategy, api_version="dsctl.io/v1"),
                          namespace="default")
        await eventually(lambda: _running(kube, V1, 6), timeout=60, message="first rollout")
        before = await _pods_by_uid(kube)
        await kube.patch(custom, "agent", [{"op": "replace", "path": "/spec/template/spec/containers/0/image",
                                            "value": V2}], namespace="default", patch_type="json")
        await eventually(lambda: _running(kube, V2, 6), timeout=60, message="new image Ready everywhere")
        await _same_pods_restarted_once(kube, before)
        assert not ctl.errors()


@pytest.mark.parametrize("sim", [{"nodes": 20, "args": ["--watch-event-latency-ms", "300"]}], indirect=True)
async def test_lagging_watches_never_take_in_place_past_the_budget(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """With pod events 300 ms late, no sync re-plans on a cache that does not show its patches yet."""
    await kube.create(DAEMONSETS, _agent(rolling(max_unavailable=2)), namespace="default")
    await eventually(lambda: _running(kube, V1, 20), timeout=60, message="first rollout")
    before = await _pods_by_uid(kube)
    async with RolloutObserver(kube, "agent") as obs:
        await update_template(kube, "agent", image=V2)
        await obs.wait_rolled_out(90)
        await eventually(lambda: _running(kube, V2, 20), timeout=60, message="new image Ready everywhere")
    obs.assert_clean()
    assert obs.max_unavailable_seen <= 2
    await _same_pods_restarted_once(kube, before)
