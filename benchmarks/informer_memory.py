"""Memory held by informer caches: full dicts vs projections, by tracemalloc and by RSS.

Each case syncs a node informer and an indexed pod informer from
benchmarks/informer_fixture_server.py (a separate process) in a fresh child process with
tracemalloc on, then reports the bytes still allocated after ``gc.collect()`` (the caches and
indexes), tracemalloc's peak (transient list pages), and the RSS growth.

Usage: ``python -m benchmarks informer-memory [--nodes 5000] [--pods 150000]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import structlog

from benchmarks.harness.children import fixture_server, run_child, write_kubeconfig
from benchmarks.harness.procs import self_rss_mib
from benchmarks.informer_objects import daemon_pod, node

structlog.configure(
    wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    logger_factory=structlog.PrintLoggerFactory(sys.stderr),
)


async def held(url: str, *, projected: bool) -> dict[str, Any]:
    from dsctl.informer import (
        BY_NODE_NAME,
        BY_OWNER_UID,
        Informer,
        by_node_name,
        by_owner_uid,
        project_node,
        project_pod,
    )
    from dsctl.kube import NODES, PODS, KubeClient

    path = write_kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig", url)
    client = await KubeClient.from_config(kubeconfig=str(path), qps=0, environ={})
    gc.collect()
    base_rss, _ = self_rss_mib()
    tracemalloc.start()
    base_traced, _ = tracemalloc.get_traced_memory()
    nodes = Informer(client, NODES, transform=project_node if projected else None)
    pods = Informer(
        client, PODS, indexers={BY_NODE_NAME: by_node_name, BY_OWNER_UID: by_owner_uid},
        transform=project_pod if projected else None,
    )
    nodes.run()
    pods.run()
    await nodes.wait_for_sync()
    await pods.wait_for_sync()
    await nodes.stop()
    await pods.stop()
    gc.collect()
    traced, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss, rss_peak = self_rss_mib()
    count = len(nodes.store) + len(pods.store)
    held_bytes = traced - base_traced
    await client.close()
    return {
        "case": "projected" if projected else "full",
        "nodes": len(nodes.store),
        "pods": len(pods.store),
        "held_mib": round(held_bytes / 2**20, 1),
        "held_bytes_per_object": round(held_bytes / max(count, 1)),
        "traced_peak_mib": round((peak - base_traced) / 2**20, 1),
        "rss_growth_mib": round(rss - base_rss, 1),
        "rss_peak_mib": round(rss_peak, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks informer-memory", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--cases", default="projected,full")
    parser.add_argument("--child")
    parser.add_argument("--url")
    args = parser.parse_args(argv)
    if args.child:
        result = asyncio.run(held(args.url, projected=args.child == "projected"))
        print(json.dumps(result), flush=True)
        return
    sizes = {
        "node_json_bytes": len(orjson.dumps(node(1))),
        "pod_json_bytes": len(orjson.dumps(daemon_pod(1, nodes=args.nodes))),
    }
    print(json.dumps(sizes), flush=True)
    results: list[dict[str, Any]] = []
    with fixture_server(nodes=args.nodes, pods=args.pods) as url:
        for case in args.cases.split(","):
            result = run_child("informer_memory", "--child", case, "--url", url)
            print(json.dumps(result), flush=True)
            results.append(result)
    print(json.dumps({"nodes": args.nodes, "pods": args.pods, **sizes, "results": results},
                     indent=1))


if __name__ == "__main__":
    main()
