"""Cold start of one DaemonSet to N Ready pods, against the sim's raw create throughput.

Three phases, each on a fresh ``dsctl sim serve --nodes N`` (a separate process, control
plane on: the scheduler binds pods and the kubelet makes them Ready after
``--pod-startup-seconds``), so every phase starts from the same empty cluster:

1. ``raw``: this process posts N pods exactly like the ones the controller would create
   (``dsctl.daemonset.template.new_pod``, minus the ownerReference so the sim's GC leaves them
   alone) with ``--raw-concurrency`` concurrent requests over one aiohttp pool and pre-encoded
   bodies. This is the "physical limit": no client can create pods faster on this sim.
   ``raw_slowstart`` posts the same pods in the controller's batches instead (groups of
   ``--burst-replicas``, each in slow-start batches of 1, 2, 4 ... that wait for their slowest
   request): the limit for any client that keeps those semantics. ``raw_owned`` posts them
   with their ownerReference, to a DaemonSet no controller acts on: the controller's pods
   exactly, which cost the sim more to admit and track. ``raw_slowstart_owned`` is both: the
   same pods in the same batches, so what is left between it and the controller is the
   controller's own cost. Controller phases report their rate against each raw phase that ran
   (``create_rate_vs_raw``, ``..._vs_raw_owned``, ``..._vs_raw_slowstart_owned``).
2. ``controller-default``: ``python -m dsctl run`` with its defaults (QPS 100, burst 200,
   8 workers, 250 creates per sync); one DaemonSet is created once its caches are synced.
3. ``controller-qps1000``: the same with ``--kube-api-qps 1000 --kube-api-burst 2000``, to show
   what the default rate limit costs.
4. ``controller-unlimited``: QPS and burst 1,000,000, so the client's token bucket never waits
   (QPS 1000 does, once the sim creates faster than 1,000 pods/s). This is the phase to compare
   with ``raw``; ``rate_limiter_wait_seconds`` shows whether a phase waited in the bucket.

For each phase: wall time to all pods created (first and last create as the sim logged them,
and the stalls: gaps of more than 10 ms between consecutive creates)
and to all pods Ready (observed on a pod watch in a niced process of its own,
``harness.podwatch``, so the observer does not compete with the measured client), creates/s, the
controller process's CPU seconds and RSS (``/proc``), the sim's CPU, the sim's and the
controller's share of a CPU inside the create window (``busy_in_window``: a sim below 1.0 sat
waiting for its client), and how long the sim's pod watch streams held a change before sending
it (``sim_pod_watch_delivery``). Ratios to the raw phase
are computed within the run, because the machine is shared and noisy. ``--pin`` gives the sim
the first CPU to itself and every client the others, as on separate hosts; it steadies the raw
rate.

Usage: ``python -m benchmarks cold-start [--nodes 5000] [--phases raw default qps1000 unlimited]
[--pin] [--rounds N] [--noise DUTY] [--timeline] [--profile | --profile-sim | --cprofile]``.
With several rounds the result pools them as ``cold-start-pool`` does (geometric mean of the
per-round ratios with a 90 % bootstrap interval, ratio of medians).
Each round records how steady the machine was (``machine``: a fixed loop's spread on each CPU,
a cross-CPU wake-up round trip and the steal share, see ``harness.machine``); ``--noise`` makes it unsteady on purpose.
Prints the JSON summary and writes ``benchmarks/results/controller_cold_start.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import os
import statistics
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from benchmarks.cold_start_pool import round_rates, rounds_of, summarize
from benchmarks.harness.cluster import SimProcess, controller, daemonset
from benchmarks.harness.machine import Steal, cpu_noise, probe, wakeup_probe
from benchmarks.harness.metrics import histogram, request_log, watch_delivery
from benchmarks.harness.podwatch import PodWatch, PodWatchApart
from benchmarks.harness.procs import CpuTrace, proc_usage, server_cpu_apart
from benchmarks.harness.profiling import cprofile_window, profile
from benchmarks.harness.results import RESULTS, environment, log, wait_until, write_result
from dsctl.daemonset.manage import slow_start_batches
from dsctl.daemonset.template import new_pod
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS

NAME = "controller_cold_start"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def sim_args(startup: float) -> list[str]:
    """Sim flags shared by every phase."""
    return ["--log-level", "warning", "--pod-startup-seconds", str(startup)]


def create_window(records: list[dict[str, Any]], *, agent: str, burst: int | None = None,
                  traces: Mapping[str, CpuTrace] | None = None) -> dict[str, Any]:
    """First/last pod-create time (sim clock) and count for requests whose user agent starts with ``agent``.

    With ``burst`` (a client that sends groups of ``burst`` creates in slow-start batches), the
    gaps between consecutive creates are also split by where they fall (``slow_start_gaps``).
    With ``traces``, each traced process's share of a CPU between the first and the last create
    (``busy_in_window``): whether the sim was the bottleneck of the window, and what else ran.
    """
    times = [r["time"] for r in records if client_pod_create(r, agent=agent) and r["code"] == 201]
    if not times:
        return {"creates": 0}
    span = max(times) - min(times)
    out = {"creates": len(times), "first_to_last_seconds": round(span, 3),
           "creates_per_second": round(len(times) / span, 1) if span > 0 else None,
           "stalls": stalls(times)}
    if burst:
        out["slow_start_gaps"] = slow_start_gaps(times, burst=burst)
    if traces:
        out["busy_in_window"] = {name: trace.busy(min(times), max(times)) for name, trace in traces.items()}
    out["other_requests_in_window"] = other_requests(records, start=min(times), end=max(times), agent=agent)
    return out


def client_pod_create(record: dict[str, Any], *, agent: str) -> bool:
    """Whether a sim request-log record is a pod create by the client whose user agent starts
    with ``agent`` (whatever its answer)."""
    return (record["verb"] == "create" and record["resource"] == "pods" and not record["subresource"]
            and str(record["user_agent"]).startswith(agent))


def other_requests(records: list[dict[str, Any]], *, start: float, end: float, agent: str) -> dict[str, int]:
    """What else the sim answered between ``start`` and ``end`` (its clock): every request but
    the measured client's pod creates and the watches already open, counted by user agent,
    verb and resource. Work the sim did for anyone but the create stream lengthens the window."""
    counts: dict[str, int] = {}
    for r in records:
        if not start <= r["time"] <= end or r["verb"] == "watch":
            continue
        if client_pod_create(r, agent=agent):
            continue
        resource = r["resource"] + (f"/{r['subresource']}" if r["subresource"] else "")
        key = f"{(str(r['user_agent']).split() or ['-'])[0]} {r['verb']} {resource or r['path']}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def slow_start_gaps(times: list[float], *, burst: int) -> dict[str, Any]:
    """The gaps between consecutive creates, by position in a group of ``burst`` slow-start creates.

    ``inside``: between two creates of one batch (the sim's own pace); ``after_<n>``: the barrier
    after the batch that brings the group to ``n`` creates (the batch waits for its slowest
    request); ``between_groups``: from a group's last create to the next group's first. For the
    controller a group is one sync, so that gap holds the wait for the sync's ADDED events,
    the next sync's planning and its first round trip. Assumes no create failed (a failed batch
    ends its group early and shifts the positions after it).
    """
    ends, done = set(), 0
    for size in slow_start_batches(burst):
        done += size
        ends.add(done)
    buckets: dict[str, list[float]] = {}
    for index, (a, b) in enumerate(itertools.pairwise(sorted(times))):
        position = index % burst + 1
        name = "between_groups" if position == burst else f"after_{position}" if position in ends else "inside"
        buckets.setdefault(name, []).append(b - a)
    return {name: {"count": len(gaps), "total_seconds": round(sum(gaps), 3),
                   "median_ms": round(1000 * statistics.median(gaps), 2)}
            for name, gaps in sorted(buckets.items(), key=lambda kv: -sum(kv[1]))}


def stalls(times: list[float], *, over: float = 0.01) -> dict[str, Any]:
    """Gaps longer than ``over`` seconds between consecutive creates: how many, their total, the longest.

    The raw client never pauses; the controller pauses between syncs (planning, the status
    write, waiting for its expectations), so this is the share of the window spent not creating.
    """
    ordered = sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(ordered) if b - a > over]
    return {"over_seconds": over, "count": len(gaps), "total_seconds": round(sum(gaps), 3),
            "longest_seconds": [round(g, 3) for g in sorted(gaps, reverse=True)[:5]]}


def observer(args: argparse.Namespace, url: str, *, label_selector: str) -> PodWatch | PodWatchApart:
    """The pod watch that stamps each pod: apart and niced unless ``--observer-in-process``."""
    if args.observer_in_process:
        return PodWatch(url, label_selector=label_selector)
    return PodWatchApart(url, label_selector=label_selector)


async def raw_phase(args: argparse.Namespace, *, slow_start: bool = False, owned: bool = False) -> dict[str, Any]:
    """Post N controller-shaped pods as fast as one client can; wait for them to be Ready.

    With ``slow_start`` the posts follow the controller's batches instead of a steady
    ``--raw-concurrency`` pipeline: ``--burst-replicas`` pods at a time, each group in
    slow-start batches (1, 2, 4, ...) that wait for their slowest request, over a pool of 100
    connections like the controller's. That is the fastest any client keeping those
    semantics can go: what is left between it and the controller is the controller's own cost.

    With ``owned`` the pods keep their ownerReference, to a DaemonSet created first (no
    controller runs, so nothing else acts on it): the sim then does for them what it does for
    the controller's pods (owner bookkeeping in its garbage collector).
    """
    async with SimProcess(nodes=args.nodes, args=sim_args(args.pod_startup_seconds), startup_timeout=300) as sim, \
            server_cpu_apart(sim.pid, enabled=args.pin):
        ds = daemonset("raw")
        if owned:
            status, created_ds = await sim.request("POST", "/apis/apps/v1/namespaces/default/daemonsets", json=ds)
            if status != 201:
                raise RuntimeError(f"raw_owned: DaemonSet not created: {status} {created_ds}")
            ds = {**created_ds, "apiVersion": "apps/v1", "kind": "DaemonSet"}
        else:
            ds["metadata"]["uid"] = "00000000-0000-4000-8000-000000000000"
        bodies = []
        for i in range(args.nodes):
            pod = new_pod(ds, f"node-{i}", hash="raw")
            if not owned:
                pod["metadata"].pop("ownerReferences", None)
            bodies.append(orjson.dumps(pod))
        watch = observer(args, sim.url, label_selector="app=raw")
        await watch.start()
        sim_before = proc_usage(sim.pid)
        counter = itertools.count()
        errors: dict[int, int] = {}
        connector = aiohttp.TCPConnector(limit=100 if slow_start else args.raw_concurrency)
        headers = {"Content-Type": "application/json", "User-Agent": "dsctl-bench/raw"}
        url = sim.url + "/api/v1/namespaces/default/pods"
        async with aiohttp.ClientSession(connector=connector, headers=headers) as http, CpuTrace(sim.pid) as sim_trace:
            async def worker() -> None:
                while (i := next(counter)) < len(bodies):
                    await post(i)

            async def post(i: int) -> None:
                async with http.post(url, data=bodies[i]) as resp:
                    await resp.read()
                    if resp.status != 201:
                        errors[resp.status] = errors.get(resp.status, 0) + 1

            label = "raw" + ("-slow-start" if slow_start else "") + ("-owned" if owned else "")
            async with profile(sim.pid if args.profile_sim else None, f"{NAME}-sim-{label}",
                               rate=args.profile_rate) as sim_hot:
                start, cpu_start = time.monotonic(), time.process_time()
                if slow_start:
                    for group in range(0, len(bodies), args.burst_replicas):
                        position = group
                        for size in slow_start_batches(min(args.burst_replicas, len(bodies) - group)):
                            await asyncio.gather(*(post(i) for i in range(position, position + size)))
                            position += size
                else:
                    await asyncio.gather(*(worker() for _ in range(args.raw_concurrency)))
                posted, posting_cpu = time.monotonic() - start, time.process_time() - cpu_start
                # Inside the sim's profile, as in the controller's phase: the Ready tail is its work too.
                await wait_until(lambda: watch.count("ready") >= args.nodes, timeout=args.timeout,
                                 what="raw pods Ready")
        ready = watch.last("ready") - start
        sim_after = proc_usage(sim.pid)
        records, _, dropped = await request_log(sim, since=0)
        delivery = await watch_delivery(sim, resource="pods")
        await watch.stop()
        curves = {"created": watch.curve("seen", since=start), "ready": watch.curve("ready", since=start)}
    out = {
        "concurrency": "slow-start batches" if slow_start else args.raw_concurrency, "owned": owned,
        "pods": args.nodes, "errors": errors,
        "post_seconds": round(posted, 3), "creates_per_second": round(args.nodes / posted, 1),
        # This process's CPU while posting: the client's, plus the driver's pod watch.
        "client_cpu_seconds_while_posting": round(posting_cpu, 2),
        "sim_log": create_window(records, agent="dsctl-bench/raw", burst=args.burst_replicas if slow_start else None,
                                 traces={"sim": sim_trace}),
        "request_log_dropped": dropped,
        "all_ready_seconds": round(ready, 3), "ready_pods_per_second": round(args.nodes / ready, 1),
        "sim_cpu_seconds": round(sim_after["cpu_seconds"] - sim_before["cpu_seconds"], 2),
        "sim_rss_mib": sim_after["rss_mib"], "sim_pod_watch_delivery": delivery, "curves_percent_to_seconds": curves,
    }
    if sim_hot:
        out["sim_profile"] = sim_hot
    log(label, **{k: out[k] for k in ("creates_per_second", "all_ready_seconds")})
    return out


async def controller_phase(args: argparse.Namespace, label: str, extra: list[str]) -> dict[str, Any]:
    """Start the controller on a fresh sim, create one DaemonSet, time it to N Ready pods."""
    async with SimProcess(nodes=args.nodes, args=sim_args(args.pod_startup_seconds), startup_timeout=300) as sim:
        launched = time.monotonic()
        stats = RESULTS / f"{NAME}-{label}.prof" if args.cprofile else None
        verbosity = ["--log-level", "debug"] if args.timeline else []
        # The controller, started from this process, inherits its CPUs: the ones the sim is not on.
        async with server_cpu_apart(sim.pid, enabled=args.pin), \
                controller(sim.kubeconfig, *extra, *verbosity, cprofile_to=stats) as ctl:
            assert ctl.proc is not None
            pid = ctl.proc.pid

            async def ready_probe() -> bool:
                status, _ = await ctl.get("/readyz")
                return status == 200

            deadline = time.monotonic() + 120
            while not await ready_probe():
                if time.monotonic() > deadline:
                    raise TimeoutError("controller not ready in 120s")
                await asyncio.sleep(0.1)
            startup = time.monotonic() - launched
            watch = observer(args, sim.url, label_selector="app=agent")
            await watch.start()
            ctl_before, sim_before = proc_usage(pid), proc_usage(sim.pid)
            client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=1000,
                                                  user_agent="dsctl-bench/driver")
            spied = pid if args.profile else None
            try:
                async with profile(spied, f"{NAME}-{label}", rate=args.profile_rate) as hot, \
                        profile(sim.pid if args.profile_sim else None, f"{NAME}-sim-{label}",
                                rate=args.profile_rate) as sim_hot, \
                        CpuTrace(sim.pid) as sim_trace, CpuTrace(pid) as ctl_trace:
                    async with cprofile_window(pid if stats else None, stats) as costs:
                        start = time.monotonic()
                        await client.create(DAEMONSETS, daemonset("agent"), namespace="default")
                        await wait_until(lambda: watch.count("seen") >= args.nodes, timeout=args.timeout,
                                         what=f"{label}: pods created")
                    created = watch.last("seen") - start
                    await wait_until(lambda: watch.count("ready") >= args.nodes, timeout=args.timeout,
                                     what=f"{label}: pods Ready")
                    ready = watch.last("ready") - start

                    async def status_ready() -> bool:
                        ds = await client.get(DAEMONSETS, "agent", namespace="default")
                        return bool(int((ds.get("status") or {}).get("numberReady") or 0) >= args.nodes)

                    while not await status_ready():
                        if time.monotonic() - start > args.timeout:
                            raise TimeoutError(f"{label}: status.numberReady never reached {args.nodes}")
                        await asyncio.sleep(0.2)
                    status_done = time.monotonic() - start
            finally:
                await client.close()
            ctl_after, sim_after = proc_usage(pid), proc_usage(sim.pid)
            records, _, dropped = await request_log(sim, since=0)
            delivery = await watch_delivery(sim, resource="pods")
            await watch.stop()
            curves = {"created": watch.curve("seen", since=start), "ready": watch.curve("ready", since=start)}
            _, metrics = await ctl.get("/metrics")
    writes: dict[str, int] = {}
    for r in records:
        if str(r["user_agent"]).startswith("dsctl/") and r["verb"] in WRITE_VERBS:
            key = f"{r['verb']} {r['resource']}{'/' + r['subresource'] if r['subresource'] else ''}"
            writes[key] = writes.get(key, 0) + 1
    extra_pods = len(watch.pods) - args.nodes
    out = {
        "args": extra, "controller_startup_to_ready_seconds": round(startup, 3),
        "all_created_seconds": round(created, 3), "created_pods_per_second": round(args.nodes / created, 1),
        "sim_log": create_window(records, agent="dsctl/", burst=args.burst_replicas,
                                 traces={"sim": sim_trace, "controller": ctl_trace}),
        "request_log_dropped": dropped,
        "all_ready_seconds": round(ready, 3), "ready_pods_per_second": round(args.nodes / ready, 1),
        "status_number_ready_seconds": round(status_done, 3),
        "pods_seen": len(watch.pods), "extra_pods": extra_pods,
        "controller_writes": writes,
        "controller_cpu_seconds": round(ctl_after["cpu_seconds"] - ctl_before["cpu_seconds"], 2),
        "controller_rss_mib": ctl_after["rss_mib"], "controller_peak_rss_mib": ctl_after["peak_rss_mib"],
        "sim_cpu_seconds": round(sim_after["cpu_seconds"] - sim_before["cpu_seconds"], 2),
        "sim_pod_watch_delivery": delivery,
        "sync_errors_logged": sum(1 for e in ctl.logs if e.get("event") == "sync_retry"),
        "controller_log_lines": len(ctl.raw), "top_log_events": top_events(ctl.logs),
        "syncs": int(histogram(metrics, "dsctl_sync_duration_seconds")["count"]),
        "rate_limiter_wait_seconds": round(histogram(metrics, "rest_client_rate_limiter_duration_seconds")["sum"], 3),
        "metrics_bytes": len(metrics), "curves_percent_to_seconds": curves,
    }
    if args.timeline:
        out["timeline"] = sync_timeline(records, ctl.logs)

    if hot:
        out["profile"] = hot
    if sim_hot:
        out["sim_profile"] = sim_hot
    if costs:
        out["cprofile"] = costs
    log(label, **{k: out[k] for k in ("all_created_seconds", "all_ready_seconds", "controller_cpu_seconds")})
    return out


def sync_timeline(records: list[dict[str, Any]], logs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each acting sync against the sim's clock of the controller's creates: how long it planned
    before its first create, how long it created, how long it ran after its last create, and
    the gap to the next sync; medians and sums over the creating syncs.

    Both clocks are this machine's wall clock: the sim logs requests with ``time.time()``, the
    controller stamps its log lines in UTC; a sync's start is its end minus its duration."""
    creates = sorted(r["time"] for r in records if client_pod_create(r, agent="dsctl/") and r["code"] == 201)
    syncs = []
    for entry in logs:
        if entry.get("event") != "sync" or "duration_ms" not in entry:
            continue
        end = datetime.datetime.fromisoformat(str(entry["timestamp"]).replace("Z", "+00:00")).timestamp()
        syncs.append({"start": end - float(entry["duration_ms"]) / 1000, "end": end,
                      "planned_nodes": entry.get("planned_nodes"), "creates": entry.get("creates", 0),
                      "status_only": entry.get("status_only")})
    syncs.sort(key=lambda sync: sync["start"])
    rows = []
    for at, sync in enumerate(syncs):
        mine = [t for t in creates if sync["start"] <= t <= sync["end"]]
        gap = syncs[at + 1]["start"] - sync["end"] if at + 1 < len(syncs) else None
        row = {"creates": sync["creates"], "planned_nodes": sync["planned_nodes"],
               "status_only": sync["status_only"],
               "seconds": round(sync["end"] - sync["start"], 4),
               "gap_to_next": None if gap is None else round(gap, 4)}
        if mine:
            row.update(before_first_create=round(mine[0] - sync["start"], 4),
                       creating=round(mine[-1] - mine[0], 4), after_last_create=round(sync["end"] - mine[-1], 4),
                       stalls_while_creating=stalls(mine)["total_seconds"])
        rows.append(row)
    creating = [row for row in rows if "creating" in row]

    def total(name: str) -> float:
        return round(sum(float(row[name]) for row in creating), 3)

    def median(name: str) -> float | None:
        return round(statistics.median(row[name] for row in creating), 4) if creating else None

    return {
        "syncs": len(rows), "creating_syncs": len(creating),
        "window_seconds": round(creates[-1] - creates[0], 3) if creates else None,
        "sum_seconds": {name: total(name) for name in ("before_first_create", "creating", "after_last_create",
                                                       "stalls_while_creating")},
        "median_seconds": {name: median(name) for name in ("before_first_create", "creating", "after_last_create")},
        "gaps_after_creating_syncs_seconds": round(sum(row["gap_to_next"] or 0 for row in creating), 3),
        "syncs_detail": rows,
    }


