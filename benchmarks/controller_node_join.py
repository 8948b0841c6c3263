"""Node join latency with many DaemonSets: node created -> all of its daemon pods created.

``dsctl sim serve --nodes N`` (separate process) and the controller (``python -m dsctl run``,
defaults unless ``--controller-arg`` says otherwise). ``--daemonsets`` DaemonSets (default 20)
converge first on all N nodes; then ``--joins`` nodes (default 100) are created one at a time,
each as the sim would register it (``make_node``: Ready, standard labels). For each join the
latency runs from just before the node's POST to the moment this process's pod watch has seen
one pod of every DaemonSet targeting that node (by the pod's ``matchFields metadata.name``
affinity; monotonic times, not second-granular ``creationTimestamp``s). The next node is created
``--join-interval`` seconds after the previous join completed, so the previous pods' startup
(scheduling, Running, Ready, each waking the DaemonSets) overlaps with it as it would in a
cluster that is scaling up. Reports p50/p90/p99/max, the latency to the first of the pods, and the
controller's CPU per join.

Default N is 500: convergence of 20 DaemonSets on 5,000 nodes is 100,000 pods, beyond a
ten-minute budget on two cores; ``--nodes 5000`` works given the time.

Usage: ``python -m benchmarks node-join [--nodes 500] [--daemonsets 20] [--joins 100]``.
Prints the JSON summary; writes ``benchmarks/results/controller_node_join.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import orjson

from benchmarks.harness.cluster import SimProcess, controller, converge, daemonset
from benchmarks.harness.metrics import histogram
from benchmarks.harness.podwatch import PodWatch
from benchmarks.harness.procs import proc_usage
from benchmarks.harness.profiling import profile
from benchmarks.harness.results import environment, log, write_result
from benchmarks.harness.stats import percentile
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from dsctl_sim.nodes import make_node

NAME = "controller_node_join"


def summary(values: list[float]) -> dict[str, float]:
    """p50/p90/p99/max/mean in milliseconds."""
    ms = [1000 * v for v in values]
    return {"p50_ms": round(percentile(ms, 50), 1), "p90_ms": round(percentile(ms, 90), 1),
            "p99_ms": round(percentile(ms, 99), 1), "max_ms": round(max(ms), 1),
            "mean_ms": round(sum(ms) / len(ms), 1)}


async def time_joins(sim: SimProcess, watch: PodWatch, *, joins: int, daemonsets: int, first_index: int,
                     interval: float, timeout: float, prefix: str = "join") -> dict[str, Any]:
    """Create ``joins`` nodes one at a time; for each, the time from just before its POST until
    ``watch`` has seen one pod of each of the ``daemonsets`` DaemonSets targeting it."""
    latencies: list[float] = []
    first: list[float] = []
    post: list[float] = []
    session = sim.session()
    for j in range(joins):
        name = f"{prefix}-{j}"
        body = orjson.dumps(make_node(name, index=first_index + j, now=time.time()))
        start = time.monotonic()
        async with session.post(sim.url + "/api/v1/nodes", data=body,
                                headers={"Content-Type": "application/json"}) as resp:
            await resp.read()
            if resp.status != 201:
                raise RuntimeError(f"node create failed: {resp.status}")
        post.append(time.monotonic() - start)
        deadline = start + timeout
        while len(watch.by_node.get(name, ())) < daemonsets:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: {len(watch.by_node.get(name, ()))} pods")
            await asyncio.sleep(0.002)
        seen = [watch.pods[k].seen for k in watch.by_node[name]]
        latencies.append(max(seen) - start)
        first.append(min(seen) - start)
        if j % 10 == 9:
            log("joins", done=j + 1, last_ms=round(1000 * latencies[-1], 1))
        await asyncio.sleep(interval)
    # In join order too: a tail that is one slow join or a drift over the run tells different stories.
    return {"all_pods_created": summary(latencies), "first_pod_created": summary(first), "node_post": summary(post),
            "all_pods_created_ms": [round(1000 * seconds, 1) for seconds in latencies]}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sim_args = ["--log-level", "warning", "--pod-startup-seconds", str(args.pod_startup_seconds)]
    result: dict[str, Any] = {"benchmark": NAME, "environment": environment(), "nodes": args.nodes,
                              "daemonsets": args.daemonsets, "joins": args.joins,
                              "join_interval_seconds": args.join_interval, "controller_args": args.controller_arg,
                              "pod_startup_seconds": args.pod_startup_seconds}
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=300) as sim, \
            controller(sim.kubeconfig, *args.controller_arg) as ctl:
        assert ctl.proc is not None
        pid = ctl.proc.pid
        watch = PodWatch(sim.url, label_selector="bench=dsctl")
        await watch.start()
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=1000,
                                              user_agent="dsctl-bench/driver")
        try:
            for i in range(args.daemonsets):
                await client.create(DAEMONSETS, daemonset(f"ds-{i:02d}"), namespace="default")
            result["converge_seconds"] = round(
                await converge(client, count=args.daemonsets, nodes=args.nodes, timeout=args.timeout), 1)
            log("converged", seconds=result["converge_seconds"], pods=len(watch.pods))
            await asyncio.sleep(args.join_interval)
            cpu_before, sim_before = proc_usage(pid), proc_usage(sim.pid)
            syncs_before = histogram((await ctl.get("/metrics"))[1], "dsctl_sync_duration_seconds")
            async with profile(pid if args.profile else None, f"{NAME}-{args.tag}" if args.tag else NAME) as hot:
                joins = await time_joins(sim, watch, joins=args.joins, daemonsets=args.daemonsets,
                                         first_index=args.nodes, interval=args.join_interval, timeout=args.timeout)
            cpu_after, sim_after = proc_usage(pid), proc_usage(sim.pid)
            syncs_after = histogram((await ctl.get("/metrics"))[1], "dsctl_sync_duration_seconds")
        finally:
            await client.close()
            await watch.stop()
    result.update(joins)
    result["controller_cpu_ms_per_join"] = round(
        1000 * (cpu_after["cpu_seconds"] - cpu_before["cpu_seconds"]) / args.joins, 1)
    result["sim_cpu_ms_per_join"] = round(
        1000 * (sim_after["cpu_seconds"] - sim_before["cpu_seconds"]) / args.joins, 1)
    syncs = syncs_after["count"] - syncs_before["count"]
    result["syncs_per_join"] = round(syncs / args.joins, 1)
    result["sync_ms_mean"] = round(1000 * (syncs_after["sum"] - syncs_before["sum"]) / syncs, 2) if syncs else None
    result["controller_rss_mib"] = cpu_after["rss_mib"]
    result["controller_peak_rss_mib"] = cpu_after["peak_rss_mib"]
    if hot:
        result["profile"] = hot
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks node-join", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--daemonsets", type=int, default=20)
    parser.add_argument("--joins", type=int, default=100)
    parser.add_argument("--join-interval", type=float, default=1.0,
                        help="seconds between one join completing and the next node")
    parser.add_argument("--pod-startup-seconds", type=float, default=1.0)
    parser.add_argument("--controller-arg", action="append", default=[],
                        help="extra 'dsctl run' argument (repeatable, e.g. --controller-arg=--workers=16)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--profile", action="store_true", help="py-spy the controller during the joins")
    parser.add_argument("--tag", default="", help="store the result as <name>-<tag>.json instead")
    args = parser.parse_args(argv)
    write_result(f"{NAME}-{args.tag}" if args.tag else NAME, asyncio.run(run(args)))


if __name__ == "__main__":
    main()
