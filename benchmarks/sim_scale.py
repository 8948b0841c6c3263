"""Simulator at scale: pod-create throughput, 150,000-pod list latency, and the sim's RSS.

Starts ``python -m dsctl_sim serve --nodes 5000 --no-control-plane`` as a subprocess; this
process is the client (aiohttp, one connection pool, N concurrent workers posting
pre-encoded DaemonSet-style pods with ``generateName``), using either aiohttp or a minimal
keep-alive HTTP/1.1 client on raw asyncio transports. Steps:

1. sweep: ``--sweep-pods`` creates for each client and each concurrency in ``--concurrency``;
2. fill up to ``--pods`` at the best concurrency (the "physical limit" create rate);
3. list latency: all pods in one response (median of 3), every page at ``limit=500``, and
   one node's pods through the ``spec.nodeName`` index;
4. the sim's RSS (current and peak) from ``/proc``.

By default the sim runs without its control-plane loops and pods carry ``spec.nodeName``,
so the figure is the API server's own limit; ``--control-plane`` leaves binding and pod
start-up to the loops, which then share the sim's core with the API server.

Every create run also reports the sim's own CPU time per create, a figure that holds even
when other processes compete for the cores.

Usage: ``python -m benchmarks sim-scale [--nodes 5000] [--pods 150000]``. Prints one JSON
document. Takes about two to four minutes on two cores at the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import time
from typing import Any

import aiohttp
import orjson

from benchmarks.harness.cluster import SimProcess
from benchmarks.harness.procs import proc_cpu_seconds, proc_usage
from benchmarks.harness.rawclient import post_all

PODS = "/api/v1/namespaces/default/pods"
OWNER = {
    "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
    "spec": {"selector": {"matchLabels": {"app": "agent"}},
             "template": {"metadata": {"labels": {"app": "agent"}},
                          "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:1.0"}]}}},
}


def pod_body(node: str, *, bind: bool = True, owner_uid: str = "6f1c1d4e-0000-4000-8000-000000000001") -> bytes:
    """A pod shaped like one a DaemonSet controller creates for ``node``.

    ``bind`` sets ``spec.nodeName`` (direct binding); otherwise the scheduler loop binds it
    through the ``matchFields`` affinity.
    """
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "agent-",
            "labels": {"app": "agent", "controller-revision-hash": "5d8f7c9b6", "pod-template-generation": "1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                 "uid": owner_uid, "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "nodeName": node,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
            "containers": [{"name": "agent", "image": "registry.example/agent:1.0",
                            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}}}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
            ],
        },
    }
    if not bind:
        del body["spec"]["nodeName"]
    return orjson.dumps(body)


async def _run_workers(send: Any, count: int, concurrency: int) -> tuple[float, dict[int, int]]:
    counter = itertools.count()
    errors: dict[int, int] = {}

    async def worker(slot: int) -> None:
        while (i := next(counter)) < count:
            status = await send(slot, i)
            if status != 201:
                errors[status] = errors.get(status, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(slot) for slot in range(concurrency)))
    return time.perf_counter() - start, errors


async def create_pods(
    url: str, bodies: list[bytes], *, count: int, concurrency: int, offset: int, client: str, sim_pid: int
) -> dict[str, Any]:
    """Create ``count`` pods with ``concurrency`` workers using the ``aiohttp`` or ``raw`` client.

    Also reports the sim's CPU time per create, which does not depend on how busy the
    machine's other cores are: ``1e6 / server_cpu_us_per_create`` is the rate one free core
    could serve.
    """
    cpu_before = proc_cpu_seconds(sim_pid)
    if client == "raw":
        chosen = [bodies[(offset + i) % len(bodies)] for i in range(count)]
        raw = await post_all(url, PODS, chosen, concurrency=concurrency, agent="sim-scale-bench")
        elapsed, errors = raw.seconds, raw.errors
    else:
        connector = aiohttp.TCPConnector(limit=concurrency)
        headers = {"Content-Type": "application/json", "User-Agent": "sim-scale-bench"}
        async with aiohttp.ClientSession(connector=connector, headers=headers) as http:
            async def send_aiohttp(slot: int, i: int) -> int:
                async with http.post(url + PODS, data=bodies[(offset + i) % len(bodies)]) as resp:
                    await resp.read()
                    return resp.status

            elapsed, errors = await _run_workers(send_aiohttp, count, concurrency)
    cpu_us = (proc_cpu_seconds(sim_pid) - cpu_before) / count * 1e6
    return {"client": client, "concurrency": concurrency, "pods": count, "seconds": round(elapsed, 3),
            "creates_per_second": round(count / elapsed, 1), "errors": errors,
            "server_cpu_us_per_create": round(cpu_us, 1),
            "server_bound_creates_per_second": round(1e6 / cpu_us, 1) if cpu_us > 0 else None}


async def timed_get(http: aiohttp.ClientSession, url: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    async with http.get(url) as resp:
        body = await resp.read()
        assert resp.status == 200, (resp.status, body[:300])
    return time.perf_counter() - start, body


async def list_latency(url: str, *, pods: int) -> dict[str, Any]:
    """Full list (median of 3, decoded too), paginated traversal, and one indexed node list."""
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http:
        runs, size, decode = [], 0, []
        for _ in range(3):
            seconds, body = await timed_get(http, url + "/api/v1/pods")
            runs.append(seconds)
            size = len(body)
            t = time.perf_counter()
            items = len(orjson.loads(body)["items"])
            decode.append(time.perf_counter() - t)
            assert items == pods, (items, pods)
            del body
        out["full_list"] = {"seconds_median": round(statistics.median(runs), 3),
                            "runs": [round(r, 3) for r in runs], "bytes": size,
                            "client_decode_seconds_median": round(statistics.median(decode), 3)}
        start, pages, seen, token = time.perf_counter(), 0, 0, ""
        while True:
            suffix = f"&continue={token}" if token else ""
            _, body = await timed_get(http, f"{url}/api/v1/pods?limit=500{suffix}")
            page = orjson.loads(body)
            pages += 1
            seen += len(page["items"])
            token = page["metadata"].get("continue", "")
            if not token:
                break
        out["paginated_list_500"] = {"seconds": round(time.perf_counter() - start, 3), "pages": pages,
                                     "items": seen}
        runs = [(await timed_get(http, f"{url}/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-7"))[0]
                for _ in range(5)]
        out["node_indexed_list"] = {"seconds_median": round(statistics.median(runs), 5)}
    return out


async def settle(url: str, *, sim_pid: int, timeout: float = 900.0) -> dict[str, Any]:
    """Wait until no pod is Pending (the loops bound and started them all)."""
    start, cpu_before = time.perf_counter(), proc_cpu_seconds(sim_pid)
    query = "/api/v1/pods?fieldSelector=status.phase%3DPending&limit=1"
    async with aiohttp.ClientSession() as http:
        while time.perf_counter() - start < timeout:
            _, body = await timed_get(http, url + query)
            page = orjson.loads(body)
            pending = len(page["items"]) + int(page["metadata"].get("remainingItemCount", 0))
            if pending == 0:
                break
            await asyncio.sleep(2.0)
    return {"seconds": round(time.perf_counter() - start, 1), "pending": pending,
            "sim_cpu_seconds": round(proc_cpu_seconds(sim_pid) - cpu_before, 1)}


def rss(pid: int) -> dict[str, float]:
    """Current and peak resident set size of ``pid`` in MiB."""
    usage = proc_usage(pid)
    return {"rss_mib": usage["rss_mib"], "peak_rss_mib": usage["peak_rss_mib"]}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"nodes": args.nodes, "pods": args.pods, "cpus": os.cpu_count()}
    result["control_plane"] = args.control_plane
    sim_args = ["--log-level", "warning", "--history-size", str(args.history_size)]
    if not args.control_plane:
        sim_args.append("--no-control-plane")
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=300) as sim:
        # A real owner, so the garbage collector keeps the pods.
        status, owner = await sim.request("POST", "/apis/apps/v1/namespaces/default/daemonsets", json=OWNER)
        assert status == 201, owner
        uid = owner["metadata"]["uid"]
        bodies = [pod_body(f"node-{i}", bind=not args.control_plane, owner_uid=uid) for i in range(args.nodes)]
        result["pod_body_bytes"] = len(bodies[0])
        result["rss_empty"] = rss(sim.pid)
        sweep = []
        created = 0
        for client in args.clients:
            for c in args.concurrency:
                sweep.append(await create_pods(sim.url, bodies, count=args.sweep_pods, concurrency=c,
                                               offset=created, client=client, sim_pid=sim.pid))
                created += args.sweep_pods
                print(json.dumps(sweep[-1]), file=sys.stderr, flush=True)
        result["sweep"] = sweep
        best = max(sweep, key=lambda r: r["creates_per_second"])
        fill = await create_pods(sim.url, bodies, count=args.pods - created, concurrency=best["concurrency"],
                                 offset=created, client=best["client"], sim_pid=sim.pid)
        print(json.dumps(fill), file=sys.stderr, flush=True)
        result["fill"] = fill
        result["rss_full"] = rss(sim.pid)
        if args.control_plane:
            result["settle"] = await settle(sim.url, sim_pid=sim.pid)
            result["rss_settled"] = rss(sim.pid)
        result["lists"] = await list_latency(sim.url, pods=args.pods)
        result["rss_after_lists"] = rss(sim.pid)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks sim-scale", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--sweep-pods", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 128])
    parser.add_argument("--clients", nargs="+", choices=["aiohttp", "raw"], default=["aiohttp", "raw"])
    parser.add_argument("--history-size", type=int, default=50_000)
    parser.add_argument("--control-plane", action="store_true",
                        help="run the scheduler/kubelet loops too (they compete for the sim's core)")
    args = parser.parse_args(argv)
    if args.sweep_pods * len(args.concurrency) * len(args.clients) > args.pods:
        parser.error("--pods must cover the sweep")
    print(json.dumps(asyncio.run(run(args)), indent=1))


if __name__ == "__main__":
    main()
