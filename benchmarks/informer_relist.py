"""Peak RSS during a forced relist: compaction plus an expired continue token.

A child process syncs the node informer and the pod informer exactly as the controller builds
them (projections; pods indexed by node, owner UID and orphan namespace) from
benchmarks/informer_fixture_server.py, then the server is compacted (``POST /admin/compact``):
1 % of the pods deleted, 10 % modified, every watch ended with 410, and the first continue
request of the relist refused with 410 Expired. The child's peak RSS is reset (``clear_refs``)
just before the compaction, so ``relist_peak_rss_mib`` is the relist's own peak.

Usage: ``python -m benchmarks informer-relist [--nodes 5000] [--pods 150000]``; prints the
JSON of the run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import structlog

from benchmarks.harness.children import fixture_server, run_child, write_kubeconfig
from benchmarks.harness.procs import self_rss_mib

structlog.configure(
    wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    logger_factory=structlog.PrintLoggerFactory(sys.stderr),
)


def _reset_peak_rss() -> None:
    """Make VmHWM start again from the current RSS (Linux ``clear_refs`` value 5)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


async def relist_case(url: str) -> dict[str, Any]:
    from dsctl.controller.cacheview import orphans_by_namespace
    from dsctl.informer import (
        BY_NODE_NAME,
        BY_OWNER_UID,
        Informer,
        by_node_name,
        by_owner_uid,
        make_pod_projection,
        project_node,
    )
    from dsctl.kube import NODES, PODS, KubeClient

    path = write_kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig", url)
    client = await KubeClient.from_config(kubeconfig=str(path), qps=0, environ={})
    calls = {"add": 0, "update": 0, "delete": 0}

    def on_add(_obj: dict[str, Any]) -> None:
        calls["add"] += 1

    def on_update(_old: dict[str, Any], _new: dict[str, Any]) -> None:
        calls["update"] += 1

    def on_delete(_obj: dict[str, Any]) -> None:
        calls["delete"] += 1

    nodes = Informer(client, NODES, transform=project_node)
    pods = Informer(client, PODS, transform=make_pod_projection(),
                    indexers={BY_NODE_NAME: by_node_name, BY_OWNER_UID: by_owner_uid,
                              "orphansByNamespace": orphans_by_namespace})
    pods.add_handler(on_add, on_update, on_delete)
    nodes.run()
    pods.run()
    await nodes.wait_for_sync()
    await pods.wait_for_sync()
    gc.collect()
    synced_rss, sync_peak = self_rss_mib()
    listed = len(pods.store)
    calls.update(add=0, update=0, delete=0)
    _reset_peak_rss()
    started = time.perf_counter()
    cpu_started = time.process_time()
    async with aiohttp.ClientSession() as session, session.post(f"{url}/admin/compact") as resp:
        resp.raise_for_status()
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if pods.reflector.relists >= 2:
            break
        await asyncio.sleep(0.02)
    else:
        raise RuntimeError("the forced relist did not complete within 900 s")
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    _, relist_peak = self_rss_mib()
    gc.collect()
    after_rss, _ = self_rss_mib()
    async with aiohttp.ClientSession() as session, session.get(f"{url}/admin/stats") as resp:
        server = await resp.json()
    result = {
        "case": "forced-relist",
        "server": server,
        "pods_before": listed,
        "pods_after": len(pods.store),
        "handler_calls": dict(calls),
        "relist_seconds": round(elapsed, 2),
        "relist_cpu_seconds": round(cpu, 2),
        "rss_after_sync_mib": round(synced_rss, 1),
        "sync_peak_rss_mib": round(sync_peak, 1),
        "relist_peak_rss_mib": round(relist_peak, 1),
        "relist_peak_over_synced_mib": round(relist_peak - synced_rss, 1),
        "rss_after_relist_mib": round(after_rss, 1),
    }
    await nodes.stop()
    await pods.stop()
    await client.close()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks informer-relist", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--url")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(relist_case(args.url))), flush=True)
        return
    with fixture_server(nodes=args.nodes, pods=args.pods) as url:
        result = run_child("informer_relist", "--child", "--url", url)
    print(json.dumps({"nodes": args.nodes, "pods": args.pods, **result}, indent=1))


if __name__ == "__main__":
    main()
