"""Rollout controls end to end: partition, pause and a node-selector canary, driven with kubectl
and ``kubectl dsctl rollout`` (the plugin) against the real controller, in both modes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, crd_daemonsets
from tests.support.builders import daemonset, node, rolling
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess, kubectl_path

CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "daemonsets.dsctl.io.yaml"
# kubectl finds the plugin kubectl-dsctl on PATH, beside the test interpreter.
PLUGIN_ENV = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
V1, V2, V3 = (f"registry.example/agent:{v}.0" for v in (1, 2, 3))


async def images_by_node(kube: KubeClient, name: str = "agent") -> dict[str, str]:
    """Node to image of the DaemonSet's live, Ready pods (one per node once settled)."""
    pods = await daemon_pods(kube, name)
    return {target_of(p): p["spec"]["containers"][0]["image"] for p in pods if is_ready(p)}


async def settled(kube: KubeClient, expected: dict[str, str], name: str = "agent") -> bool:
    """Whether every node runs exactly one Ready pod with the expected image."""
    pods = await daemon_pods(kube, name)
    return len(pods) == len(expected) and await images_by_node(kube, name) == expected


async def holds(kube: KubeClient, expected: dict[str, str], seconds: float) -> None:
    """Assert, again and again for ``seconds``, that the pods stay exactly as expected."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert await images_by_node(kube) == expected
        await asyncio.sleep(0.2)


async def rollout(sim: SimProcess, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``kubectl dsctl rollout ARGS``: the plugin, found by kubectl on PATH.

    kubectl refuses flags before a plugin's name, so the cluster comes from ``$KUBECONFIG``, as
    it would in a user's shell.
    """
    proc = await asyncio.create_subprocess_exec(
        kubectl_path(), "dsctl", "rollout", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL, env={**os.environ, **PLUGIN_ENV, "KUBECONFIG": sim.kubeconfig},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    result = subprocess.CompletedProcess(list(args), proc.returncode or 0, out.decode(), err.decode())
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl dsctl rollout {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


@pytest.mark.parametrize("sim", [{"nodes": 10}], indirect=True)
async def test_partition_keeps_the_last_nodes_by_name_old(sim: SimProcess, kube: KubeClient,
                                                          controller: ControllerProcess) -> None:
    """partition 3 of 10 leaves node-7..9 on the old image; partition 0 then finishes the rollout."""
    nodes = [f"node-{i}" for i in range(10)]
    await kube.create(DAEMONSETS, daemonset("agent", image=V1, strategy=rolling(max_unavailable=10)),
                      namespace="default")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="first rollout")
    await sim.kubectl("annotate", "ds", "agent", "dsctl.io/partition=3")
    await sim.kubectl("set", "image", "ds/agent", f"agent={V2}")
    held = {n: (V2 if n < "node-7" else V1) for n in nodes}
    await eventually(lambda: settled(kube, held), message="seven nodes updated")
    await holds(kube, held, 2.0)
    await sim.kubectl("annotate", "ds", "agent", "dsctl.io/partition=0", "--overwrite")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V2)), message="rollout finished")


@pytest.mark.parametrize("sim", [{"nodes": 4}], indirect=True)
async def test_rollout_status_says_what_holds_the_rollout(sim: SimProcess, kube: KubeClient,
                                                         controller: ControllerProcess) -> None:
    """``dsctl rollout status`` names the partition that holds a rollout and how many pods it keeps back."""
    nodes = [f"node-{i}" for i in range(4)]
    await kube.create(DAEMONSETS, daemonset("agent", image=V1, strategy=rolling(max_unavailable=4)),
                      namespace="default")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="first rollout")
    await sim.kubectl("annotate", "ds", "agent", "dsctl.io/partition=1")
    await sim.kubectl("set", "image", "ds/agent", f"agent={V2}")

    async def status() -> str | None:
        out = (await rollout(sim, "status", "ds/agent", "--no-watch")).stdout
        return out if "RolloutHeld" in out and "3 out of 4 new pods" in out else None

    out = await eventually(status, timeout=30, interval=0.5, message="rollout status naming the partition")
    assert out.splitlines()[0] == 'Waiting for daemon set "agent" rollout to finish: 3 out of 4 new pods have been ' \
                                  "updated..."
    assert "is held by partition 1 (dsctl.io/partition): 1 of 4 pods are held on older revisions." in out


