"""Informer sync against the real simulator (``dsctl sim serve``) at 5,000 nodes / 150,000 pods.

Starts the simulator in its own process without control loops, creates the pods through the
API (the same DaemonSet-pod bodies as benchmarks/informer_objects.py, minus server-set fields
and status), then runs the ``sync-projected``, ``sync-full``, ``nodes-dicts`` and
``nodes-models`` cases of benchmarks/informer_sync.py against it, each in a fresh process.

Usage: ``python -m benchmarks informer-sim [--nodes 5000] [--pods 150000]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from typing import Any

import orjson
import structlog
from prometheus_client import CollectorRegistry

from benchmarks.harness.children import run_child
from benchmarks.harness.procs import rss_mib
from benchmarks.informer_objects import daemon_pod
from dsctl.kube import PODS, KubeClient
from tests.support.simproc import SimProcess

structlog.configure(
    wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    logger_factory=structlog.PrintLoggerFactory(sys.stderr),
)


def pod_body(i: int, nodes: int) -> dict[str, Any]:
    """A create body: the benchmark pod without server-set metadata and without status."""
    pod = daemon_pod(i, nodes=nodes)
    meta = pod["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generateName"):
        meta.pop(key, None)
    pod.pop("status")
    return pod


async def seed(kubeconfig: str, *, nodes: int, pods: int) -> float:
    """Create the pods with 32 requests in flight; return creates per second."""
    client = await KubeClient.from_config(kubeconfig=kubeconfig, qps=0,
                                          registry=CollectorRegistry())
    gate = asyncio.Semaphore(32)

    async def one(i: int) -> None:
        async with gate:
            await client.create(PODS, pod_body(i, nodes))

    started = time.perf_counter()
    try:
        for start in range(0, pods, 5000):
            await asyncio.gather(*(one(i) for i in range(start, min(pods, start + 5000))))
    finally:
        await client.close()
    return pods / (time.perf_counter() - started)


async def main_async(args: argparse.Namespace) -> None:
    sim_args = ["--no-control-plane", "--log-level", "warning", "--history-size", "1000"]
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=600) as sim:
        rate = await seed(sim.kubeconfig, nodes=args.nodes, pods=args.pods)
        stored_pod = (await sim.request("GET", "/api/v1/pods?limit=1"))[1]["items"][0]
        summary: dict[str, Any] = {
            "nodes": args.nodes, "pods": args.pods, "seed_creates_per_second": round(rate),
            "sim_pod_json_bytes": len(orjson.dumps(stored_pod)),
            "sim_rss_mib": round(rss_mib(sim.pid)[0]), "results": [],
        }
        print(json.dumps({k: v for k, v in summary.items() if k != "results"}), flush=True)
        for case in args.cases.split(","):
            result = await asyncio.to_thread(
                run_child, "informer_sync", "--child", case, "--url", sim.url,
                "--qps", str(args.qps))
            print(json.dumps(result), flush=True)
            summary["results"].append(result)
    print(json.dumps(summary, indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks informer-sim", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--cases", default="sync-projected,sync-full,nodes-dicts,nodes-models")
    asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
