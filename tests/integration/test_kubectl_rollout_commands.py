"""kubectl rollout against the simulated cluster and the real controller: status, history, undo, restart.

The kubectl here is the one from the test extra, run with its defaults (the WatchList client
included), exactly as a user would. Each rollout runs under a ``RolloutObserver``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.simproc import SimProcess

FLEET = pytest.mark.parametrize("sim", [{"nodes": 6, "args": ["--pod-startup-seconds", "0.3"]}], indirect=True)


def image(version: int) -> str:
    """The agent image of a numbered release."""
    return f"registry.example/agent:{version}.0"


async def deploy(kube: KubeClient, *, quick_exit: bool = False) -> None:
    """Create ds/agent (image 1.0, maxUnavailable 2) and wait for its first rollout."""
    ds = daemonset("agent", image=image(1), strategy=rolling(max_unavailable=2))
    if quick_exit:
        ds["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    await kube.create(DAEMONSETS, ds, namespace="default")
    async with RolloutObserver(kube, "agent") as obs:
        await obs.wait_rolled_out(30)


async def release(kube: KubeClient, *versions: int) -> None:
    """Roll out each version in turn, each to completion, under the observer."""
    async with RolloutObserver(kube, "agent") as obs:
        for version in versions:
            await update_template(kube, "agent", image=image(version))
            await obs.wait_rolled_out(30)
    obs.assert_clean()


async def pod_images(kube: KubeClient) -> set[str]:
    """Images run by the DaemonSet's live pods."""
    return {p["spec"]["containers"][0]["image"] for p in await daemon_pods(kube, "agent")}


async def revisions_by_image(kube: KubeClient) -> dict[str, int]:
    """Revision number of each stored ControllerRevision, keyed by the image its template runs."""
    items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
    out: dict[str, int] = {}
    for rev in items:
        containers: list[dict[str, Any]] = rev["data"]["spec"]["template"]["spec"]["containers"]
        out[containers[0]["image"]] = int(rev["revision"])
    return out


@FLEET
async def test_rollout_status_follows_a_rollout_to_completion(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """`kubectl rollout status` reports progress while pods are replaced and exits 0 when the rollout is done."""
    await deploy(kube)
    async with RolloutObserver(kube, "agent") as obs:
        cursor = (await sim.requests())["next"]
        await update_template(kube, "agent", image=image(2))
        result = await sim.kubectl("rollout", "status", "ds/agent", "--timeout=60s", timeout=90)
        # A live list right after kubectl returns: it reflects every write before kubectl's verdict.
        done = {target_of(p) for p in await daemon_pods(kube, "agent") if p["metadata"]["labels"].get(
            "controller-revision-hash") == obs.current_hash and is_ready(p)}
        await obs.wait_rolled_out(10)
    obs.assert_clean()
    assert 'daemon set "agent" successfully rolled out' in result.stdout
    # Either progress line proves kubectl saw the rollout in flight, not only its end.
    assert re.search(r'Waiting for daemon set "agent" rollout to finish: \d+ (out of 6 new pods|of 6 updated pods)',
                     result.stdout), result.stdout
    assert done == obs.desired, "kubectl declared success before every node ran the new template"
    watches = [r for r in (await sim.requests(since=cursor))["items"]
               if r["verb"] == "watch" and r["resource"] == "daemonsets" and "kubectl" in r["user_agent"]]
    assert watches, "kubectl should follow the DaemonSet with a watch"


@FLEET
async def test_rollout_history_lists_revisions_and_prints_a_template(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """`kubectl rollout history` lists revisions 1-3, and `--revision=2` prints the 2.0 pod template."""
    await deploy(kube, quick_exit=True)
    await release(kube, 2, 3)
    listing = await sim.kubectl("rollout", "history", "ds/agent")
    rows = [line.split()[0] for line in listing.stdout.splitlines() if re.match(r"^\d+\s", line)]
    assert rows == ["1", "2", "3"], listing.stdout
    shown = await sim.kubectl("rollout", "history", "ds/agent", "--revision=2")
    assert "Pod Template:" in shown.stdout
    assert re.search(rf"Image:\s+{re.escape(image(2))}\n", shown.stdout), shown.stdout
    assert image(3) not in shown.stdout


@pytest.mark.parametrize(
    ("sim", "undo_args", "expected_image", "expected_revisions"),
    [
        pytest.param({"nodes": 6, "args": ["--pod-startup-seconds", "0.3"]}, [], image(2),
                     {image(1): 1, image(3): 3, image(2): 4}, id="previous"),
        pytest.param({"nodes": 6, "args": ["--pod-startup-seconds", "0.3"]}, ["--to-revision=1"], image(1),
                     {image(2): 2, image(3): 3, image(1): 4}, id="to-revision-1"),
    ],
    indirect=["sim"],
)
async def test_rollout_undo_restores_and_renumbers(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess, *, undo_args: list[str],
    expected_image: str, expected_revisions: dict[str, int],
) -> None:
    """`kubectl rollout undo` brings back an old template on every node and renumbers its revision."""
    await deploy(kube, quick_exit=True)
    await release(kube, 2, 3)
    async with RolloutObserver(kube, "agent") as obs:
        await sim.kubectl("rollout", "undo", "ds/agent", *undo_args)
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    assert await pod_images(kube) == {expected_image}
    assert await revisions_by_image(kube) == expected_revisions


@FLEET
async def test_rollout_restart_replaces_every_pod(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """`kubectl rollout restart` makes a new revision and replaces every pod, within budget."""
    await deploy(kube, quick_exit=True)
    before = {p["metadata"]["name"] for p in await daemon_pods(kube, "agent")}
    async with RolloutObserver(kube, "agent") as obs:
        old_hash = obs.current_hash
        await sim.kubectl("rollout", "restart", "ds/agent")
        await obs.wait_for(lambda o: o.current_hash != old_hash, timeout=20, message="a new revision")
        await obs.wait_rolled_out(30)
    obs.assert_clean()
    after = {p["metadata"]["name"] for p in await daemon_pods(kube, "agent")}
    assert before.isdisjoint(after) and len(after) == 6
    assert await pod_images(kube) == {image(1)}
    items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
    newest = max(items, key=lambda r: int(r["revision"]))
    assert sorted(int(r["revision"]) for r in items) == [1, 2]
    annotations = newest["data"]["spec"]["template"]["metadata"].get("annotations") or {}
    assert "kubectl.kubernetes.io/restartedAt" in annotations