@pytest.mark.parametrize("sim", [{"nodes": 6}], indirect=True)
async def test_pause_holds_a_rollout_half_way_and_new_nodes_still_get_pods(sim: SimProcess, kube: KubeClient,
                                                                         controller: ControllerProcess) -> None:
    """Paused half way, no pod is deleted for 30 s, a new node gets a new-revision pod; resume finishes."""
    nodes = [f"node-{i}" for i in range(6)]
    slow = {"sim.dsctl.io/startup-seconds": "1"}  # a node a second, so the rollout can be caught half way
    await kube.create(DAEMONSETS, daemonset("agent", image=V1, annotations=slow, strategy=rolling(max_unavailable=1)),
                      namespace="default")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="first rollout")
    await sim.kubectl("set", "image", "ds/agent", f"agent={V2}")

    async def half_way() -> bool:
        return sum(image == V2 for image in (await images_by_node(kube)).values()) >= 2

    await eventually(half_way, timeout=30, interval=0.05, message="two nodes updated")
    assert (await rollout(sim, "pause", "ds/agent")).stdout.strip() == "daemonset.apps/agent paused"
    again = await rollout(sim, "pause", "ds/agent", check=False)
    assert again.returncode == 1 and 'daemonsets.apps "agent" is already paused' in again.stderr

    async def steady() -> dict[str, str] | None:
        # The node being replaced when the pause landed finishes; then nothing moves.
        pods = await daemon_pods(kube, "agent")
        images = await images_by_node(kube)
        return images if len(pods) == len(nodes) and len(images) == len(nodes) else None

    held = await eventually(steady, timeout=30, message="the rollout at rest after the pause")
    assert V1 in held.values() and V2 in held.values(), held
    cursor = (await sim.requests(limit=1_000_000))["next"]
    await holds(kube, held, 30.0)
    deletes = [r for r in (await sim.requests(since=cursor))["items"]
               if r["verb"] == "delete" and r["resource"] == "pods"]
    assert deletes == [], deletes
    await kube.create(NODES, node("node-late"))
    await eventually(lambda: settled(kube, {**held, "node-late": V2}), message="the new node's pod")
    assert (await rollout(sim, "resume", "ds/agent")).stdout.strip() == "daemonset.apps/agent resumed"
    status = await rollout(sim, "status", "ds/agent", "--timeout", "60")
    assert status.stdout.strip().endswith('daemon set "agent" successfully rolled out')
    assert await settled(kube, dict.fromkeys([*nodes, "node-late"], V2))


@pytest.mark.parametrize("sim", [{"nodes": 6}], indirect=True)
async def test_node_selector_canary_then_widening(sim: SimProcess, kube: KubeClient,
                                                  controller: ControllerProcess) -> None:
    """A zone=a selector updates only the zone-a nodes; widening it to both zones finishes."""
    nodes = [f"node-{i}" for i in range(6)]
    for name in nodes:
        await sim.kubectl("label", "node", name, f"zone={'a' if name < 'node-2' else 'b'}")
    await kube.create(DAEMONSETS, daemonset("agent", image=V1, strategy=rolling(max_unavailable=6)),
                      namespace="default")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="first rollout")
    await sim.kubectl("annotate", "ds", "agent", "dsctl.io/selector=zone=a")
    await sim.kubectl("set", "image", "ds/agent", f"agent={V2}")
    canary = {n: (V2 if n < "node-2" else V1) for n in nodes}
    await eventually(lambda: settled(kube, canary), message="canary nodes updated")
    await holds(kube, canary, 2.0)
    await sim.kubectl("annotate", "ds", "agent", "dsctl.io/selector=zone in (a,b)", "--overwrite")
    await eventually(lambda: settled(kube, dict.fromkeys(nodes, V2)), message="rollout finished")


