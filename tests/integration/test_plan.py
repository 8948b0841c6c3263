"""``dsctl plan`` against the simulator, in both modes: its predictions against what the real
controller then does, its read-only promise checked in the API server's request log, and its
exit codes."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, Resource, crd_daemonsets
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.crdfiles import CRD_FILE
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

V1, V2 = "registry.example/agent:1.0", "registry.example/agent:2.0"
MODES = [pytest.param("apps/v1", id="apps-v1"), pytest.param("dsctl.io/v1", id="crd")]
PLAN_AGENT = "dsctl-plan/"


async def _run(kubeconfig: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command with ``$KUBECONFIG`` set and the kubectl plugin on ``PATH``."""
    env = {**os.environ, "KUBECONFIG": kubeconfig,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                stdin=asyncio.subprocess.DEVNULL, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return subprocess.CompletedProcess(list(argv), proc.returncode or 0, out.decode(), err.decode())


async def _plan(kubeconfig: str, manifest: dict[str, Any], directory: Path, *extra: str) \
        -> tuple[int, dict[str, Any] | None, str]:
    """``dsctl plan -f FILE -o json``: (exit code, document, stderr)."""
    path = directory / f"{manifest['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    done = await _run(kubeconfig, sys.executable, "-m", "dsctl", "plan", "-f", str(path), "-o", "json", *extra)
    return done.returncode, (json.loads(done.stdout) if done.stdout else None), done.stderr


async def _last_seq(sim: SimProcess) -> int:
    since = 0
    while True:
        page = await sim.requests(since=since, limit=10_000)
        if not page["items"]:
            return since
        since = int(page["next"])


async def _log(sim: SimProcess, since: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = await sim.requests(since=since, limit=10_000)
        items.extend(page["items"])
        if not page["items"]:
            return items
        since = int(page["next"])


async def _crd_mode(sim: SimProcess, mode: str) -> tuple[Resource, list[str]]:
    """The resource of ``mode`` and the controller's flags; installs the CRD for dsctl.io/v1."""
    if mode == "apps/v1":
        return DAEMONSETS, []

    async def served() -> bool:
        return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0

    await sim.kubectl("apply", "-f", str(CRD_FILE))
    await eventually(served, message="CRD served")
    return crd_daemonsets(), ["--resource", "dsctl.io/v1"]


def _with_image(ds: dict[str, Any], image: str) -> dict[str, Any]:
    changed = copy.deepcopy(ds)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return changed


async def _ready_everywhere(kube: KubeClient, name: str, count: int, image: str) -> bool:
    pods = await daemon_pods(kube, name)
    return len(pods) == count and all(is_ready(p) and p["spec"]["containers"][0]["image"] == image for p in pods)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sim", [{"nodes": 1000}], indirect=True)
async def test_first_wave_is_what_the_controller_replaces_first(sim: SimProcess, kube: KubeClient, tmp_path: Path,
                                                                mode: str) -> None:
    """An image change at maxUnavailable 10% over 1,000 nodes: the predicted first wave is exactly the pods the
    controller deletes before any replacement exists; the plan itself sends no write."""
    resource, flags = await _crd_mode(sim, mode)
    ds = daemonset("agent", image=V1, strategy=rolling(max_unavailable="10%"), api_version=mode)
    async with ControllerProcess(sim.kubeconfig, args=flags):
        await kube.create(resource, ds, namespace="default")
        await eventually(lambda: _ready_everywhere(kube, "agent", 1000, V1), timeout=120, interval=1.0,
                         message="1,000 pods Ready")
        unchanged, _, err = await _plan(sim.kubeconfig, ds, tmp_path)
        assert (unchanged, err) == (0, "")

        before = await _last_seq(sim)
        code, doc, err = await _plan(sim.kubeconfig, _with_image(ds, V2), tmp_path)
        by_plan = [r for r in await _log(sim, before) if r["user_agent"].startswith(PLAN_AGENT)]
        assert (code, err) == (2, "")
        assert by_plan and {r["method"] for r in by_plan} == {"GET"}, "the plan only reads"
        assert doc is not None
        first = doc["daemonsets"][0]["update"]["waves"][0]["nodes"]
        assert len(first) == 100

        node_of = {p["metadata"]["name"]: target_of(p) for p in await daemon_pods(kube, "agent")}
        # No replacement can be created: the controller's first pass is all it can do.
        await sim.set_faults(errors=[{"verb": "create", "resource": "pods", "code": 500, "rate": 1.0}])
        applied = await _last_seq(sim)
        await sim.kubectl("apply", "-f", str(tmp_path / "agent.yaml"))

        async def refused_create() -> bool:
            return any(r["verb"] == "create" and r["resource"] == "pods" and r["code"] == 500
                       for r in await _log(sim, applied))

        await eventually(refused_create, timeout=60, message="the controller tried to create replacements")
        deleted = {node_of[r["name"]] for r in await _log(sim, applied)
                   if r["verb"] == "delete" and r["resource"] == "pods"}
        assert deleted == set(first)


async def _label_and_taint(kube: KubeClient) -> None:
    """Three groups of nodes, one per scenario: sel (node-0..3), tol (node-4..6), taint (node-7..9)."""
    for i in range(10):
        group = "sel" if i < 4 else "tol" if i < 7 else "taint"
        labels = {"group": group, "zone": "a" if i % 2 == 0 else "b"}
        body: dict[str, Any] = {"metadata": {"labels": labels}}
        if i in (4, 5):
            body["spec"] = {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}
        await kube.patch(NODES, f"node-{i}", body)


def _scenarios(mode: str) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per DaemonSet: (live manifest, changed manifest)."""
    gpu = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    sel = daemonset("sel", node_selector={"group": "sel", "zone": "a"}, api_version=mode)
    tol = daemonset("tol", node_selector={"group": "tol"}, api_version=mode)
    taint = daemonset("taint", node_selector={"group": "taint"}, api_version=mode)
    return {
        "sel": (sel, daemonset("sel", node_selector={"group": "sel", "zone": "b"}, api_version=mode)),
        "tol": (tol, daemonset("tol", node_selector={"group": "tol"}, tolerations=gpu, api_version=mode)),
        "taint": (taint, _with_image(taint, V2)),
    }


async def _holders(kube: KubeClient, name: str) -> set[str]:
    return {target_of(p) for p in await daemon_pods(kube, name)}


async def _placed_as(kube: KubeClient, expected: dict[str, set[str]]) -> bool:
    """Every DaemonSet's pods on exactly its expected nodes."""
    for name, nodes in expected.items():
        if await _holders(kube, name) != nodes:
            return False
    return True


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sim", [{"nodes": 10}], indirect=True)
async def test_placement_diff_is_the_placement_after_applying(sim: SimProcess, kube: KubeClient, tmp_path: Path,
                                                              mode: str) -> None:
    """A nodeSelector change, a toleration added for tainted nodes, and an update over a node tainted since:
    the nodes the plan says keep or gain a pod are exactly those holding one once the change is applied."""
    resource, flags = await _crd_mode(sim, mode)
    await _label_and_taint(kube)
    scenarios = _scenarios(mode)
    async with ControllerProcess(sim.kubeconfig, args=flags):
        for live, _ in scenarios.values():
            await kube.create(resource, live, namespace="default")
        expected_now = {"sel": {"node-0", "node-2"}, "tol": {"node-6"}, "taint": {"node-7", "node-8", "node-9"}}

        async def placed() -> bool:
            return await _placed_as(kube, expected_now)

        await eventually(placed, timeout=60, message="first placement")
        await kube.patch(NODES, "node-7", {"spec": {"taints": [{"key": "dedicated", "effect": "NoSchedule"}]}})
        predicted: dict[str, set[str]] = {}
        for name, (_, changed) in scenarios.items():
            code, doc, err = await _plan(sim.kubeconfig, changed, tmp_path)
            assert (code, err) == (2, ""), name
            assert doc is not None
            placement = doc["daemonsets"][0]["placement"]
            predicted[name] = {n for change in ("gain", "keep") for g in placement[change]["groups"]
                               for n in g["nodes"]}
            lost = {n for g in placement["lose"]["groups"] for n in g["nodes"]}
            assert predicted[name] | lost >= expected_now[name]
        assert predicted == {"sel": {"node-1", "node-3"}, "tol": {"node-4", "node-5", "node-6"},
                             "taint": {"node-8", "node-9"}}
        for name in scenarios:
            await sim.kubectl("apply", "-f", str(tmp_path / f"{name}.yaml"))

        async def settled() -> bool:
            return await _placed_as(kube, predicted)

        await eventually(settled, timeout=60, message="placement after applying equals the plan's")


READINESS_TAINT = {"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}
EVERYTHING = [{"operator": "Exists"}]


async def _joining_and_departing(kube: KubeClient) -> None:
    """node-1 joins under the readiness taint; node-2 and node-3 are being removed by cluster-autoscaler
    and Karpenter (their taints as those tools write them)."""
    taints = {"node-1": READINESS_TAINT, "node-2": {"key": "ToBeDeletedByClusterAutoscaler",
                                                     "value": "1700000000", "effect": "NoSchedule"},
              "node-3": {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}}
    for node, taint in taints.items():
        await kube.patch(NODES, node, {"spec": {"taints": [taint]}})


def _groups(doc: dict[str, Any], change: str) -> dict[str, list[str]]:
    return {g["reason"]: g["nodes"] for g in doc["daemonsets"][0]["placement"][change]["groups"]}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sim", [{"nodes": 5}], indirect=True)
async def test_readiness_taint_and_departing_nodes_are_predicted_as_the_controller_places(
        sim: SimProcess, kube: KubeClient, tmp_path: Path, mode: str) -> None:
    """A gating agent that tolerates every taint and a plain one: the plan predicts a pod on the node
    under the readiness taint (every daemon pod tolerates it) and none on departing nodes (withheld for
    the tolerant agent, kept off by the taint for the plain one); the controller then places exactly so."""
    _, flags = await _crd_mode(sim, mode)
    await _joining_and_departing(kube)
    gate = daemonset("gate", tolerations=EVERYTHING, api_version=mode)
    gate["metadata"]["annotations"] = {"dsctl.io/node-readiness-gate": "true"}
    plain = daemonset("plain", api_version=mode)
    for manifest in (gate, plain):
        code, doc, err = await _plan(sim.kubeconfig, manifest, tmp_path)
        assert (code, err) == (2, "")
        assert doc is not None
        assert _groups(doc, "gain") == {"new": ["node-0", "node-1", "node-4"]}
        withheld = _groups(doc, "withheld")
        if manifest is gate:
            assert withheld == {"departing ClusterAutoscalerScaleDown": ["node-2"],
                                "departing KarpenterDisruption": ["node-3"]}
            assert [r["id"] for r in doc["daemonsets"][0]["risks"]] == ["tolerates-everything", "readiness-gate"]
        else:
            assert withheld == {}
    async with ControllerProcess(sim.kubeconfig, args=flags):
        for name in ("gate", "plain"):
            await sim.kubectl("apply", "-f", str(tmp_path / f"{name}.yaml"))

        async def placed() -> bool:
            expected = {"node-0", "node-1", "node-4"}
            return await _placed_as(kube, {"gate": expected, "plain": expected})

        await eventually(placed, timeout=60, message="pods on the joining node, none on departing ones")

        async def untainted() -> bool:
            node = await kube.get(NODES, "node-1")
            return not node["spec"].get("taints")

        await eventually(untainted, timeout=30, message="the gate lifts the readiness taint once the agent is Ready")


async def _unreachable_kubeconfig(directory: Path) -> str:
    """A kubeconfig naming a loopback port nothing listens on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))
    return str(path)


@pytest.mark.parametrize(
    ("doc", "argv", "message"),
    [
        pytest.param({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, [],
                     "Pod (v1) is not a DaemonSet", id="not-a-daemonset"),
        pytest.param({**daemonset("agent"), "spec": {**daemonset("agent")["spec"], "minReadySecond": 3}}, [],
                     'unknown field "spec.minReadySecond"', id="unknown-field"),
        pytest.param(daemonset("agent"), ["--pod-startup", "soon"], "--pod-startup: not a number", id="bad-flag"),
        pytest.param(daemonset("agent"), ["--readiness-taint", "dsctl.io/agents-not-ready=1"],
                     "--readiness-taint: give the key and effect only", id="bad-readiness-taint"),
    ],
)
async def test_bad_input_is_one_line_and_exit_1(tmp_path: Path, doc: dict[str, Any], argv: list[str],
                                                message: str) -> None:
    """A file that is not a DaemonSet, an unknown field, a bad flag: one line on stderr, exit 1, no cluster asked."""
    kubeconfig = await _unreachable_kubeconfig(tmp_path)
    path = tmp_path / "ds.yaml"
    path.write_text(yaml.safe_dump(doc))
    done = await _run(kubeconfig, sys.executable, "-m", "dsctl", "plan", "-f", str(path), *argv)
    assert done.returncode == 1
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stdout == ""


async def test_an_unreachable_cluster_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """No API server at the kubeconfig's address: one line naming the failure, exit 1."""
    kubeconfig = await _unreachable_kubeconfig(tmp_path)
    path = tmp_path / "ds.yaml"
    path.write_text(yaml.safe_dump(daemonset("agent")))
    done = await _run(kubeconfig, sys.executable, "-m", "dsctl", "plan", "-f", str(path))
    assert done.returncode == 1
    assert done.stderr.startswith("dsctl plan: ") and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_kubectl_plugin_table_and_exit_codes(sim: SimProcess, tmp_path: Path) -> None:
    """`kubectl dsctl plan` prints the table and exits 2 for a new DaemonSet; an error in the file exits 1."""
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(daemonset("agent")))
    kubectl = str(Path(sys.executable).parent / "kubectl")
    done = await _run(sim.kubeconfig, kubectl, "dsctl", "plan", "-f", str(path))
    assert done.returncode == 2, done.stderr
    assert "3 gain a pod" in done.stdout and "new DaemonSet" in done.stdout
    as_yaml = await _run(sim.kubeconfig, kubectl, "dsctl", "plan", "-f", str(path), "-o", "yaml")
    assert yaml.safe_load(as_yaml.stdout)["daemonsets"][0]["action"] == "create"
    path.write_text("kind: [")
    broken = await _run(sim.kubeconfig, kubectl, "dsctl", "plan", "-f", str(path))
    assert broken.returncode == 1
