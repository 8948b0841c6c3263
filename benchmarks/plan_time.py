"""``dsctl plan`` at 5,000 nodes: how long a plan takes, in process and end to end.

Two parts:

- **in process**: ``dsctl.plan.make_plan`` over a snapshot built in memory (5,000 nodes, a
  DaemonSet rolled out on every one of them, as the API and the controller leave it), for
  an image change at ``maxUnavailable: 10%`` (10 waves), at ``maxUnavailable: 1`` (one node
  per wave; the first ``--max-waves`` waves are simulated), with ``maxSurge: 10%``, and a
  nodeSelector change that moves the DaemonSet to half the nodes. Wall and CPU seconds each,
  syncs simulated, and the process's peak RSS.
- **end to end**: the simulated cluster with 5,000 nodes, the real controller rolls the
  DaemonSet out, then ``python -m dsctl plan -f FILE -o json`` runs as a user would run it:
  wall time of the command, and the requests it sent (all reads, by the request log).

Run: ``.venv/bin/python -m benchmarks plan-time`` (``--nodes``, ``--no-sim``). Writes
``benchmarks/results/plan_time.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness.cluster import ControllerProcess, SimProcess
from benchmarks.harness.metrics import request_log
from benchmarks.harness.results import environment, log, write_result
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.history import plan_history
from dsctl.daemonset.template import GENERATION_ANNOTATION, new_pod
from dsctl.plan.manifest import parse_manifest
from dsctl.plan.report import Options, make_plan
from dsctl.plan.snapshot import ClusterSnapshot
from dsctl_api.defaults import apply_defaults
from dsctl_api.timefmt import format_rfc3339

V1, V2 = "registry.example/agent:1.0", "registry.example/agent:2.0"
NOW = time.time()


def manifest(*, image: str = V1, max_unavailable: int | str = "10%", max_surge: int | str = 0,
             node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """The benchmark's DaemonSet."""
    pod_spec: dict[str, Any] = {"containers": [{"name": "agent", "image": image}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec}}}


