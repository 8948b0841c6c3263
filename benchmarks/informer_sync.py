"""Informer sync time, controller RSS, watch throughput, and raw dicts vs generated models.

Runs against benchmarks/informer_fixture_server.py in a separate process (5,000 nodes and
150,000 DaemonSet pods by default). Cases, each in a fresh child process:

- ``sync-full``: node + pod informers caching full dicts (pods indexed by node and owner);
- ``sync-projected``: the same with ``project_node``/``project_pod``;
- ``watch``: a synced pod informer, built as the controller builds it (projection, three
  indexes), consuming ``--watch-events`` MODIFIED events (``--profile FILE``: cProfile of
  that phase);
- ``watch-raw``: the same stream through ``KubeClient.watch`` alone, no informer;
- ``watch-split``: the same stream through ``KubeClient.watch_batches`` with a decoder that
  does nothing: HTTP, chunking and line splitting only, the floor under any decoder;
- ``nodes-dicts`` / ``nodes-models``: one 5,000-node NodeList as orjson dicts through
  KubeClient vs ``CoreV1Api.list_node()`` models (time, median of 3; RSS growth).

Usage: ``python -m benchmarks informer-sync [--nodes 5000] [--pods 150000]``; prints a table
and the JSON of every case. ``--trees before=DIR,after=DIR --rounds 3`` runs the cases against
the dsctl of each source tree in turn (same fixture server, alternating, a fresh process each).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

from benchmarks.harness.children import (
    fixture_server,
    run_child,
    write_kubeconfig,
)
from benchmarks.harness.procs import self_rss_mib

structlog.configure(
    wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    logger_factory=structlog.PrintLoggerFactory(sys.stderr),
)


async def _client(url: str, qps: float) -> Any:
    from dsctl.kube import KubeClient

    path = write_kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig", url)
    return await KubeClient.from_config(kubeconfig=str(path), qps=qps, burst=100, environ={})


async def sync_case(url: str, *, projected: bool, qps: float) -> dict[str, Any]:
    from dsctl.informer import (
        BY_NODE_NAME,
        BY_OWNER_UID,
        Informer,
        by_node_name,
        by_owner_uid,
        project_node,
        project_pod,
    )
    from dsctl.kube import NODES, PODS

    client = await _client(url, qps)
    gc.collect()
    base_rss, _ = self_rss_mib()
    nodes = Informer(client, NODES, transform=project_node if projected else None)
    pods = Informer(
        client, PODS, indexers={BY_NODE_NAME: by_node_name, BY_OWNER_UID: by_owner_uid},
        transform=project_pod if projected else None,
    )
    started = time.perf_counter()
    cpu_started = time.process_time()
    nodes.run()
    pods.run()
    await nodes.wait_for_sync()
    nodes_done = time.perf_counter() - started
    await pods.wait_for_sync()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    gc.collect()
    rss, peak = self_rss_mib()
    result = {
        "case": "sync-projected" if projected else "sync-full",
        "nodes": len(nodes.store),
        "pods": len(pods.store),
        "sync_seconds": round(elapsed, 2),
        "sync_cpu_seconds": round(cpu, 2),
        "nodes_sync_seconds": round(nodes_done, 2),
        "rss_base_mib": round(base_rss, 1),
        "rss_after_sync_mib": round(rss, 1),
        "rss_peak_mib": round(peak, 1),
        "cache_rss_mib": round(rss - base_rss, 1),
    }
    await nodes.stop()
    await pods.stop()
    await client.close()
    return result


async def watch_case(
    url: str, *, events: int, qps: float, profile: str | None, controller_gc: bool
) -> dict[str, Any]:
    from dsctl.controller.cacheview import BY_TARGET_NODE, ORPHANS_BY_NAMESPACE, by_target_node, orphans_by_namespace
    from dsctl.informer import BY_OWNER_UID, Informer, by_owner_uid, make_pod_projection
    from dsctl.kube import PODS

    client = await _client(url, qps)
    seen = 0
    done = asyncio.Event()
    first: list[float] = []

    def on_update(_old: dict[str, Any], _new: dict[str, Any]) -> None:
        nonlocal seen
        if not first:
            first.append(time.perf_counter())
        seen += 1
        if seen >= events:
            done.set()

    from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION

    # As the controller builds it: projection, indexes by target node, owner UID and orphan
    # namespace (dsctl/controller/controller.py).
    pods = Informer(client, PODS, transform=make_pod_projection(keep_annotations=(IN_PLACE_ANNOTATION,)),
                    label_selector="bench=watch",
                    indexers={BY_TARGET_NODE: by_target_node, BY_OWNER_UID: by_owner_uid,
                              ORPHANS_BY_NAMESPACE: orphans_by_namespace})
    pods.add_handler(on_update=on_update)
    profiler = cProfile.Profile() if profile else None
    pods.run()
    await pods.wait_for_sync()
    if controller_gc:
        from dsctl.app.collector import freeze_caches, tune_collector

        tune_collector()
        freeze_caches()
    cpu_started = time.process_time()
    if profiler is not None:
        profiler.enable()
    await asyncio.wait_for(done.wait(), timeout=600)
    elapsed = time.perf_counter() - first[0]
    cpu = time.process_time() - cpu_started
    if profiler is not None and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    await pods.stop()
    await client.close()
    gc.collect()
    rss, peak = self_rss_mib()
    return {"case": "watch", "controller_gc": controller_gc, "events": seen, "seconds": round(elapsed, 2),
            "events_per_second": round(seen / elapsed), "cpu_seconds": round(cpu, 2),
            "events_per_cpu_second": round(seen / cpu), "rss_after_events_mib": round(rss, 1),
            "rss_peak_mib": round(peak, 1)}


async def watch_raw_case(url: str, *, events: int, qps: float) -> dict[str, Any]:
    """The client alone: the same watch stream iterated through ``KubeClient.watch`` (HTTP,
    line splitting, orjson decode), no informer; the floor under the ``watch`` case."""
    from dsctl.kube import PODS

    client = await _client(url, qps)
    seen = 0
    cpu_started = time.process_time()
    started = time.perf_counter()
    async for _event in client.watch(PODS, label_selector="bench=watch", resource_version="5000000",
                                     timeout_seconds=600):
        seen += 1
        if seen >= events:
            break
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    await client.close()
    return {"case": "watch-raw", "events": seen, "seconds": round(elapsed, 2),
            "events_per_second": round(seen / elapsed), "cpu_seconds": round(cpu, 2),
            "events_per_cpu_second": round(seen / cpu)}


async def watch_split_case(url: str, *, events: int, qps: float) -> dict[str, Any]:
    """HTTP and line splitting alone: every line handed to a decoder that returns None."""
    from dsctl.kube import PODS

    client = await _client(url, qps)
    seen = 0
    cpu_started = time.process_time()
    started = time.perf_counter()
    async for batch in client.watch_batches(PODS, decode=lambda _line: None, label_selector="bench=watch",
                                            resource_version="5000000", timeout_seconds=600):
        seen += len(batch)
        if seen >= events:
            break
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    await client.close()
    return {"case": "watch-split", "events": seen, "seconds": round(elapsed, 2),
            "events_per_second": round(seen / elapsed), "cpu_seconds": round(cpu, 2),
            "events_per_cpu_second": round(seen / cpu)}


async def nodes_case(url: str, *, models: bool) -> dict[str, Any]:
    from dsctl.kube import NODES

    gc.collect()
    base_rss, _ = self_rss_mib()
    times: list[float] = []
    held: Any = None
    if models:
        from kubernetes_asyncio import client as k8s

        config = k8s.Configuration(host=url)
        async with k8s.ApiClient(configuration=config) as api_client:
            api = k8s.CoreV1Api(api_client)
            await api.list_node()
            for _ in range(3):
                held = None
                started = time.perf_counter()
                held = await api.list_node()
                times.append(time.perf_counter() - started)
            count = len(held.items)
            api_client.last_response = None  # release the body it keeps, as noted in the facts
    else:
        client = await _client(url, 0)
        await client.list(NODES)
        for _ in range(3):
            held = None
            started = time.perf_counter()
            held = await client.list(NODES)
            times.append(time.perf_counter() - started)
        count = len(held["items"])
        await client.close()
    gc.collect()
    rss, peak = self_rss_mib()
    return {"case": "nodes-models" if models else "nodes-dicts", "nodes": count,
            "seconds_median": round(statistics.median(times), 3),
            "runs": [round(t, 3) for t in times],
            "held_rss_mib": round(rss - base_rss, 1), "rss_peak_mib": round(peak, 1)}


def child(args: argparse.Namespace) -> None:
    if args.tree:
        sys.path[:0] = [args.tree, str(Path(args.tree) / "dsctl-api")]
    if args.child in ("sync-full", "sync-projected"):
        result = asyncio.run(sync_case(args.url, projected=args.child == "sync-projected",
                                       qps=args.qps))
    elif args.child == "watch":
        result = asyncio.run(watch_case(args.url, events=args.watch_events, qps=args.qps,
                                        profile=args.profile, controller_gc=args.controller_gc))
    elif args.child == "watch-raw":
        result = asyncio.run(watch_raw_case(args.url, events=args.watch_events, qps=args.qps))
    elif args.child == "watch-split":
        result = asyncio.run(watch_split_case(args.url, events=args.watch_events, qps=args.qps))
    else:
        result = asyncio.run(nodes_case(args.url, models=args.child == "nodes-models"))
    print(json.dumps(result), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks informer-sync", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--watch-events", type=int, default=100000)
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--cases", default="sync-projected,sync-full,watch,nodes-dicts,"
                        "nodes-models")
    parser.add_argument("--profile", help="write a cProfile of the watch case's event phase here")
    parser.add_argument("--controller-gc", action="store_true",
                        help="watch case: the controller's GC settings (thresholds, freeze after sync)")
    parser.add_argument("--trees", help="NAME=DIR,...: run the cases against each source tree in turn")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--child")
    parser.add_argument("--url")
    parser.add_argument("--tree")
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    results = []
    trees = [item.split("=", 1) for item in args.trees.split(",")] if args.trees else [["", ""]]
    with fixture_server(nodes=args.nodes, pods=args.pods,
                        watch_events=args.watch_events) as url:
        for _ in range(args.rounds):
            for name, tree in trees:
                for case in args.cases.split(","):
                    extra = ["--profile", args.profile] if args.profile and case == "watch" else []
                    extra += ["--controller-gc"] if args.controller_gc else []
                    extra += ["--tree", tree] if tree else []
                    result = run_child("informer_sync", "--child", case, "--url", url,
                                       "--qps", str(args.qps), "--watch-events",
                                       str(args.watch_events), *extra)
                    if name:
                        result = {"tree": name, **result}
                    print(json.dumps(result), flush=True)
                    results.append(result)
    print(json.dumps({"nodes": args.nodes, "pods": args.pods, "results": results}, indent=1))


if __name__ == "__main__":
    main()
