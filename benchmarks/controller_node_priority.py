"""Priority on new nodes: where the system-node-critical DaemonSet's pod comes among 30 on each
joining node, and how long it takes, with priority ordering and with FIFO (``--no-node-join-priority``).

For each mode, a fresh ``dsctl sim serve --nodes N`` and controller. ``--daemonsets`` DaemonSets
(default 30), each in its own namespace ``ds-NN``, converge first; the last one created,
``ds-<last>``, has ``priorityClassName: system-node-critical`` (FIFO would therefore put it last).
Then ``--joins`` nodes (default 100) are created one at a time; after all of a node's pods
exist (seen by a pod watch) the simulator's request log between that node's POST and the next
gives the order of the pod creates (a pod POST names its namespace, hence its DaemonSet): the
critical pod's **position** (1 = first). Latency runs from just before the node's POST to the
watch seeing the critical pod, and to the watch seeing all pods of the node.

Usage: ``python -m benchmarks node-priority [--nodes 20] [--daemonsets 30] [--joins 100]``.
Prints the JSON summary; writes ``benchmarks/results/controller_node_priority.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import orjson

from benchmarks.harness.cluster import SimProcess, controller, daemonset
from benchmarks.harness.metrics import request_log
from benchmarks.harness.podwatch import PodWatch
from benchmarks.harness.results import environment, log, write_result
from benchmarks.harness.stats import percentile
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NAMESPACES
from dsctl_sim.nodes import make_node

NAME = "controller_node_priority"


def summary_ms(values: list[float]) -> dict[str, float]:
    """p50/p90/p99/max in milliseconds."""
    ms = [1000 * v for v in values]
    return {"p50_ms": round(percentile(ms, 50), 1), "p90_ms": round(percentile(ms, 90), 1),
            "p99_ms": round(percentile(ms, 99), 1), "max_ms": round(max(ms), 1)}


async def converge(client: KubeClient, namespaces: list[str], *, nodes: int, timeout: float) -> float:
    """Seconds until every DaemonSet reports ``nodes`` pods Ready."""
    start = time.monotonic()
    while True:
        ready = 0
        for ns in namespaces:
            ds = await client.get(DAEMONSETS, "agent", namespace=ns)
            ready += int((ds.get("status") or {}).get("numberReady") or 0) == nodes
        if ready == len(namespaces):
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{ready}/{len(namespaces)} DaemonSets converged in {timeout}s")
        await asyncio.sleep(1.0)


async def run_mode(args: argparse.Namespace, *, priority: bool) -> dict[str, Any]:
    """One sim + controller, converge, then the joins; the critical pod's position and latencies."""
    namespaces = [f"ds-{i:02d}" for i in range(args.daemonsets)]
    critical = namespaces[-1]
    sim_args = ["--log-level", "warning", "--pod-startup-seconds", str(args.pod_startup_seconds)]
    extra = [] if priority else ["--no-node-join-priority"]
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=300) as sim, \
            controller(sim.kubeconfig, *extra, *args.controller_arg):
        watch = PodWatch(sim.url, label_selector="bench=dsctl")
        await watch.start()
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=1000,
                                              user_agent="dsctl-bench/driver")
        positions: list[int] = []
        critical_latency: list[float] = []
        all_latency: list[float] = []
        try:
            for ns in namespaces:
                await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                body = daemonset("agent", namespace=ns)
                if ns == critical:
                    body["spec"]["template"]["spec"]["priorityClassName"] = "system-node-critical"
                await client.create(DAEMONSETS, body, namespace=ns)
            converged = await converge(client, namespaces, nodes=args.nodes, timeout=args.timeout)
            log("converged", priority=priority, seconds=round(converged, 1))
            await asyncio.sleep(args.join_interval)
            _, cursor, _ = await request_log(sim, since=0)
            session = sim.session()
            for j in range(args.joins):
                name = f"join-{j}"
                payload = orjson.dumps(make_node(name, index=args.nodes + j, now=time.time()))
                start = time.monotonic()
                async with session.post(sim.url + "/api/v1/nodes", data=payload,
                                        headers={"Content-Type": "application/json"}) as resp:
                    await resp.read()
                    if resp.status != 201:
                        raise RuntimeError(f"node create failed: {resp.status}")
                deadline = start + args.timeout
                while len(watch.by_node.get(name, ())) < args.daemonsets:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{name}: {len(watch.by_node.get(name, ()))} pods")
                    await asyncio.sleep(0.002)
                keys = watch.by_node[name]
                seen = {k.partition("/")[0]: watch.pods[k].seen for k in keys}
                critical_latency.append(seen[critical] - start)
                all_latency.append(max(seen.values()) - start)
                records, cursor, dropped = await request_log(sim, since=cursor)
                if dropped:
                    raise RuntimeError(f"request log wrapped: {dropped} records lost")
                order = [r["namespace"] for r in records if r["verb"] == "create" and r["resource"] == "pods"
                         and not r["subresource"] and r["code"] == 201]
                positions.append(order.index(critical) + 1)
                if j % 20 == 19:
                    log("joins", priority=priority, done=j + 1, last_position=positions[-1])
                await asyncio.sleep(args.join_interval)
        finally:
            await client.close()
            await watch.stop()
    return {"converge_seconds": round(converged, 1),
            "critical_position": {"p50": percentile(positions, 50), "p99": percentile(positions, 99),
                                  "max": max(positions), "first_on_nodes": sum(p == 1 for p in positions)},
            "critical_pod_created": summary_ms(critical_latency), "all_pods_created": summary_ms(all_latency)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"benchmark": NAME, "environment": environment(), "nodes": args.nodes,
                              "daemonsets": args.daemonsets, "joins": args.joins,
                              "join_interval_seconds": args.join_interval,
                              "pod_startup_seconds": args.pod_startup_seconds, "controller_args": args.controller_arg}
    result["priority"] = await run_mode(args, priority=True)
    result["fifo"] = await run_mode(args, priority=False)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks node-priority", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--daemonsets", type=int, default=30)
    parser.add_argument("--joins", type=int, default=100)
    parser.add_argument("--join-interval", type=float, default=0.2,
                        help="seconds between one join completing and the next node")
    parser.add_argument("--pod-startup-seconds", type=float, default=1.0)
    parser.add_argument("--controller-arg", action="append", default=[],
                        help="extra 'dsctl run' argument (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    write_result(NAME, asyncio.run(run(args)))


if __name__ == "__main__":
    main()