async def _crd_served(sim: SimProcess) -> bool:
    return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_every_rollout_verb_in_crd_mode(sim: SimProcess, kube: KubeClient) -> None:
    """status, history, undo, pause, resume and restart drive a dsctl.io/v1 DaemonSet."""
    nodes = ["node-0", "node-1", "node-2"]
    await sim.kubectl("apply", "-f", str(CRD_FILE))
    await eventually(lambda: _crd_served(sim), message="CRD served")
    custom = crd_daemonsets()
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        await kube.create(custom, daemonset("agent", image=V1, strategy=rolling(max_unavailable=3),
                                            api_version="dsctl.io/v1"), namespace="default")
        status = await rollout(sim, "status", "dds/agent", "--timeout", "60")
        assert status.stdout.strip().endswith('daemon set "agent" successfully rolled out')
        await sim.kubectl("patch", "dds", "agent", "--type", "json", "-p",
                          f'[{{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"{V2}"}}]')
        await rollout(sim, "status", "dds/agent", "--timeout", "60")
        assert await settled(kube, dict.fromkeys(nodes, V2))

        history_text = (await rollout(sim, "history", "dds/agent")).stdout
        direct = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "dsctl", "rollout", "history", "dds/agent", "--kubeconfig", sim.kubeconfig,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(direct.communicate(), 60)
        assert (direct.returncode, out.decode()) == (0, history_text), err.decode()
        history = history_text.splitlines()
        assert history[:2] == ["daemonset.dsctl.io/agent ", "REVISION  CHANGE-CAUSE"]
        assert [row.split()[0] for row in history[2:] if row.strip()] == ["1", "2"]
        first = (await rollout(sim, "history", "dds/agent", "--revision", "1")).stdout
        assert "with revision #1" in first and V1 in first

        assert (await rollout(sim, "pause", "dds/agent")).stdout.strip() == "daemonset.dsctl.io/agent paused"
        paused = await kube.get(custom, "agent", namespace="default")
        assert paused["spec"]["updateStrategy"]["rollingUpdate"]["paused"] is True
        await sim.kubectl("patch", "dds", "agent", "--type", "json", "-p",
                          f'[{{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"{V3}"}}]')
        await holds(kube, dict.fromkeys(nodes, V2), 2.0)
        assert (await rollout(sim, "resume", "dds/agent")).stdout.strip() == "daemonset.dsctl.io/agent resumed"
        await eventually(lambda: settled(kube, dict.fromkeys(nodes, V3)), message="resumed rollout finished")

        undo = await rollout(sim, "undo", "dds/agent", "--to-revision", "1")
        assert undo.stdout.strip() == "daemonset.dsctl.io/agent rolled back"
        await eventually(lambda: settled(kube, dict.fromkeys(nodes, V1)), message="rolled back to revision 1")
        missing = await rollout(sim, "undo", "dds/agent", "--to-revision", "99", check=False)
        assert missing.returncode == 1 and "unable to find specified revision 99 in history" in missing.stderr

        before = {p["metadata"]["uid"] for p in await daemon_pods(kube, "agent")}
        assert (await rollout(sim, "restart", "dds/agent")).stdout.strip() == "daemonset.dsctl.io/agent restarted"

        async def replaced() -> bool:
            pods = await daemon_pods(kube, "agent")
            return not before & {p["metadata"]["uid"] for p in pods} and await settled(kube, dict.fromkeys(nodes, V1))

        await eventually(replaced, message="every pod replaced by restart")
        assert not ctl.errors(), ctl.errors()[:3]


@pytest.mark.parametrize("sim", [{"nodes": 2}], indirect=True)
async def test_dsctl_rollout_reports_kubectl_style_errors(sim: SimProcess) -> None:
    """A missing DaemonSet is 'Error from server (NotFound)' with exit 1; a bad kind says what to use."""
    missing = await rollout(sim, "history", "ds/nope", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): daemonsets.apps "nope" not found'
    bad = await rollout(sim, "status", "deployment/x", check=False)
    assert bad.returncode == 1 and "is not a DaemonSet kind" in bad.stderr