def snapshot(nodes: int) -> ClusterSnapshot:
    """``nodes`` nodes and the benchmark's DaemonSet rolled out on all of them, in memory."""
    all_nodes: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": f"node-{i:05d}", "resourceVersion": "1",
                               "labels": {"kubernetes.io/hostname": f"node-{i:05d}", "half": str(i % 2)}},
                  "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
                 for i in range(nodes)]
    live = copy.deepcopy(manifest())
    apply_defaults("apps/daemonsets", live)
    live["metadata"].update(uid="ds-uid", generation=1, resourceVersion="7", annotations={GENERATION_ANNOTATION: "1"})
    live["status"] = {}
    history = plan_history(ds=live, revisions=[], api_version="apps/v1", kind="DaemonSet")
    assert history.create is not None
    revision = {**history.create, "metadata": {**history.create["metadata"], "uid": "rev-uid"}}
    rules = Eligibility.of(live)
    created = format_rfc3339(NOW - 3600)
    ready = format_rfc3339(NOW - 3590)
    pods = []
    for i, node in enumerate(all_nodes):
        name = node["metadata"]["name"]
        if not rules.check(node).should_run:
            continue
        pod = new_pod(live, name, hash=history.hash)
        pod["metadata"].update(name=f"agent-{i:06d}", uid=f"pod-{i}", resourceVersion="9", creationTimestamp=created)
        pod["spec"]["nodeName"] = name
        pod["status"] = {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": ready}]}
        pods.append(pod)
    return ClusterSnapshot(nodes=all_nodes, pods=pods, revisions=[revision], live=live)


def in_process(nodes: int, *, max_waves: int) -> dict[str, Any]:
    """``make_plan`` per case over one snapshot (built once, copied per case by the world)."""
    cluster = snapshot(nodes)
    cases = {
        "image change, maxUnavailable 10%": manifest(image=V2),
        "image change, maxUnavailable 1": manifest(image=V2, max_unavailable=1),
        "image change, maxSurge 10%": manifest(image=V2, max_unavailable=0, max_surge="10%"),
        "nodeSelector to half the nodes": manifest(node_selector={"half": "0"}),
        "no change": manifest(),
    }
    results: dict[str, Any] = {}
    for label, doc in cases.items():
        parsed = parse_manifest(doc, source="bench.yaml", namespace=None)
        wall, cpu = time.perf_counter(), time.process_time()
        plan = make_plan(parsed, cluster, Options(now=NOW, max_waves=max_waves, pod_startup=10.0))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        entry = plan["daemonsets"][0]
        update = entry["update"]
        results[label] = {"wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
                          "waves": len(update["waves"]), "syncs": update["simulation"]["syncs"],
                          "truncated": update["simulation"]["truncated"],
                          "gain": entry["placement"]["gain"]["count"], "lose": entry["placement"]["lose"]["count"]}
        log(f"in process: {label}: {wall:.2f} s, {results[label]['syncs']} syncs")
    results["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return results


async def end_to_end(nodes: int) -> dict[str, Any]:
    """The CLI against the simulator, after the real controller rolled the DaemonSet out."""
    from dsctl.kube.client import KubeClient
    from dsctl.kube.resources import DAEMONSETS

    async with SimProcess(nodes=nodes, args=["--pod-startup-seconds", "0.5"], startup_timeout=300) as sim:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        async with client, ControllerProcess(sim.kubeconfig):
            await client.create(DAEMONSETS, manifest(), namespace="default")
            started = time.monotonic()
            while True:
                status = (await client.get(DAEMONSETS, "agent", namespace="default")).get("status") or {}
                if status.get("numberAvailable") == nodes:
                    break
                if time.monotonic() - started > 900:
                    raise RuntimeError(f"rollout did not finish: {status}")
                await asyncio.sleep(1.0)
            log(f"end to end: {nodes} pods available after {time.monotonic() - started:.0f} s")
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "agent.yaml"
                path.write_text(yaml.safe_dump(manifest(image=V2)))
                _, since, _ = await request_log(sim, since=0)
                wall = time.perf_counter()
                children = resource.getrusage(resource.RUSAGE_CHILDREN)
                done = await asyncio.to_thread(
                    subprocess.run, [sys.executable, "-m", "dsctl", "plan", "-f", str(path), "-o", "json",
                                     "--kubeconfig", sim.kubeconfig], capture_output=True, text=True, check=False)
                wall = time.perf_counter() - wall
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
                requests, _, _ = await request_log(sim, since=since)
                split = await _read_then_plan(sim.kubeconfig, path)
    mine = [r for r in requests if str(r.get("user_agent", "")).startswith("dsctl-plan/")]
    doc = json.loads(done.stdout) if done.stdout else {}
    update = doc.get("daemonsets", [{}])[0].get("update", {})
    log(f"end to end: dsctl plan took {wall:.2f} s, exit {done.returncode}")
    return {"wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3), "exit_code": done.returncode,
            "waves": len(update.get("waves", [])),
            "requests": len(mine), "writes": sum(1 for r in mine if r.get("method") != "GET"),
            "stderr": done.stderr.strip()[:300], **split}


async def _read_then_plan(kubeconfig: str, path: Path) -> dict[str, float]:
    """The same plan in this process, timed in its two halves: reading the cluster, planning."""
    from dsctl.kube.client import KubeClient
    from dsctl.plan.manifest import load_manifest
    from dsctl.plan.snapshot import read_cluster, read_only

    manifest_ = load_manifest(str(path), namespace=None)
    client = await KubeClient.from_config(kubeconfig=kubeconfig, qps=100, burst=200, user_agent="dsctl-plan-bench")
    client.write_fence = read_only
    wall = time.perf_counter()
    async with client:
        cluster = await read_cluster(client, manifest_)
    read = time.perf_counter() - wall
    wall = time.perf_counter()
    make_plan(manifest_, cluster, Options(now=time.time()))
    return {"read_seconds": round(read, 3), "plan_seconds": round(time.perf_counter() - wall, 3)}


def main(argv: list[str] | None = None) -> int:
    """Run both parts and write the result."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks plan-time",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--max-waves", type=int, default=100, help="dsctl plan's --max-waves")
    parser.add_argument("--no-sim", action="store_true", help="skip the end-to-end part")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"benchmark": "plan_time", "nodes": args.nodes, "environment": environment(),
                              "in_process": in_process(args.nodes, max_waves=args.max_waves)}
    if not args.no_sim:
        result["end_to_end"] = asyncio.run(end_to_end(args.nodes))
    write_result("plan_time", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