def top_events(logs: list[dict[str, Any]], *, top: int = 5) -> dict[str, int]:
    """The most frequent ``event`` names in the controller's JSON log."""
    counts: dict[str, int] = {}
    for entry in logs:
        name = str(entry.get("event", ""))
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:top])


RAW_PHASES = ("raw", "raw_slowstart", "raw_owned", "raw_slowstart_owned")
PHASES = {
    "default": [],
    "qps1000": ["--kube-api-qps", "1000", "--kube-api-burst", "2000"],
    # QPS 1000 still throttles once the sim creates faster than 1,000/s (2,000 burst + 1,000/s
    # is 5,000 tokens only after 3 s), so this is the phase that compares with the raw client.
    "unlimited": ["--kube-api-qps", "1000000", "--kube-api-burst", "1000000"],
}


async def one_round(args: argparse.Namespace, *, reverse: bool = False) -> dict[str, Any]:
    """Every phase once, in the order given (backwards with ``reverse``), and the
    controller-to-raw ratios of this round."""
    result: dict[str, Any] = {}
    raw_options = {"raw": {}, "raw_slowstart": {"slow_start": True}, "raw_owned": {"owned": True},
                   "raw_slowstart_owned": {"slow_start": True, "owned": True}}
    order = [p for p in RAW_PHASES if p in args.phases] + [p for p in args.phases if p not in RAW_PHASES]
    for phase in reversed(order) if reverse else order:
        if phase in RAW_PHASES:
            result[phase] = await raw_phase(args, **raw_options[phase])
        else:
            result[f"controller_{phase}"] = await controller_phase(args, phase, PHASES[phase])
    raw = result.get("raw")
    ratios: dict[str, Any] = {}
    if raw:
        for variant in RAW_PHASES[1:]:
            other = result.get(variant)
            if other:
                ratios[variant] = {"create_rate_vs_raw": round(
                    (other["sim_log"].get("creates_per_second") or 0.0) / raw["sim_log"]["creates_per_second"], 3)}
    for phase in args.phases:
        ctl = result.get(f"controller_{phase}")
        if not ctl:
            continue
        ctl_rate = ctl["sim_log"].get("creates_per_second") or 0.0
        ratios[phase] = {f"create_rate_vs_{base}": round(ctl_rate / rate, 3)
                         for base in ("raw", "raw_owned", "raw_slowstart_owned")
                         if (rate := (result.get(base) or {}).get("sim_log", {}).get("creates_per_second"))}
        if raw:
            ratios[phase].update(
                created_pods_per_second_vs_raw_post=round(
                    ctl["created_pods_per_second"] / raw["creates_per_second"], 3),
                all_ready_seconds_vs_raw=round(ctl["all_ready_seconds"] / raw["all_ready_seconds"], 3))
    if ratios:
        result["ratios"] = ratios
    return result


