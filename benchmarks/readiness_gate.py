"""The node readiness gate at scale: node created -> readiness taint removed, with 20 DaemonSets, 3 gating.

``dsctl sim serve --nodes N`` and the controller (``python -m dsctl run``, QPS 1000 as in
``controller_node_join.py``) in separate processes. ``--daemonsets`` DaemonSets (default 20)
converge on the N nodes; the first ``--gating`` of them (default 3) gate, with simulated pod
start-ups of 1, 2 and 3 s (``sim.dsctl.io/startup-seconds``). Then ``--joins`` nodes (default 100)
are created ``--join-interval`` seconds apart, each carrying ``dsctl.io/agents-not-ready``, each
followed by a plain pod pinned to it (nodeSelector on its hostname, no toleration). A
``GateWatch`` (``tests/support/gatewatch.py``) follows nodes and the gating and pinned pods; per node
it reports:

- **created -> removed**: from just before the node's POST to the removal's watch event;
- **last gating Ready -> removed**: from the watch event of the last gating pod turning Ready to
  the removal's; both arrive over the same kind of watch, so the watch's delay cancels out;
- the invariant checks: removals while a gating pod was not Ready (judged at the removal's
  resourceVersion), and pinned pods bound before their node's removal. Both must be 0.

The same run is then made **without gates** (no annotation, no taint, on a fresh simulator), and
the controller's CPU per join is compared: node created -> every daemon pod Ready is reported
there as the reference. ``/proc/loadavg`` and the CPU steal before and after each phase are
recorded, since other work shares the machine.

Usage: ``.venv/bin/python -m benchmarks readiness-gate [--nodes 500] [--joins 100]``; ``--nodes 5000`` takes
about ten minutes. Prints the JSON summary; writes ``benchmarks/results/readiness_gate[-TAG].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Mapping
from typing import Any

import orjson

from benchmarks.harness.cluster import SimProcess, controller, converge, daemonset
from benchmarks.harness.podwatch import PodWatch
from benchmarks.harness.procs import proc_usage
from benchmarks.harness.profiling import cprofile_window
from benchmarks.harness.results import RESULTS, environment, log, write_result
from benchmarks.harness.stats import percentile
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, PODS
from dsctl_api.pods import controller_ref
from dsctl_sim.nodes import make_node
from tests.support.gatewatch import GateWatch

NAME = "readiness_gate"
KEY = "dsctl.io/agents-not-ready"
TAINT = {"key": KEY, "effect": "NoSchedule"}
PINNED = "pinned"


def summary(values: list[float]) -> dict[str, float]:
    """p50/p90/p99/max/mean in milliseconds."""
    ms = [1000 * v for v in values] or [0.0]
    return {"p50_ms": round(percentile(ms, 50), 1), "p90_ms": round(percentile(ms, 90), 1),
            "p99_ms": round(percentile(ms, 99), 1), "max_ms": round(max(ms), 1),
            "mean_ms": round(sum(ms) / len(ms), 1), "count": len(values)}


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    with open("/proc/loadavg", encoding="ascii") as fh:
        return [float(x) for x in fh.read().split()[:3]]


def steal_share(before: list[int], after: list[int]) -> float:
    """The share of CPU time stolen by the hypervisor between two ``/proc/stat`` samples."""
    total = sum(after) - sum(before)
    return round((after[7] - before[7]) / total, 4) if total else 0.0


def cpu_times() -> list[int]:
    with open("/proc/stat", encoding="ascii") as fh:
        return [int(x) for x in fh.readline().split()[1:9]]


def agents(count: int, gating: int, *, gated: bool) -> list[dict[str, Any]]:
    """``count`` DaemonSets; the first ``gating`` start up in 1, 2, 3... s and, when ``gated``, gate."""
    bodies = []
    for i in range(count):
        body = daemonset(f"ds-{i:02d}", startup_seconds=float(i + 1) if i < gating else None)
        if i < gating and gated:
            body["metadata"]["annotations"] = {"dsctl.io/node-readiness-gate": "true"}
        bodies.append(body)
    return bodies


def pinned_pod(node_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{PINNED}-{node_name}", "namespace": "default", "labels": {"app": PINNED}},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node_name},
                     "containers": [{"name": "app", "image": "registry.example/app:1"}]}}


def all_ready(watch: PodWatch, names: list[str], count: int) -> dict[str, float]:
    """Per joined node whose ``count`` daemon pods were all seen Ready, when the last of them was."""
    done: dict[str, float] = {}
    for node in names:
        times = [watch.pods[k].ready for k in watch.by_node.get(node, ())]
        if len(times) >= count and all(times):
            done[node] = max(times)
    return done


async def run_once(args: argparse.Namespace, *, gated: bool) -> dict[str, Any]:
    """One simulator, one controller, one set of joins; with or without gates."""
    sim_args = ["--log-level", "warning", "--pod-startup-seconds", str(args.pod_startup_seconds),
                "--bookmark-seconds", "0.5"]
    result: dict[str, Any] = {"gated": gated}
    gating_names = {f"default/ds-{i:02d}" for i in range(args.gating)}

    def owner(pod: Mapping[str, Any]) -> str | None:
        ref = controller_ref(pod)
        key = f"default/{ref['name']}" if ref is not None else ""
        return key if key in gating_names else None

    stats = RESULTS / f"{NAME}-{'gated' if gated else 'plain'}.pstats" if args.cprofile else None
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=600) as sim, \
            controller(sim.kubeconfig, *args.controller_arg, cprofile_to=stats) as ctl:
        assert ctl.proc is not None
        pid = ctl.proc.pid
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=1000,
                                              user_agent="dsctl-bench/driver")
        pods = PodWatch(sim.url, label_selector="bench=dsctl")
        await pods.start()
        try:
            for body in agents(args.daemonsets, args.gating, gated=gated):
                await client.create(DAEMONSETS, body, namespace="default")
            result["converge_seconds"] = round(
                await converge(client, count=args.daemonsets, nodes=args.nodes, timeout=args.timeout), 1)
            log("converged", gated=gated, seconds=result["converge_seconds"])
            selector = f"app in ({','.join(sorted(n.split('/')[1] for n in gating_names))},{PINNED})"
            async with GateWatch(client, KEY, owner, namespace="default", pod_selector=selector) as watch:
                await asyncio.sleep(2.0)  # let the convergence's status writes drain before measuring
                joined = [f"join-{j}" for j in range(args.joins)]
                created: dict[str, float] = {}
                cpu_before, stat_before, load_before = proc_usage(pid), cpu_times(), loadavg()
                session = sim.session()
                profiled = cprofile_window(pid if stats else None, stats)
                profile = await profiled.__aenter__()
                for j, name in enumerate(joined):
                    body = make_node(name, index=args.nodes + j, now=time.time())
                    if gated:
                        body["spec"]["taints"] = [TAINT]
                    created[name] = time.monotonic()
                    async with session.post(sim.url + "/api/v1/nodes", data=orjson.dumps(body),
                                            headers={"Content-Type": "application/json"}) as resp:
                        await resp.read()
                        if resp.status != 201:
                            raise RuntimeError(f"node create failed: {resp.status}")
                    if args.pinned:
                        await client.create(PODS, pinned_pod(name), namespace="default")
                    await asyncio.sleep(args.join_interval)
                deadline = time.monotonic() + args.timeout

                def finished() -> bool:
                    if gated and (not all(watch.removal_of(n) for n in joined) or watch.pending):
                        return False
                    return len(all_ready(pods, joined, args.daemonsets)) == len(joined)
                while not finished():
                    if time.monotonic() > deadline:
                        left = [n for n in joined if not watch.removal_of(n)]
                        raise TimeoutError(f"joins unfinished; {len(left)} nodes still tainted: {left[:5]}")
                    await asyncio.sleep(0.1)
                ready_at = all_ready(pods, joined, args.daemonsets)
                cpu_after, stat_after, load_after = proc_usage(pid), cpu_times(), loadavg()
                await profiled.__aexit__(None, None, None)
                if profile:
                    result["profile"] = profile
                span = max(time.monotonic() - min(created.values()), 1e-9)
                while args.pinned and any(f"default/{PINNED}-{n}" not in watch.bound_rv for n in joined):
                    if time.monotonic() > deadline:
                        raise TimeoutError("pinned pods not bound")
                    await asyncio.sleep(0.1)
                result["join_phase_seconds"] = round(span, 1)
                result["controller_cpu_ms_per_join"] = round(
                    1000 * (cpu_after["cpu_seconds"] - cpu_before["cpu_seconds"]) / args.joins, 1)
                result["controller_rss_mib"] = cpu_after["rss_mib"]
                result["host"] = {"loadavg_before": load_before, "loadavg_after": load_after,
                                  "steal_share": steal_share(stat_before, stat_after)}
                if gated:
                    removed = {n: watch.removal_of(n) for n in joined}
                    owners = set(gating_names)
                    to_removed = [r.at - created[n] for n, r in removed.items() if r is not None]
                    after_ready = []
                    for n, r in removed.items():
                        last = watch.last_ready(n, owners)
                        if r is not None and last is not None:
                            after_ready.append(r.at - last)
                    early = [n for n, r in removed.items() if r is not None and args.pinned
                             and watch.bound_rv[f"default/{PINNED}-{n}"] < r.rv]
                    result["node_created_to_taint_removed"] = summary(to_removed)
                    result["last_gating_ready_to_taint_removed"] = summary(after_ready)
                    result["removals_judged"] = watch.judged
                    result["removed_while_a_gating_pod_not_ready"] = len(watch.violations)
                    result["violations"] = watch.violations[:10]
                    result["pinned_pods_bound_before_removal"] = len(early)
                    result["watch_gaps"] = watch.gaps
                    _, page = await ctl.get("/metrics")
                    result["gate_metric"] = _histogram(page, "dsctl_node_readiness_gate_duration_seconds")
                result["node_created_to_all_daemon_pods_ready"] = summary([ready_at[n] - created[n] for n in joined])
        finally:
            await client.close()
            await pods.stop()
    return result


def _histogram(page: str, name: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in page.splitlines():
        for suffix in ("_sum", "_count"):
            if line.startswith(name + suffix + " "):
                values[suffix[1:]] = float(line.split()[1])
    if values.get("count"):
        values["mean_seconds"] = round(values["sum"] / values["count"], 3)
    return values


async def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"benchmark": NAME, "environment": environment(), "nodes": args.nodes,
                              "daemonsets": args.daemonsets, "gating": args.gating, "joins": args.joins,
                              "join_interval_seconds": args.join_interval, "controller_args": args.controller_arg,
                              "pod_startup_seconds": args.pod_startup_seconds, "pinned_pods": args.pinned}
    result["with_gates"] = await run_once(args, gated=True)
    log("gated run done", **{k: v for k, v in result["with_gates"].items() if k.startswith("node_created")})
    if not args.skip_baseline:
        result["without_gates"] = await run_once(args, gated=False)
        gated_cpu = result["with_gates"]["controller_cpu_ms_per_join"]
        plain_cpu = result["without_gates"]["controller_cpu_ms_per_join"]
        result["cpu_per_join_ratio"] = round(gated_cpu / plain_cpu, 3) if plain_cpu else None
    return result


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run, and write the result."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks readiness-gate", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--daemonsets", type=int, default=20)
    parser.add_argument("--gating", type=int, default=3)
    parser.add_argument("--joins", type=int, default=100)
    parser.add_argument("--join-interval", type=float, default=0.2, help="seconds between two node creations")
    parser.add_argument("--pod-startup-seconds", type=float, default=1.0)
    parser.add_argument("--controller-arg", action="append",
                        default=["--kube-api-qps=1000", "--kube-api-burst=2000"],
                        help="extra 'dsctl run' argument (repeatable)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--skip-baseline", action="store_true", help="only the run with gates")
    parser.add_argument("--pinned", action=argparse.BooleanOptionalAction, default=True,
                        help="a plain pod pinned to each joining node (held Pending by the taint, so the "
                             "scheduler retries it, and the controller sees its status writes)")
    parser.add_argument("--cprofile", action="store_true", help="cProfile the controller during the joins")
    parser.add_argument("--tag", default="", help="store the result as <name>-<tag>.json instead")
    args = parser.parse_args(argv)
    write_result(f"{NAME}-{args.tag}" if args.tag else NAME, asyncio.run(run(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
