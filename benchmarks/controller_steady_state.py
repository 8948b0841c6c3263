"""Steady state under node heartbeats: the controller's API writes (goal 0) and CPU.

``dsctl sim serve --nodes N`` (default 5,000; separate process) and the controller with its
defaults. ``--daemonsets`` DaemonSets (default 3) converge to N Ready pods each. Then:

1. ``idle``: ``--idle-seconds`` with no traffic, the controller's CPU baseline;
2. heartbeats start: this process updates the ``lastHeartbeatTime`` of every node's conditions
   through ``PUT /api/v1/nodes/<name>/status``, all N nodes every ``--heartbeat-seconds``
   (default 10), spread evenly over the period as kubelets are;
3. ``warmup``: one heartbeat period, not counted (first-heartbeat effects show here);
4. ``window``: ``--window-seconds`` (default 60) measured. The sim's request log gives every
   request whose user agent is the controller's; writes are all verbs but get/list/watch.
   ``/proc`` gives the controller's CPU, ``/metrics`` its sync count.

The heartbeat-handling cost is the window's controller CPU minus the idle baseline over the same
length, also per node update event. Goal: 0 writes and no syncs caused by heartbeats.

With ``--pod-updates-per-second R`` the window also carries R kubelet-style pod status updates
per second (a container's ``restartCount`` raised, nothing a planner reads), cycling through
the daemon pods: the cost of pod status churn, goal 0 syncs.

Usage: ``python -m benchmarks steady-state [--nodes 5000] [--daemonsets 3]
[--window-seconds 60] [--pod-updates-per-second 0] [--tag T]``. Prints the JSON summary; writes
``benchmarks/results/controller_steady_state.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from typing import Any

import aiohttp
import orjson

from benchmarks.harness.cluster import SimProcess, controller, daemonset
from benchmarks.harness.metrics import histogram, request_log
from benchmarks.harness.procs import proc_usage
from benchmarks.harness.profiling import profile
from benchmarks.harness.results import environment, log, write_result
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from dsctl_api.timefmt import format_rfc3339

NAME = "controller_steady_state"
READ_VERBS = frozenset({"get", "list", "watch"})


class _StatusWriter:
    """A background sender of ``PUT .../status`` requests, as kubelets send them.

    ``start`` runs ``_beat`` in a task until ``stop``, which re-raises a failure of the sender.
    ``sent`` counts requests, ``errors`` non-200 answers by status code.
    """

    agent = "dsctl-bench/kubelet"
    task_name = "status-writer"

    def __init__(self, url: str, *, concurrency: int = 8) -> None:
        self.url = url
        self.concurrency = concurrency
        self.sent = 0
        self.errors: dict[int, int] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Run in the background until ``stop``."""
        self._task = asyncio.create_task(self._run(), name=self.task_name)

    async def stop(self) -> None:
        """Stop sending; re-raises a failure of the sender."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        headers = {"Content-Type": "application/json", "User-Agent": self.agent}
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        async with aiohttp.ClientSession(connector=connector, headers=headers) as http:
            await self._beat(http)

    async def _put(self, http: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> None:
        async with http.put(self.url + path, data=orjson.dumps(body)) as resp:
            await resp.read()
            if resp.status != 200:
                self.errors[resp.status] = self.errors.get(resp.status, 0) + 1
        self.sent += 1

    async def _beat(self, http: aiohttp.ClientSession) -> None:
        raise NotImplementedError


class Heartbeats(_StatusWriter):
    """Sends node status heartbeats for all nodes, paced evenly over ``period`` seconds."""

    task_name = "heartbeats"

    def __init__(self, url: str, nodes: list[dict[str, Any]], *, period: float, concurrency: int = 8) -> None:
        super().__init__(url, concurrency=concurrency)
        self.nodes = nodes
        self.period = period
        self.late_seconds = 0.0

    async def _beat(self, http: aiohttp.ClientSession) -> None:
        slices = 100
        per_slice = -(-len(self.nodes) // slices)

        async def send(node: dict[str, Any], stamp: str) -> None:
            for cond in node["status"]["conditions"]:
                cond["lastHeartbeatTime"] = stamp
            await self._put(http, f"/api/v1/nodes/{node['metadata']['name']}/status", node)

        origin = time.monotonic()
        step = self.period / slices
        tick = 0
        while True:
            due = origin + tick * step
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                self.late_seconds = max(self.late_seconds, -delay)
            start = (tick % slices) * per_slice
            stamp = format_rfc3339(time.time())
            await asyncio.gather(*(send(n, stamp) for n in self.nodes[start:start + per_slice]))
            tick += 1


class PodChurn(_StatusWriter):
    """Kubelet-style pod status updates that change nothing a DaemonSet controller reads:
    ``PUT pods/<name>/status`` with the first container's ``restartCount`` raised, ``rate``
    per second, cycling through ``pods``."""

    agent = "dsctl-bench/pod-kubelet"
    task_name = "pod-churn"

    def __init__(self, url: str, pods: list[dict[str, Any]], *, rate: float, concurrency: int = 8) -> None:
        super().__init__(url, concurrency=concurrency)
        self.pods = pods
        self.rate = rate

    def start(self) -> None:
        """Run in the background until ``stop``; a rate of 0 sends nothing."""
        if self.rate > 0 and self.pods:
            super().start()

    async def _beat(self, http: aiohttp.ClientSession) -> None:
        batch = max(1, round(self.rate / 10))

        async def send(pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            for status in pod["status"].get("containerStatuses") or []:
                status["restartCount"] = int(status.get("restartCount") or 0) + 1
            await self._put(http, f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status", pod)

        origin, tick = time.monotonic(), 0
        while True:
            delay = origin + tick * batch / self.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            start = (tick * batch) % len(self.pods)
            await asyncio.gather(*(send(p) for p in self.pods[start:start + batch]))
            tick += 1


async def _daemon_pods(sim: SimProcess) -> list[dict[str, Any]]:
    """Every pod in ``default``, ready to be PUT back (no resourceVersion precondition)."""
    async with sim.session().get(sim.url + "/api/v1/namespaces/default/pods") as resp:
        pods: list[dict[str, Any]] = orjson.loads(await resp.read())["items"]
    for pod in pods:
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        pod["metadata"].pop("resourceVersion", None)
    return pods


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sim_args = ["--log-level", "warning", "--pod-startup-seconds", "1"]
    result: dict[str, Any] = {"benchmark": NAME, "environment": environment(), "nodes": args.nodes,
                              "daemonsets": args.daemonsets, "heartbeat_seconds": args.heartbeat_seconds,
                              "window_seconds": args.window_seconds}
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=300) as sim, \
            controller(sim.kubeconfig) as ctl:
        assert ctl.proc is not None
        pid = ctl.proc.pid
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=1000,
                                              user_agent="dsctl-bench/driver")
        try:
            start = time.monotonic()
            for i in range(args.daemonsets):
                await client.create(DAEMONSETS, daemonset(f"ds-{i}"), namespace="default")
            while True:
                items = (await client.list(DAEMONSETS, namespace="default"))["items"]
                done = sum(1 for ds in items if int((ds.get("status") or {}).get("numberReady") or 0) == args.nodes)
                if done == args.daemonsets:
                    break
                if time.monotonic() - start > args.timeout:
                    raise TimeoutError(f"{done}/{args.daemonsets} DaemonSets converged")
                await asyncio.sleep(1.0)
            result["converge_seconds"] = round(time.monotonic() - start, 1)
            log("converged", seconds=result["converge_seconds"])
            async with sim.session().get(sim.url + "/api/v1/nodes") as resp:
                nodes = orjson.loads(await resp.read())["items"]
            for node in nodes:
                node.setdefault("apiVersion", "v1")
                node.setdefault("kind", "Node")
                node["metadata"].pop("resourceVersion", None)

            async def metrics() -> dict[str, float]:
                _, text = await ctl.get("/metrics")
                return histogram(text, "dsctl_sync_duration_seconds")

            await asyncio.sleep(5.0)  # late status writes and requeues after convergence
            cpu0 = proc_usage(pid)
            await asyncio.sleep(args.idle_seconds)
            cpu1 = proc_usage(pid)
            idle_rate = (cpu1["cpu_seconds"] - cpu0["cpu_seconds"]) / args.idle_seconds
            heartbeats = Heartbeats(sim.url, nodes, period=args.heartbeat_seconds)
            churn = PodChurn(sim.url, await _daemon_pods(sim), rate=args.pod_updates_per_second)
            cursor = (await request_log(sim, since=0))[1]
            heartbeats.start()
            churn.start()
            await asyncio.sleep(args.heartbeat_seconds)
            warm_records, cursor, _ = await request_log(sim, since=cursor)
            syncs_before, cpu_before, sent_before = await metrics(), proc_usage(pid), heartbeats.sent
            window_start = time.monotonic()
            async with profile(pid if args.profile else None, NAME) as hot:
                await asyncio.sleep(args.window_seconds)
            cpu_after, sent_after = proc_usage(pid), heartbeats.sent
            window = time.monotonic() - window_start
            syncs_after = await metrics()
            await heartbeats.stop()
            await churn.stop()
            records, _, dropped = await request_log(sim, since=cursor)
        finally:
            await client.close()

    def controller_writes(recs: list[dict[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in recs:
            if str(r["user_agent"]).startswith("dsctl/") and r["verb"] not in READ_VERBS:
                key = f"{r['verb']} {r['resource']}{'/' + r['subresource'] if r['subresource'] else ''}"
                out[key] = out.get(key, 0) + 1
        return out

    node_updates = sum(1 for r in records if r["user_agent"] == "dsctl-bench/kubelet" and r["code"] == 200)
    pod_updates = sum(1 for r in records if r["user_agent"] == "dsctl-bench/pod-kubelet" and r["code"] == 200)
    cpu = cpu_after["cpu_seconds"] - cpu_before["cpu_seconds"]
    heartbeat_cpu = cpu - idle_rate * window
    writes = controller_writes(records)
    result.update({
        "window_measured_seconds": round(window, 1),
        "node_status_updates_in_window": node_updates,
        "node_updates_per_second": round(node_updates / window, 1),
        "heartbeat_errors": heartbeats.errors, "heartbeat_max_late_seconds": round(heartbeats.late_seconds, 2),
        "heartbeats_sent_in_window": sent_after - sent_before,
        "pod_updates_per_second_asked": args.pod_updates_per_second,
        "pod_status_updates_in_window": pod_updates, "pod_update_errors": churn.errors,
        "controller_writes_in_window": sum(writes.values()), "controller_writes_by_verb": writes,
        "controller_writes_in_warmup": controller_writes(warm_records),
        "controller_reads_in_window": sum(1 for r in records if str(r["user_agent"]).startswith("dsctl/")
                                          and r["verb"] in ("get", "list")),
        "syncs_in_window": syncs_after["count"] - syncs_before["count"],
        "controller_idle_cpu_percent": round(100 * idle_rate, 2),
        "controller_cpu_seconds_in_window": round(cpu, 2),
        "controller_cpu_percent_in_window": round(100 * cpu / window, 1),
        "heartbeat_cpu_seconds": round(heartbeat_cpu, 2),
        "heartbeat_cpu_us_per_node_update": round(1e6 * heartbeat_cpu / node_updates, 1) if node_updates else None,
        "controller_rss_mib": cpu_after["rss_mib"], "controller_peak_rss_mib": cpu_after["peak_rss_mib"],
        "request_log_dropped": dropped,
    })
    if hot:
        result["profile"] = hot
    log("window", writes=result["controller_writes_in_window"], cpu_percent=result["controller_cpu_percent_in_window"])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks steady-state", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--daemonsets", type=int, default=3)
    parser.add_argument("--heartbeat-seconds", type=float, default=10.0)
    parser.add_argument("--window-seconds", type=float, default=60.0)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--pod-updates-per-second", type=float, default=0.0,
                        help="also send kubelet-style pod status updates that change no planning input")
    parser.add_argument("--tag", default="", help="store the result as <name>-<tag>.json instead")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--profile", action="store_true", help="py-spy the controller during the window")
    args = parser.parse_args(argv)
    write_result(f"{NAME}-{args.tag}" if args.tag else NAME, asyncio.run(run(args)))


if __name__ == "__main__":
    main()