RATIO_KEYS = {"raw": "ratios", "raw_owned": "ratios_vs_raw_owned",
              "raw_slowstart_owned": "ratios_vs_raw_slowstart_owned"}
"""Each baseline's key in a round summary (and, with ``_median``, in the result)."""


def round_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The figures of one round that matter for the ratio, without the curves."""
    out: dict[str, Any] = {"loadavg": [round(x, 2) for x in os.getloadavg()]}
    for phase in RAW_PHASES:
        if result.get(phase):
            out[f"{phase}_creates_per_second"] = result[phase]["sim_log"].get("creates_per_second")
    for key, value in result.items():
        if key.startswith("controller_"):
            gaps = value["sim_log"].get("slow_start_gaps") or {}
            out[key] = {"creates_per_second": value["sim_log"].get("creates_per_second"),
                        "stall_seconds": value["sim_log"].get("stalls", {}).get("total_seconds"),
                        "between_syncs_seconds": (gaps.get("between_groups") or {}).get("total_seconds"),
                        "controller_cpu_seconds": value["controller_cpu_seconds"], "syncs": value["syncs"]}
    in_window = {}
    for key, value in result.items():
        window = (value.get("sim_log") if isinstance(value, dict) else None) or {}
        busy = window.get("busy_in_window", {}).get("sim")
        if busy is not None:
            span = float(window["first_to_last_seconds"])
            in_window[key.removeprefix("controller_")] = {"sim_cpu_seconds": round(busy * span, 3),
                                                          "sim_idle_seconds": round((1 - busy) * span, 3)}
    if in_window:
        # The sim's CPU in the create window, and the time it waited for its clients: a phase is
        # slower because the sim did more, or because it sat waiting.
        out["sim_in_create_window"] = in_window
    for base, key in RATIO_KEYS.items():
        found = {phase: r[f"create_rate_vs_{base}"] for phase, r in (result.get("ratios") or {}).items()
                 if r.get(f"create_rate_vs_{base}") is not None}
        if found or base == "raw":
            out[key] = found
    return out



def rate_medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each phase's median create rate over the rounds, and each controller phase's median over
    the raw one. The raw rate moves most from round to round; the ratio of the medians is less
    sensitive to one fast or slow raw round than the median of the per-round ratios."""
    rates: dict[str, list[float]] = {}
    for summary in rounds:
        for phase, value in round_rates(summary).items():
            rates.setdefault(phase, []).append(value)
    medians = {phase: statistics.median(values) for phase, values in rates.items()}
    out: dict[str, Any] = {"rate_median": {phase: round(value, 1) for phase, value in sorted(medians.items())}}
    raw = medians.get("raw")
    out["ratio_of_medians"] = {phase: round(value / raw, 3) for phase, value in sorted(medians.items())
                               if phase != "raw"} if raw else {}
    for base in ("raw_owned", "raw_slowstart_owned"):
        if rate := medians.get(base):
            controllers = {phase: value for phase, value in medians.items() if not phase.startswith("raw")}
            out[f"ratio_of_medians_vs_{base}"] = {phase: round(value / rate, 3)
                                                  for phase, value in sorted(controllers.items())}
    return out


def pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each controller phase over each baseline, as ``cold_start_pool`` summarizes many runs:
    the geometric mean of the per-round ratios with its 90 % bootstrap interval, and the ratio
    of medians."""
    out: dict[str, Any] = {}
    summary = {"rounds": rounds}
    phases = sorted({phase for r in rounds for phase in round_rates(r) if not phase.startswith("raw")})
    for base in RATIO_KEYS:
        suffix = "" if base == "raw" else f"_vs_{base}"
        for phase in phases:
            found = rounds_of(summary, baseline=base, phase=phase)
            if len(found) > 1:
                out.setdefault(f"pooled{suffix}", {})[phase] = summarize(found)
    return out


def window_medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per phase, the medians over the rounds of the sim's CPU and idle seconds in the create window."""
    found: dict[str, dict[str, list[float]]] = {}
    for summary in rounds:
        for phase, figures in (summary.get("sim_in_create_window") or {}).items():
            for name, value in figures.items():
                found.setdefault(phase, {}).setdefault(name, []).append(float(value))
    return {"sim_in_create_window_median": {
        phase: {name: round(statistics.median(values), 3) for name, values in figures.items()}
        for phase, figures in sorted(found.items())}} if found else {}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """``--rounds`` rounds of every phase; the full figures of the first, a summary of each.

    The machine is shared: several short rounds, raw and controller side by side in each,
    say more about the ratio than one long run.
    """
    result: dict[str, Any] = {"benchmark": NAME, "nodes": args.nodes,
                              "pod_startup_seconds": args.pod_startup_seconds, "environment": environment()}
    rounds = []
    run_steal = Steal.now()
    for index in range(args.rounds):
        # How steady the machine is now: a ratio of phases seconds apart means little on a
        # machine whose speed moves by a fifth from one second to the next (harness.machine).
        steadiness, wakeup, steal = probe(), wakeup_probe(), Steal.now()
        # Odd rounds run the phases backwards, so a drift of the machine within a round
        # favours neither the raw client nor the controller over the whole run.
        outcome = await one_round(args, reverse=args.counterbalance and index % 2 == 1)
        if index == 0:
            result.update(outcome)
        rounds.append(round_summary(outcome))
        rounds[-1]["machine"] = {"loop_spread": steadiness["spread_max"],
                                 "loop_median_ms": {cpu: s["median_ms"] for cpu, s in steadiness["per_cpu"].items()},
                                 "wakeup_round_trip": wakeup,
                                 "steal_share": round(Steal.now().share_since(steal), 4)}
        log(f"round {index + 1}/{args.rounds}", **rounds[-1]["ratios"], loop_spread=steadiness["spread_max"],
            wakeup_us=wakeup.get("median_us"))
    result["machine"] = {"noise_duty": args.noise, "steal_share": round(Steal.now().share_since(run_steal), 4),
                         "probe_after": probe()}
    # Always kept, so that cold_start_pool can pool single-round runs with the rest.
    result["rounds"] = rounds
    if args.rounds > 1:
        result.update(rate_medians(rounds))
        result.update(pooled(rounds))
        result.update(window_medians(rounds))
    plot(result)
    return result


