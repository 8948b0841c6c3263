"""CPU time of one no-op sync of a DaemonSet that covers N nodes (default 5,000).

Two measurements, reported side by side:

1. ``in_process``: the pure planning pipeline of ``dsctl.daemonset`` over synthetic objects,
   N realistic nodes (the sim's ``make_node``) and N Running, Ready, up-to-date pods made by
   ``new_pod``, both as full dicts and as the informer projections the controller caches. One
   iteration runs the steps a converged sync runs, in the controller's order: ``claim``,
   ``plan_history``, ``Eligibility.of(ds).check`` on every node, ``group_by_node``,
   ``plan_manage``, ``plan_rolling_update``, ``compute_status``, ``status_changed``. Each stage
   and the whole are timed with ``time.process_time()`` over ``--iterations``; the pipeline is
   also run under cProfile and the top functions are listed. The same loop checks the plan
   is empty, so a regression that turns the no-op into writes shows up.
2. ``end_to_end``: the controller process (``python -m dsctl run``) against
   ``dsctl sim serve --nodes N``: one DaemonSet converges, then ``--touches`` annotation
   patches each force one sync; the mean of ``dsctl_sync_duration_seconds`` over those syncs,
   the controller's CPU seconds per sync from ``/proc``, the writes it made (goal 0), and with
   ``--profile`` a py-spy summary of the touch window. With ``--touch-node`` one node's labels
   change before each touch, so each forced sync is the incremental sync after one node changed.

Usage: ``python -m benchmarks noop-sync [--nodes 5000] [--iterations 20]
[--skip-end-to-end] [--touch-node] [--tag T]``. Prints the JSON summary; writes
``benchmarks/results/controller_noop_sync[-T].json``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from benchmarks.harness.cluster import SimProcess, controller, daemonset
from benchmarks.harness.metrics import histogram, request_log
from benchmarks.harness.procs import proc_usage
from benchmarks.harness.profiling import profile
from benchmarks.harness.results import environment, log, write_result
from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.controller.cacheview import (
    BY_TARGET_NODE,
    ORPHANS_BY_NAMESPACE,
    CacheView,
    by_target_node,
    orphans_by_namespace,
)
from dsctl.daemonset.eligibility import Eligibility
from dsctl.daemonset.history import plan_history
from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
from dsctl.daemonset.manage import plan_manage
from dsctl.daemonset.ownership import claim
from dsctl.daemonset.podsort import group_by_node
from dsctl.daemonset.status import compute_status, status_changed, status_with
from dsctl.daemonset.syncplan import SyncSnapshot, plan_sync
from dsctl.daemonset.template import new_pod
from dsctl.daemonset.update import plan_rolling_update
from dsctl.informer import BY_OWNER_UID, ReadOnlyStore, Store, by_owner_uid
from dsctl.informer.projections import make_pod_projection, project_node
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES
from dsctl_api.labels import selector_from_label_selector
from dsctl_sim.nodes import make_node

NAME = "controller_noop_sync"
STAMP = "2026-11-30T10:00:00Z"
Obj = Mapping[str, Any]


# -- in process ---------------------------------------------------------------------------------

def synthetic(nodes: int) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """A converged DaemonSet: (ds, nodes, pods, current revision), all as the API returns them."""
    ds = daemonset("agent")
    ds["metadata"].update(uid="6f1c1d4e-0000-4000-8000-00000000a9e7", generation=1, resourceVersion="10",
                          creationTimestamp=STAMP, annotations={"deprecated.daemonset.template.generation": "1"})
    ds["spec"]["updateStrategy"] = {"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    ds["spec"]["revisionHistoryLimit"] = 10
    history = plan_history(ds=ds, revisions=[])
    revision = history.current
    revision["metadata"].update(uid="rev-uid", resourceVersion="11", namespace="default")
    node_objs = []
    for i in range(nodes):
        node = make_node(f"node-{i}", index=i, now=1_790_000_000.0)
        node["metadata"].update(uid=f"node-uid-{i}", resourceVersion=str(100 + i), creationTimestamp=STAMP)
        node_objs.append(node)
    pods = []
    for i in range(nodes):
        pod = new_pod(ds, f"node-{i}", hash=history.hash)
        pod["metadata"].update(name=f"agent-{i:05x}", namespace="default", uid=f"pod-uid-{i}",
                               resourceVersion=str(20_000 + i), creationTimestamp=STAMP)
        pod["spec"]["nodeName"] = f"node-{i}"
        pod["status"] = {
            "phase": "Running", "podIP": f"10.1.{i // 256}.{i % 256}", "startTime": STAMP,
            "conditions": [{"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP}
                           for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                        "PodScheduled")],
            "containerStatuses": [{"name": "agent", "ready": True, "restartCount": 0, "started": True,
                                   "image": "registry.example/agent:1.0", "imageID": "",
                                   "containerID": f"containerd://{i:064x}",
                                   "state": {"running": {"startedAt": STAMP}}}],
        }
        pods.append(pod)
    return ds, node_objs, pods, revision


def pipeline(ds: Obj, nodes: Sequence[Obj], pods: Sequence[Obj], revision: Obj,
             clock: Callable[[str, float], None] | None = None) -> Any:
    """One no-op sync's pure work, in the controller's order; ``clock(stage, seconds)`` per stage."""
    tick = time.process_time
    t = tick()

    def stage(name: str) -> None:
        nonlocal t
        if clock is not None:
            now_t = tick()
            clock(name, now_t - t)
            t = now_t

    meta = ds["metadata"]
    selector = selector_from_label_selector(ds["spec"]["selector"])
    verdict = claim(pods, owner_uid=meta["uid"], selector=selector, owner_namespace="default",
                    owner_deleting=False)
    owned = list(verdict.owned)
    stage("claim")
    history = plan_history(ds=ds, revisions=[revision], pods=owned)
    stage("plan_history")
    rules = Eligibility.of(ds)
    fits = {n["metadata"]["name"]: rules.check(n) for n in nodes}
    stage("eligibility")
    by_node = group_by_node(owned)
    stage("group_by_node")
    now = 1_790_000_100.0
    plan = plan_manage(ds=ds, nodes=nodes, pods_by_node=by_node, hash=history.hash, now=now,
                       backoff=FailedPodBackoff(), fits=fits)
    stage("plan_manage")
    should_run = [name for name, fit in fits.items() if fit.should_run]
    update = plan_rolling_update(ds=ds, nodes_should_run=should_run, pods_by_node=by_node, hash=history.hash,
                                 now=now)
    stage("plan_rolling_update")
    status = compute_status(ds=ds, nodes=nodes, pods_by_node=by_node, hash=history.hash, now=now, fits=fits)
    changed = status_changed(ds.get("status") or {}, status, generation=1)
    stage("compute_status")
    assert clock is None or not changed, "a converged DaemonSet's status must not change"
    assert not verdict.to_adopt and not verdict.to_release, "no-op sync must not adopt or release"
    assert history.create is None and not history.updates, "no-op sync must not write history"
    assert not plan.has_writes and not update.has_writes, "no-op sync must not write pods"
    return status, changed


def in_process(args: argparse.Namespace) -> dict[str, Any]:
    """Stage and total CPU per no-op sync, full dicts and projections; cProfile top functions."""
    ds, nodes, pods, revision = synthetic(args.nodes)
    status, _ = pipeline(ds, nodes, pods, revision)
    # A converged DaemonSet carries the status it would compute, so status_changed is False.
    ds["status"] = status_with({}, status, observed_generation=1)
    project_pod = make_pod_projection()
    variants = {"projected": ([project_node(n) for n in nodes], [project_pod(p) for p in pods]),
                "full_dicts": (nodes, pods)}
    out: dict[str, Any] = {"nodes": args.nodes, "pods": args.nodes, "iterations": args.iterations}
    for label, (n_objs, p_objs) in variants.items():
        pipeline(ds, n_objs, p_objs, revision)  # warm caches (interned strings, compiled selectors)
        stages: dict[str, float] = {}
        clock = _accumulate(stages)
        gc.collect()
        start = time.process_time()
        for _ in range(args.iterations):
            pipeline(ds, n_objs, p_objs, revision, clock)
        total = time.process_time() - start
        out[label] = {
            "cpu_ms_per_sync": round(1000 * total / args.iterations, 2),
            "stages_cpu_ms": {k: round(1000 * v / args.iterations, 2) for k, v in stages.items()},
        }
        log(f"in-process {label}", cpu_ms_per_sync=out[label]["cpu_ms_per_sync"])
    n_objs, p_objs = variants["projected"]
    # CPU time, not wall time: other processes on the shared cores would otherwise be billed
    # to whichever function happened to be running.
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(max(1, args.iterations // 4)):
        pipeline(ds, n_objs, p_objs, revision)
    profiler.disable()
    out["projected"]["cprofile_top"] = top_functions(profiler, limit=args.top)
    out["projected"]["cprofile_own_percent_by_file"] = by_file(profiler)
    out["pre_49502ed_cleanup_merge_cpu_ms"] = cleanup_merge_cost(p_objs)
    return out


def plan_sync_cost(args: argparse.Namespace) -> dict[str, Any]:
    """``plan_sync`` as the controller calls it, over the controller's indexed caches: one sync
    planned from scratch, and one planned incrementally after one node's labels changed."""
    ds, nodes, pods, revision = synthetic(args.nodes)
    ds["status"] = status_with({}, pipeline(ds, nodes, pods, revision)[0], observed_generation=1)
    node_store = Store(transform=project_node)
    pod_store = Store(indexers={BY_TARGET_NODE: by_target_node, BY_OWNER_UID: by_owner_uid,
                                ORPHANS_BY_NAMESPACE: orphans_by_namespace},
                      transform=make_pod_projection(keep_annotations=(IN_PLACE_ANNOTATION,)))
    revision_store = Store(indexers={BY_OWNER_UID: by_owner_uid, ORPHANS_BY_NAMESPACE: orphans_by_namespace})
    for node in nodes:
        node_store.upsert(node)
    for pod in pods:
        pod_store.upsert(pod)
    revision_store.upsert({**revision, "metadata": {**revision["metadata"], "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": ds["metadata"]["uid"],
         "controller": True}]}})
    view = CacheView(nodes=ReadOnlyStore(node_store), pods=ReadOnlyStore(pod_store),
                     revisions=ReadOnlyStore(revision_store))
    rules = Eligibility.of(ds)
    base = SyncSnapshot(ds=ds, view=view, satisfied=True, now=1_790_000_100.0, backoff=FailedPodBackoff(),
                        fit=rules.check)
    full_plan = plan_sync(base)
    assert full_plan.table is not None and not full_plan.pods.has_writes
    touched = dict(nodes[args.nodes // 2])
    touched["metadata"] = {**touched["metadata"], "resourceVersion": "999999",
                           "labels": {**touched["metadata"].get("labels", {}), "touched": "yes"}}
    node_store.upsert(touched)
    one = replace(base, previous=full_plan.table, changed=frozenset({touched["metadata"]["name"]}))
    out: dict[str, Any] = {}
    for label, snapshot in (("full", base), ("incremental_one_node", one)):
        plan_sync(snapshot)
        gc.collect()
        rounds = args.iterations if label == "full" else args.iterations * 50
        start = time.process_time()
        for _ in range(rounds):
            plan = plan_sync(snapshot)
        cpu = (time.process_time() - start) / rounds
        assert not plan.pods.has_writes and plan.status is not None
        out[label] = {"cpu_ms_per_plan": round(1000 * cpu, 3), "nodes_planned": plan.replanned}
        log(f"plan_sync {label}", cpu_ms=out[label]["cpu_ms_per_plan"], planned=plan.replanned)
    out["full_over_incremental"] = round(out["full"]["cpu_ms_per_plan"] /
                                         max(out["incremental_one_node"]["cpu_ms_per_plan"], 1e-6), 1)
    return out


def _accumulate(into: dict[str, float]) -> Callable[[str, float], None]:
    def clock(stage_name: str, seconds: float) -> None:
        into[stage_name] = into.get(stage_name, 0.0) + seconds

    return clock


def top_functions(profiler: cProfile.Profile, *, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` functions with the most own time (cProfile ``tottime``)."""
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    for (file, line, func), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        short = file.split("dsctl/", 1)[-1] if "dsctl/" in file else file.rsplit("/", 1)[-1]
        rows.append({"function": f"{func} ({short}:{line})", "calls": calls,
                     "own_percent": round(100 * tottime / total, 1), "cumulative_s": round(cumtime, 3)})
    rows.sort(key=lambda r: -r["own_percent"])
    return rows[:limit]


def by_file(profiler: cProfile.Profile, *, limit: int = 10) -> dict[str, float]:
    """Own-time share per source file; builtins and ``isinstance``'s ABC hook counted apart."""
    stats = pstats.Stats(profiler, stream=io.StringIO())
    table: dict[str, float] = {}
    total = 0.0
    for (file, _line, func), (_cc, _calls, tottime, _cum, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if file == "~":
            key = "builtins: isinstance" if "isinstance" in func else "builtins: other"
        elif "dsctl/" in file:
            key = file.split("dsctl/", 1)[-1]
        else:
            key = file.rsplit("/", 1)[-1]
        table[key] = table.get(key, 0.0) + tottime
        total += tottime
    best = sorted(table.items(), key=lambda kv: -kv[1])[:limit]
    return {k: round(100 * v / total, 1) for k, v in best}


def cleanup_merge_cost(pods: Sequence[Obj]) -> float:
    """CPU ms of the pod-list merge the controller did before history cleanup until commit 49502ed.

    It built ``[*pods, *(p for p in owned_by_uid if p not in pods)]`` on every sync: a list
    membership test per pod, quadratic in the pod count. Replicated here to size the fix.
    """
    start = time.process_time()
    merged = [*pods, *(p for p in pods if p not in pods)]
    assert len(merged) == len(pods)
    return round(1000 * (time.process_time() - start), 1)


# -- end to end ---------------------------------------------------------------------------------

async def end_to_end(args: argparse.Namespace) -> dict[str, Any]:
    """Converge one DaemonSet on the sim, then force ``--touches`` no-op syncs and time them."""
    sim_args = ["--log-level", "warning", "--pod-startup-seconds", "0.5"]
    async with SimProcess(nodes=args.nodes, args=sim_args, startup_timeout=300) as sim, \
            controller(sim.kubeconfig) as ctl:
        assert ctl.proc is not None
        pid = ctl.proc.pid
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=1000,
                                              user_agent="dsctl-bench/driver")
        try:
            start = time.monotonic()
            await client.create(DAEMONSETS, daemonset("agent"), namespace="default")
            status: dict[str, Any] = {}

            async def converged() -> bool:
                nonlocal status
                ds = await client.get(DAEMONSETS, "agent", namespace="default")
                status = ds.get("status") or {}
                return all(int(status.get(k) or 0) == args.nodes
                           for k in ("numberReady", "updatedNumberScheduled", "numberAvailable"))

            while not await converged():
                if time.monotonic() - start > args.timeout:
                    raise TimeoutError(f"no convergence in {args.timeout}s: {status}")
                await asyncio.sleep(0.5)
            converge_seconds = time.monotonic() - start
            log("converged", seconds=round(converge_seconds, 1))

            async def sync_count() -> dict[str, float]:
                _, text = await ctl.get("/metrics")
                return histogram(text, "dsctl_sync_duration_seconds")

            # Let requeues and late events settle: the sync count must stay put for 3 s.
            settled = await sync_count()
            quiet_since = time.monotonic()
            while time.monotonic() - quiet_since < 3.0:
                await asyncio.sleep(0.5)
                now_count = await sync_count()
                if now_count["count"] != settled["count"]:
                    settled, quiet_since = now_count, time.monotonic()
            touched_nodes: list[str] = []
            if args.touch_node:
                listed = await client.list(NODES)
                touched_nodes = sorted(str(n["metadata"]["name"]) for n in listed["items"])[:args.touches]
            cursor = (await sim.requests(since=0, limit=1))["next"]
            cursor = (await request_log(sim, since=cursor))[1]
            # The controller's idle CPU (bookmarks, timers) over a window, to subtract below.
            idle_before = proc_usage(pid)
            await asyncio.sleep(args.idle_seconds)
            idle_cpu = proc_usage(pid)["cpu_seconds"] - idle_before["cpu_seconds"]
            before, cpu_before = await sync_count(), proc_usage(pid)
            touch_start = time.monotonic()
            async with profile(pid if args.profile else None, f"{NAME}-end_to_end") as hot:
                # Touches spaced wider than one sync, so each causes exactly one; /metrics is
                # read only at the end, so scraping does not add to the controller's CPU.
                for i in range(args.touches):
                    if touched_nodes:
                        # One node changes in a way no DaemonSet's verdict reads: noted, no sync.
                        await client.patch(NODES, touched_nodes[i % len(touched_nodes)],
                                           {"metadata": {"labels": {"bench.dsctl.io/touch": str(i)}}})
                    await client.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {"bench/touch": str(i)}}},
                                       namespace="default")
                    await asyncio.sleep(args.touch_interval)
                cpu_after = proc_usage(pid)
                window = time.monotonic() - touch_start
                after = await sync_count()
                deadline = time.monotonic() + 60
                while after["count"] < before["count"] + args.touches and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                    after = await sync_count()
            records, _, _ = await request_log(sim, since=cursor)
        finally:
            await client.close()
    syncs = after["count"] - before["count"]
    busy_cpu = cpu_after["cpu_seconds"] - cpu_before["cpu_seconds"] - idle_cpu * window / args.idle_seconds
    writes = [f"{r['verb']} {r['resource']} {r['name']}" for r in records
              if str(r["user_agent"]).startswith("dsctl/") and r["verb"] not in ("get", "list", "watch")]
    out: dict[str, Any] = {
        "nodes": args.nodes, "converge_seconds": round(converge_seconds, 1), "touches": args.touches,
        "one_node_changed_per_touch": bool(args.touch_node),
        "syncs": syncs,
        "sync_duration_ms_mean": round(1000 * (after["sum"] - before["sum"]) / syncs, 2) if syncs else None,
        "controller_cpu_ms_per_sync": round(1000 * busy_cpu / syncs, 1) if syncs else None,
        "controller_idle_cpu_percent": round(100 * idle_cpu / args.idle_seconds, 2),
        "controller_rss_mib": cpu_after["rss_mib"],
        "controller_writes_during_touches": len(writes), "writes_sample": writes[:10],
    }
    if hot:
        out["profile"] = hot
    log("end-to-end", sync_ms=out["sync_duration_ms_mean"], cpu_ms=out["controller_cpu_ms_per_sync"])
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks noop-sync", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--top", type=int, default=15, help="cProfile rows to keep")
    parser.add_argument("--touches", type=int, default=20, help="forced syncs end to end")
    parser.add_argument("--touch-interval", type=float, default=1.0, help="seconds between touches")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="idle window for the CPU baseline")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--profile", action="store_true", help="py-spy the controller during the touches")
    parser.add_argument("--skip-end-to-end", action="store_true")
    parser.add_argument("--touch-node", action="store_true",
                        help="before each touch, change one node's labels (no verdict flips), so each "
                             "forced sync re-plans one changed node")
    parser.add_argument("--tag", default="", help="store the result as <name>-<tag>.json instead")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"benchmark": NAME, "environment": environment(), "in_process": in_process(args),
                              "plan_sync": plan_sync_cost(args)}
    if not args.skip_end_to_end:
        e2e = asyncio.run(end_to_end(args))
        result["end_to_end"] = e2e
        in_ms = result["in_process"]["projected"]["cpu_ms_per_sync"]
        if e2e.get("controller_cpu_ms_per_sync"):
            result["end_to_end_cpu_vs_in_process"] = round(e2e["controller_cpu_ms_per_sync"] / in_ms, 2)
    write_result(f"{NAME}-{args.tag}" if args.tag else NAME, result)


if __name__ == "__main__":
    main()