def plot(result: dict[str, Any]) -> None:
    """``results/controller_cold_start.png``: pods created and Ready over time, per phase."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for key, color in (("raw", "tab:green"), ("controller_default", "tab:blue"),
                       ("controller_qps1000", "tab:orange"), ("controller_unlimited", "tab:red")):
        curves = (result.get(key) or {}).get("curves_percent_to_seconds")
        if not curves:
            continue
        pods = [result["nodes"] * k / len(curves["created"]) for k in range(1, len(curves["created"]) + 1)]
        ax.plot(curves["created"], pods, color=color, label=f"{key}: created")
        ax.plot(curves["ready"], pods, color=color, linestyle="--", label=f"{key}: Ready")
    ax.set_xlabel("seconds since the DaemonSet (raw: the first POST)")
    ax.set_ylabel("pods")
    ax.set_title(f"Cold start of one DaemonSet on {result['nodes']} simulated nodes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / f"{NAME}.png", dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks cold-start", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pod-startup-seconds", type=float, default=1.0)
    parser.add_argument("--raw-concurrency", type=int, default=32)
    parser.add_argument("--burst-replicas", type=int, default=250,
                        help="raw_slowstart: pods per group of slow-start batches (the controller's default)")
    parser.add_argument("--phases", nargs="+", default=["raw", "default", "qps1000", "unlimited"],
                        choices=[*RAW_PHASES, *PHASES])
    parser.add_argument("--profile", action="store_true",
                        help="sample the controller with py-spy during each controller phase")
    parser.add_argument("--no-counterbalance", dest="counterbalance", action="store_false",
                        help="run the phases in the same order every round (default: odd rounds backwards)")
    parser.add_argument("--pin", action="store_true",
                        help="run the sim alone on the first CPU and every client (this process, the controller) "
                             "on the others, as on separate hosts (Linux; needs 2 CPUs)")
    parser.add_argument("--profile-sim", action="store_true",
                        help="sample the simulator with py-spy from each phase's first create until all its "
                             "pods are Ready: results/<name>-sim-<phase>.folded")
    parser.add_argument("--profile-rate", type=int, default=50, help="py-spy samples per second")
    parser.add_argument("--cprofile", action="store_true",
                        help="run the controller under cProfile (CPU clock) from the DaemonSet's POST to "
                             "the last pod seen; stats in results/<name>-<phase>.prof, top functions "
                             "in the JSON. Slows the controller: its rates are then not comparable")
    parser.add_argument("--rounds", type=int, default=1,
                        help="repeat every phase this many times; the JSON keeps a summary and the median ratio")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-phase wait ceiling, seconds")
    parser.add_argument("--observer-in-process", action="store_true",
                        help="watch pods from this process, not from a niced process of its "
                             "own (to compare: in-process, the observer competes with the measured client)")
    parser.add_argument("--timeline", action="store_true",
                        help="controller phases log at debug level, and the JSON gets each sync's "
                             "planning, creating and tail time against the sim's create log")
    parser.add_argument("--noise", type=float, default=0.0, metavar="DUTY",
                        help="the control experiment for an unsteady machine: one process per CPU busy for a "
                             "random share (DUTY on average) of every 20 ms, as a noisy neighbour is")
    args = parser.parse_args(argv)
    if not 0 <= args.noise < 1:
        parser.error(f"--noise: {args.noise} is not a share of a CPU in [0, 1)")
    if args.pin and len(os.sched_getaffinity(0)) < 2:
        parser.error("--pin needs at least 2 CPUs: one for the sim, the rest for its clients")
    with cpu_noise(args.noise):
        write_result(NAME, asyncio.run(run(args)))


if __name__ == "__main__":
    main()
