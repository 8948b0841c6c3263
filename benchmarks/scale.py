"""The simulator and the controller at the largest cluster sizes, in one run.

For each size (``--compare-nodes``, default 5,000, then ``--nodes``, default 100,000) a fresh
``dsctl sim serve`` with that many nodes and ``--daemonsets`` DaemonSets (default 10), each
with ``maxUnavailable: 10%``:

**The simulator** (``--only sim`` runs this part alone):

- ready time (process start to listening, the nodes created) and RSS, empty;
- the raw create rate: the first ``--raw-pods`` DaemonSet pods (exactly the pods the
  controller would create, owner and revision hash included) posted by the raw client to the
  fresh simulator; the same on a fresh simulator of each ``--raw-nodes`` size (default 1,000),
  so the rate's growth with cluster size comes from one host;
- the rest of the DaemonSets' pods posted the same way (all of them with ``--only sim``, all
  but the last otherwise), with the rate of each DaemonSet's worth; RSS and bytes per pod;
- a paginated list of all pods (``limit=500``, client-go's page size) and a watch with
  bookmarks from that list's resourceVersion, until its first bookmark.

**The controller** as it stands, on the same simulator (``--only controller`` skips the raw
sizes and the list and watch):

- caches synced: ``dsctl run`` to ``/readyz`` over every object above; RSS; the writes it
  makes to converge the DaemonSets whose pods already exist (none to pods, if it adopts them);
- cold start: the last DaemonSet created, to all its pods created (the simulator's request
  log: first and last create) and Ready (its status); the create rate against the raw rate of
  the last DaemonSet posted by the raw client, on the same simulator a moment earlier; the
  controller's CPU per created pod; RSS and bytes per cached pod;
- a forced relist (history compacted, every watch ended with 410): its duration, the
  controller's peak RSS over its steady RSS, its garbage collections, and the objects frozen
  after each cache relisted;
- node join: ``--joins`` nodes created one at a time, each until one pod of every DaemonSet
  targets it (p50/p99);
- steady state: every node reporting status at the kubelet's default cadence (a strategic
  merge patch of its conditions' heartbeats every ``nodeStatusReportFrequency``, 5 minutes
  with node leases: the lease renewals every 10 s are left out, the controller watches no
  node leases), ``--window-seconds`` measured: the controller's writes and CPU;
- node join: also the garbage collections and the slowest syncs in its window, which tell
  what a slow join waited for;
- a rolling update of the last DaemonSet (new image, ``maxUnavailable: 10%``): wall time to
  every pod updated and available, against the bound of start-up delay (with the simulator's
  termination cap) times the number of waves, and against the larger of that and the write
  bound, a delete and a create per node at the raw create rate (ADR 0196).

``--stages`` picks the controller stages after the cold start (relist, join, steady, rollout).

The controller runs with its client's rate limit lifted (the simulator is the limit under
test), the simulator with ``--pod-startup-seconds`` (default 0.5). ``--profile-sim`` and
``--profile-controller`` sample the simulator while the raw client posts and the controller
during its cold start, at the main size, with py-spy; the top costs go in the result.

Usage: ``python -m benchmarks scale [--nodes 100000] [--daemonsets 10] [--compare-nodes 5000]
[--raw-nodes 1000] [--only sim|controller] [--profile-sim] [--profile-controller]``; a quick
check: ``--nodes 2000 --compare-nodes 500 --raw-nodes 200 --joins 5 --window-seconds 10``.
Prints a table to stderr and the JSON summary to stdout; writes ``results/scale.json``
(``--name`` changes it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import aiohttp
import orjson

from benchmarks.controller_cold_start import create_window
from benchmarks.controller_node_join import time_joins
from benchmarks.harness.bounds import SIM_TERMINATION_CAP, rolling_update_bound
from benchmarks.harness.cluster import ControllerProcess, SimProcess, controller, daemonset, sim_args, sim_process
from benchmarks.harness.metrics import histogram, request_log, writes_by
from benchmarks.harness.podwatch import PodWatch
from benchmarks.harness.procs import CpuTrace, RssTrace, proc_usage, reset_peak_rss, rss_mib, wait_idle
from benchmarks.harness.profiling import profile, top_costs
from benchmarks.harness.rawclient import post_all
from benchmarks.harness.results import environment, log, write_result
from dsctl.daemonset.hashing import compute_hash
from dsctl.daemonset.history import collision_count
from dsctl.daemonset.template import pod_factory

NAME = "scale"
NAMESPACE = "default"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
DAEMONSETS = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets"
RAW_AGENT = "dsctl-bench/raw"
KUBELET_AGENT = "dsctl-bench/kubelet"
CONTROLLER_AGENT = "dsctl/"
STATUS_REPORT_SECONDS = 300.0
"""The kubelet's default ``nodeStatusReportFrequency`` with node leases: a node whose status
did not change reports it every 5 minutes."""
STAGES = ("relist", "join", "steady", "rollout")
"""The controller stages after its cold start, in the order they run (``--stages``)."""
UNLIMITED = ("--kube-api-qps", "1000000", "--kube-api-burst", "1000000")
WRAPPERS = (
    "RequestHandler._handle_request", "_handle (dsctl_sim/server.py)", "build_server.<locals>.handler",
    "_dispatch (dsctl_sim/server.py)", "_resource (dsctl_sim/server.py)", "handle_resource (dsctl_sim/handlers.py)",
    "WorkLoop.run", "WorkerPool._run", "WorkerPool._work", "StreamWriter.", "StreamResponse.write_eof",
    "Response.write_eof", "_SelectorSocketTransport.write",
)
"""Frames that only dispatch to the work below them: left out of the inclusive top costs."""


def costs(summary: dict[str, Any]) -> dict[str, Any]:
    """A profile's top five functions by own samples, and by inclusive samples below dispatch."""
    return {"top_self_percent": summary.get("top_self_percent", [])[:5],
            "top_inclusive_percent": top_costs(summary, count=5, skip=WRAPPERS)}


def ds_name(index: int) -> str:
    """The name of the ``index``-th benchmark DaemonSet."""
    return f"ds-{index:02d}"


def bench_daemonset(index: int, *, bulk: bool = False) -> dict[str, Any]:
    """A benchmark DaemonSet: the harness's agent, rolling ``maxUnavailable: 10%`` at a time.

    A ``bulk`` one's pods start at once (``sim.dsctl.io/startup-seconds: "0"``): the kubelet
    writes their status once, not twice, which is what makes filling a large cluster quick.
    """
    ds = daemonset(ds_name(index), startup_seconds=0.0 if bulk else None)
    ds["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}
    return ds


def pod_bodies(ds: dict[str, Any], nodes: Sequence[str], *, bound: bool = False) -> list[bytes]:
    """The pods the controller would create for ``ds`` (as stored) on ``nodes``, encoded;
    ``bound`` ones name their node as a direct-binding controller's do (no scheduler pass)."""
    template_hash = compute_hash(ds["spec"]["template"], collision_count(ds))
    make = pod_factory({**ds, "apiVersion": "apps/v1", "kind": "DaemonSet"}, hash=template_hash,
                       direct_binding=bound)
    return [orjson.dumps(make(node)) for node in nodes]


def node_names(count: int) -> list[str]:
    """``node-0`` ... ``node-{count-1}``, as ``dsctl sim serve --nodes`` names them."""
    return [f"node-{i}" for i in range(count)]


def mib(value: float) -> float:
    """A figure in MiB, rounded for the result."""
    return round(value, 1)


# -- the simulator ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def started_sim(args: argparse.Namespace, nodes: int) -> AsyncIterator[tuple[SimProcess, float]]:
    """A fresh simulator of ``nodes`` nodes and the seconds it took to be ready."""
    flags = sim_args(startup=args.pod_startup_seconds, extra=("--bookmark-seconds", str(args.bookmark_seconds)))
    start = time.monotonic()
    async with sim_process(nodes, flags, startup_timeout=1800) as sim:
        ready = time.monotonic() - start
        # Its loops' first pass over the nodes runs after it listens: measure nothing meanwhile.
        await wait_idle(sim.pid)
        yield sim, ready


async def create_daemonset(sim: SimProcess, index: int, *, bulk: bool = False) -> dict[str, Any]:
    """POST the ``index``-th benchmark DaemonSet; returns it as stored."""
    status, body = await sim.request("POST", DAEMONSETS, json=bench_daemonset(index, bulk=bulk))
    if status != 201:
        raise RuntimeError(f"{ds_name(index)} not created: {status} {body}")
    stored: dict[str, Any] = body
    return stored


async def quiet(sim: SimProcess, *, timeout: float, still: float = 2.0) -> float:
    """Seconds until the simulator's resourceVersion stops moving for ``still`` seconds: every
    pod bound and started, the control plane idle."""
    start = time.monotonic()
    last, since = "", time.monotonic()
    while time.monotonic() - start < timeout:
        rv = (await sim.stats())["resourceVersion"]
        if rv != last:
            last, since = rv, time.monotonic()
        elif time.monotonic() - since >= still:
            return round(time.monotonic() - start - still, 1)
        await asyncio.sleep(0.5)
    raise TimeoutError(f"the simulator kept writing for {timeout}s")


async def post_raw(sim: SimProcess, bodies: Sequence[bytes], *, concurrency: int) -> dict[str, Any]:
    """Post ``bodies`` with the raw client; the rate, errors and the simulator's CPU per create."""
    before = proc_usage(sim.pid)["cpu_seconds"]
    raw = await post_all(sim.url, PODS, bodies, concurrency=concurrency, agent=RAW_AGENT)
    cpu = proc_usage(sim.pid)["cpu_seconds"] - before
    if raw.errors:
        raise RuntimeError(f"raw creates failed: {raw.errors}")
    return {"pods": raw.requests, "seconds": round(raw.seconds, 2), "creates_per_second": round(raw.rate, 1),
            "sim_cpu_us_per_create": round(1e6 * cpu / raw.requests, 1) if raw.requests else None}


async def fill(sim: SimProcess, args: argparse.Namespace, *, nodes: int, daemonsets: int, first: dict[str, Any],
               sampled: int, baseline_last: bool) -> list[dict[str, Any]]:
    """Post the pods of ``daemonsets`` DaemonSets (the first already created, its pods on the
    first ``sampled`` nodes already posted) with the raw client; each one's rate.

    Measured posts send the controller's pods exactly (the scheduler binds them, they start
    after the simulator's delay): with ``baseline_last``, all of the last DaemonSet's (the raw
    rate the cold start is compared with, on the simulator as it then is). The rest is bulk,
    only there to fill the cluster: pods bound on create, of DaemonSets whose pods start at once.
    """
    names = node_names(nodes)
    posted: list[dict[str, Any]] = []
    for index in range(daemonsets):
        baseline = baseline_last and index == daemonsets - 1
        ds = first if index == 0 else await create_daemonset(sim, index, bulk=not baseline)
        left = names[sampled:] if index == 0 else names
        if not left:
            continue
        done = await post_raw(sim, pod_bodies(ds, left, bound=not baseline), concurrency=args.raw_concurrency)
        kind = "baseline" if baseline else "bulk, bound on create" + ("" if index == 0 else ", started at once")
        posted.append({"daemonset": ds_name(index), "posted": kind, **done})
        log("posted", daemonset=ds_name(index), kind=kind, rate=done["creates_per_second"],
            rss_mib=mib(rss_mib(sim.pid)[0]))
    return posted


async def sample_bodies(sim: SimProcess, nodes: int, pods: int) -> tuple[dict[str, Any], list[bytes]]:
    """The raw sample's pods for a fresh simulator: ``pods`` of the controller's pods, the first
    DaemonSet's on each node, then the next DaemonSet's; returns the first DaemonSet too."""
    bodies: list[bytes] = []
    first: dict[str, Any] = {}
    index = 0
    while len(bodies) < pods:
        ds = await create_daemonset(sim, index)
        first = first or ds
        bodies += pod_bodies(ds, node_names(nodes)[:pods - len(bodies)])
        index += 1
    return first, bodies


async def raw_sample(args: argparse.Namespace, sims: dict[int, SimProcess], *, main: int) -> dict[int, dict[str, Any]]:
    """The raw create rate of each fresh simulator in ``sims`` (by node count), posted in
    alternating blocks of ``--raw-block`` pods (ABBA order), each simulator left to finish a
    block's work before the next: the host's speed drifts, and every size sees the same drift.

    The rate is pods over the seconds spent posting; the CPU per create counts the simulator's
    work until it is idle again, what a block left for its loops included. The ``main``
    simulator's sample is its first DaemonSet's pods (as many as it has nodes, at most);
    a smaller one's spreads over as many DaemonSets as it takes.
    """
    bodies = {nodes: await sample_bodies(sim, nodes, min(args.raw_pods, nodes) if nodes == main else args.raw_pods)
              for nodes, sim in sims.items()}
    figures = {nodes: {"pods": 0, "seconds": 0.0, "cpu_seconds": 0.0} for nodes in sims}
    sizes = sorted(sims)
    for block, at in enumerate(range(0, args.raw_pods, args.raw_block)):
        for nodes in sizes if block % 2 == 0 else sizes[::-1]:
            sim = sims[nodes]
            chunk = bodies[nodes][1][at:at + args.raw_block]
            if not chunk:
                continue
            cpu = proc_usage(sim.pid)["cpu_seconds"]
            raw = await post_all(sim.url, PODS, chunk, concurrency=args.raw_concurrency, agent=RAW_AGENT)
            if raw.errors:
                raise RuntimeError(f"raw creates failed at {nodes} nodes: {raw.errors}")
            await wait_idle(sim.pid, window=0.5, timeout=args.timeout)
            figure = figures[nodes]
            figure["pods"] += raw.requests
            figure["seconds"] += raw.seconds
            figure["cpu_seconds"] += proc_usage(sim.pid)["cpu_seconds"] - cpu
    return {nodes: {"pods": int(f["pods"]), "seconds": round(f["seconds"], 2),
                    "creates_per_second": round(f["pods"] / f["seconds"], 1),
                    "sim_cpu_us_per_create": round(1e6 * f["cpu_seconds"] / f["pods"], 1), "first": bodies[nodes][0]}
            for nodes, f in figures.items()}


@contextlib.asynccontextmanager
async def pod_watch_drained(sim: SimProcess, *, enabled: bool) -> AsyncIterator[dict[str, int]]:
    """A pod watch open for the block, as an informer's would be, its bytes read and dropped:
    the simulator encodes and sends every change, which is part of what a stored pod costs.
    Yields its counts (bytes, reconnects)."""
    counts = {"bytes": 0, "watches": 0}
    if not enabled:
        yield counts
        return

    async def drain() -> None:
        rv = (await sim.stats())["resourceVersion"]
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with aiohttp.ClientSession(timeout=timeout, headers={"User-Agent": "dsctl-bench/watch"}) as http:
            while True:
                params = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": rv,
                          "timeoutSeconds": "3600"}
                counts["watches"] += 1
                async with http.get(sim.url + "/api/v1/pods", params=params) as resp:
                    async for chunk in resp.content.iter_any():
                        counts["bytes"] += len(chunk)
                rv = (await sim.stats())["resourceVersion"]  # a dropped stream resumes from now

    task = asyncio.create_task(drain(), name="pod-watch-drained")
    try:
        yield counts
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def list_all(sim: SimProcess, *, limit: int = 500) -> dict[str, Any]:
    """Every pod through ``limit``-sized pages, as a reflector lists; the time, and the RV.

    Only each page's head is decoded (the simulator writes ``metadata`` before ``items``) and
    its items counted, so the time is the server's and the transfer's, not this client's decoding.
    """
    start, pages, items, token, rv = time.monotonic(), 0, 0, "", ""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as http:
        while True:
            params = {"limit": str(limit), **({"continue": token} if token else {})}
            async with http.get(sim.url + "/api/v1/pods", params=params) as resp:
                body = await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"list page {pages}: {resp.status} {body[:200]!r}")
            head = body[:body.index(b',"items":[')] + b"}"
            meta = orjson.loads(head)["metadata"]
            pages += 1
            items += body.count(b'{"kind":"Pod",')
            rv = rv or meta["resourceVersion"]
            token = meta.get("continue", "")
            if not token:
                break
    return {"seconds": round(time.monotonic() - start, 1), "pages": pages, "items": items, "limit": limit,
            "resource_version": rv}


async def watch_to_bookmark(sim: SimProcess, *, since: str, timeout: float) -> dict[str, Any]:
    """A pod watch with bookmarks from ``since``: the seconds to its first bookmark, and the
    events before it."""
    start = time.monotonic()
    events = 0
    params = {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": since,
              "timeoutSeconds": str(int(timeout))}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout + 10)) as http, \
            http.get(sim.url + "/api/v1/pods", params=params) as resp:
        if resp.status != 200:
            raise RuntimeError(f"watch: {resp.status}")
        buffer = b""
        async for chunk in resp.content.iter_any():
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                kind = orjson.loads(line)["type"]
                if kind == "BOOKMARK":
                    return {"first_bookmark_seconds": round(time.monotonic() - start, 2), "events_before": events}
                if kind == "ERROR":
                    raise RuntimeError(f"watch error: {line[:300]!r}")
                events += 1
    raise RuntimeError("the watch ended without a bookmark")


# -- the controller -----------------------------------------------------------------------------


async def ds_status(sim: SimProcess, index: int) -> dict[str, Any]:
    """The status and generations of a benchmark DaemonSet."""
    status, body = await sim.request("GET", f"{DAEMONSETS}/{ds_name(index)}")
    if status != 200:
        raise RuntimeError(f"{ds_name(index)}: {status}")
    return {"generation": body["metadata"].get("generation"), **(body.get("status") or {})}


async def all_ready(sim: SimProcess, indexes: Sequence[int], desired: int) -> bool:
    """Whether every listed DaemonSet reports ``desired`` pods Ready."""
    for index in indexes:
        if int((await ds_status(sim, index)).get("numberReady") or 0) < desired:
            return False
    return True


async def poll(check: Callable[[], Awaitable[bool]], *, timeout: float, interval: float = 0.5, what: str) -> float:
    """Seconds until the async ``check`` passes; TimeoutError after ``timeout``."""
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        await asyncio.sleep(interval)
    return time.monotonic() - start


async def relists(ctl: ControllerProcess, resource: str) -> float:
    """How many full lists the controller's informer of ``resource`` has finished."""
    _, text = await ctl.get("/metrics")
    for line in str(text).splitlines():
        if line.startswith("informer_relists_total{") and f'resource="{resource}"' in line:
            return float(line.rpartition(" ")[2])
    return 0.0


async def records_since(sim: SimProcess, cursor: int) -> tuple[list[dict[str, Any]], int]:
    """The simulator's request log after ``cursor``, and the next cursor."""
    records, cursor, _ = await request_log(sim, since=cursor)
    return records, cursor


async def stage(result: dict[str, Any], key: str, body: Awaitable[dict[str, Any]]) -> None:
    """Run one stage into ``result[key]``; a failure is recorded there and the run goes on."""
    start = time.monotonic()
    try:
        result[key] = await body
    except Exception as err:  # the figures of the other stages still count
        log(f"{key} failed", error=repr(err))
        result[key] = {"error": repr(err)}
    result[key]["stage_seconds"] = round(time.monotonic() - start, 1)


async def cold_start(sim: SimProcess, ctl: ControllerProcess, pid: int, args: argparse.Namespace, *,
                     nodes: int, index: int, cursor: int, profiled: bool) -> dict[str, Any]:
    """The last DaemonSet created with the controller running, to all its pods created and Ready."""
    before_ctl, before_sim = proc_usage(pid), proc_usage(sim.pid)
    pods_before = int((await sim.stats())["objects"]["pods"])
    async with profile(pid if profiled else None, f"{args.name}-controller-cold-start") as hot, \
            CpuTrace(sim.pid) as sim_trace, CpuTrace(pid) as ctl_trace:
        start = time.monotonic()
        await create_daemonset(sim, index)

        async def created() -> bool:
            return int((await sim.stats())["objects"]["pods"]) >= pods_before + nodes

        await poll(created, timeout=args.timeout, interval=0.2, what="pods created")
        created_seconds = time.monotonic() - start
        await poll(lambda: all_ready(sim, [index], nodes), timeout=args.timeout, what="pods Ready")
        ready_seconds = time.monotonic() - start
    after_ctl, after_sim = proc_usage(pid), proc_usage(sim.pid)
    records, _ = await records_since(sim, cursor)
    window = create_window(records, agent=CONTROLLER_AGENT, traces={"sim": sim_trace, "controller": ctl_trace})
    window.pop("other_requests_in_window", None)
    cpu = after_ctl["cpu_seconds"] - before_ctl["cpu_seconds"]
    out = {"pods": nodes, "created_seconds": round(created_seconds, 1), "ready_seconds": round(ready_seconds, 1),
           "sim_log": window, "controller_cpu_seconds": round(cpu, 1),
           "controller_cpu_ms_per_pod": round(1000 * cpu / nodes, 3),
           "sim_cpu_seconds": round(after_sim["cpu_seconds"] - before_sim["cpu_seconds"], 1),
           "controller_writes": writes_by(records, agent=CONTROLLER_AGENT)}
    if hot:
        out["controller_profile"] = costs(hot)
    return out


async def forced_relist(sim: SimProcess, ctl: ControllerProcess, pid: int, *, timeout: float) -> dict[str, Any]:
    """Compact the simulator's history and end every watch with 410: the controller relists."""
    steady = rss_mib(pid)[0]
    pods_before, nodes_before = await relists(ctl, "pods"), await relists(ctl, "nodes")
    reset = reset_peak_rss(pid)
    collections_before, logged = await collections(ctl), len(ctl.logs)
    async with RssTrace(pid) as trace:
        start = time.monotonic()
        await sim.compact(expire_watches=True)

        async def relisted() -> bool:
            return (await relists(ctl, "pods") > pods_before) and (await relists(ctl, "nodes") > nodes_before)

        await poll(relisted, timeout=timeout, interval=0.25, what="relist")
        seconds = time.monotonic() - start
        await asyncio.sleep(2.0)  # what the relist left to collect
    after, kernel_peak = rss_mib(pid)
    peak = max(trace.peak_mib, kernel_peak if reset else 0.0)
    refrozen = [e for e in ctl.logs[logged:] if e.get("event") == "caches_refrozen"]
    return {"seconds": round(seconds, 1), "steady_rss_mib": mib(steady), "peak_rss_mib": mib(peak),
            "peak_over_steady": round(peak / steady, 3) if steady else None, "rss_after_mib": mib(after),
            "peak_from": "kernel high-water mark since reset" if reset else "sampled every 0.2 s",
            "controller_gc_in_window": collected_between(collections_before, await collections(ctl)),
            "refrozen": [{k: e.get(k) for k in ("resource", "frozen_objects")} for e in refrozen]}


class StatusReports:
    """Every node's status report at the kubelet's cadence: one strategic merge patch of the
    conditions' ``lastHeartbeatTime`` per node every ``period`` seconds, spread evenly."""

    def __init__(self, url: str, names: Sequence[str], *, period: float, concurrency: int = 16) -> None:
        self.url = url
        self.names = list(names)
        self.period = period
        self.concurrency = concurrency
        self.sent = 0
        self.errors: dict[int, int] = {}
        self.late_seconds = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Report in the background until ``stop``."""
        self._task = asyncio.create_task(self._run(), name="node-status-reports")

    async def stop(self) -> None:
        """Stop; re-raises a failure of the reporter."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        headers = {"Content-Type": "application/strategic-merge-patch+json", "User-Agent": KUBELET_AGENT}
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        slices = max(1, min(len(self.names), round(self.period * 20)))  # a batch every 50 ms
        per_slice = -(-len(self.names) // slices)
        async with aiohttp.ClientSession(connector=connector, headers=headers) as http:
            async def report(name: str, stamp: str) -> None:
                conditions = [{"type": kind, "lastHeartbeatTime": stamp}
                              for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")]
                body = orjson.dumps({"status": {"conditions": conditions}})
                async with http.patch(f"{self.url}/api/v1/nodes/{name}/status", data=body) as resp:
                    await resp.read()
                    if resp.status != 200:
                        self.errors[resp.status] = self.errors.get(resp.status, 0) + 1
                self.sent += 1

            origin, tick = time.monotonic(), 0
            while True:
                delay = origin + tick * self.period / slices - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                else:
                    self.late_seconds = max(self.late_seconds, -delay)
                first = (tick % slices) * per_slice
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                await asyncio.gather(*(report(n, stamp) for n in self.names[first:first + per_slice]))
                tick += 1


async def steady_state(sim: SimProcess, ctl: ControllerProcess, pid: int, *, nodes: int, window: float,
                       warmup: float) -> dict[str, Any]:
    """Node status reports at the kubelet's default cadence: the controller's writes and CPU."""
    _, cursor, _ = await request_log(sim, since=0)
    reports = StatusReports(sim.url, node_names(nodes), period=STATUS_REPORT_SECONDS)
    reports.start()
    try:
        await asyncio.sleep(warmup)
        _, cursor, _ = await request_log(sim, since=cursor)
        syncs_before = histogram((await ctl.get("/metrics"))[1], "dsctl_sync_duration_seconds")["count"]
        cpu_before, sent_before, start = proc_usage(pid)["cpu_seconds"], reports.sent, time.monotonic()
        await asyncio.sleep(window)
        cpu, measured = proc_usage(pid)["cpu_seconds"] - cpu_before, time.monotonic() - start
        sent = reports.sent - sent_before
        syncs = histogram((await ctl.get("/metrics"))[1], "dsctl_sync_duration_seconds")["count"] - syncs_before
    finally:
        await reports.stop()
    records, _ = await records_since(sim, cursor)
    writes = writes_by(records, agent=CONTROLLER_AGENT)
    return {"node_status_reports_per_second": round(sent / measured, 1), "report_errors": reports.errors,
            "reporter_late_seconds": round(reports.late_seconds, 2), "window_seconds": round(measured, 1),
            "controller_writes": sum(writes.values()), "controller_writes_by_verb": writes, "syncs": syncs,
            "controller_cpu_percent": round(100 * cpu / measured, 2),
            "controller_cpu_us_per_report": round(1e6 * cpu / sent, 1) if sent else None}


async def rolling_update(sim: SimProcess, pid: int, args: argparse.Namespace, *, index: int, desired: int,
                         profiled: bool, write_rate: float | None) -> dict[str, Any]:
    """A new image for one DaemonSet: wall time to every pod updated and available, against the
    wave bound and against the bound with the API's write rate (``write_rate``, the raw create
    rate of the same run; ADR 0196).

    The wait ends at ``--rollout-budget`` seconds: a rollout still running then is reported with
    its progress and the wall time its pace over the last minute implies.
    """
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "registry.example/agent:2.0"}]}}}}
    bound = rolling_update_bound(desired, "10%", startup=args.pod_startup_seconds, termination=SIM_TERMINATION_CAP,
                                 write_rate=write_rate)
    out: dict[str, Any] = {"pods": desired, "max_unavailable": "10%", "budget": bound.budget, "waves": bound.waves,
                           "startup_seconds": args.pod_startup_seconds, "termination_seconds": SIM_TERMINATION_CAP,
                           "bound_seconds": round(bound.seconds, 1), "write_rate": write_rate,
                           "write_bound_seconds": round(bound.write_seconds, 1),
                           "api_bound_seconds": round(bound.api_seconds, 1)}
    progress: list[tuple[float, int]] = []
    async with profile(pid if profiled else None, f"{args.name}-controller-rollout") as ctl_hot, \
            profile(sim.pid if profiled else None, f"{args.name}-sim-rollout") as sim_hot:
        start = time.monotonic()
        status, body = await sim.request("PATCH", f"{DAEMONSETS}/{ds_name(index)}", data=orjson.dumps(patch),
                                         headers={"Content-Type": "application/strategic-merge-patch+json"})
        if status != 200:
            raise RuntimeError(f"image update refused: {status} {body}")
        generation = int(body["metadata"]["generation"])
        finished = False
        while time.monotonic() - start < args.rollout_budget:
            st = await ds_status(sim, index)
            observed = int(st.get("observedGeneration") or 0) >= generation
            updated = int(st.get("updatedNumberScheduled") or 0) if observed else 0
            progress.append((time.monotonic() - start, updated))
            if (updated >= desired and int(st.get("numberAvailable") or 0) >= desired
                    and not int(st.get("numberUnavailable") or 0)):
                finished = True
                break
            await asyncio.sleep(0.5)
        wall = time.monotonic() - start
    by_minute, mark = [], 0.0
    for t, updated in progress:
        if t >= mark:
            by_minute.append(round(100 * updated / desired, 1))
            mark += 60.0
    out["updated_percent_each_minute"] = by_minute
    if finished:
        out.update(finished=True, wall_seconds=round(wall, 1), wall_over_bound=round(wall / bound.seconds, 2),
                   wall_over_api_bound=round(wall / bound.api_seconds, 2))
    else:
        recent = [(t, u) for t, u in progress if t >= wall - 60] or progress
        pace = (recent[-1][1] - recent[0][1]) / max(1e-9, recent[-1][0] - recent[0][0])
        estimate = wall + (desired - progress[-1][1]) / pace if pace > 0 else None
        out.update(finished=False, budget_seconds=args.rollout_budget, updated_at_budget=progress[-1][1],
                   estimated_wall_seconds=round(estimate, 1) if estimate else None,
                   wall_over_bound=round(estimate / bound.seconds, 2) if estimate else None,
                   wall_over_api_bound=round(estimate / bound.api_seconds, 2) if estimate else None)
    if ctl_hot:
        out["controller_profile"] = costs(ctl_hot)
    if sim_hot:
        out["sim_profile"] = costs(sim_hot)
    return out


async def controller_part(sim: SimProcess, args: argparse.Namespace, out: dict[str, Any], *, nodes: int,
                          cursor: int, profiled: bool) -> None:
    """Every controller figure at one size, on a simulator holding all DaemonSets' pods but the last's."""
    last = args.daemonsets - 1
    launched = time.monotonic()
    async with controller(sim.kubeconfig, *UNLIMITED) as ctl:
        assert ctl.proc is not None
        pid = ctl.proc.pid

        async def ready() -> bool:
            status, _ = await ctl.get("/readyz")
            return status == 200

        async with profile(pid if profiled else None, f"{args.name}-controller-startup") as hot:
            await poll(ready, timeout=args.timeout, interval=0.1, what="controller ready")
        out["caches_synced_seconds"] = round(time.monotonic() - launched, 1)
        if hot:
            out["controller_startup_profile"] = costs(hot)
        converged = await poll(lambda: all_ready(sim, range(last), nodes), timeout=args.timeout, what="converged")
        await asyncio.sleep(2.0)
        records, cursor = await records_since(sim, cursor)
        out["adopted"] = {"seconds_after_ready": round(converged, 1), "pods": last * nodes,
                          "controller_writes": writes_by(records, agent=CONTROLLER_AGENT),
                          "controller_rss_mib": mib(rss_mib(pid)[0])}
        log("controller synced", seconds=out["caches_synced_seconds"], rss_mib=out["adopted"]["controller_rss_mib"])
        await stage(out, "cold_start", cold_start(sim, ctl, pid, args, nodes=nodes, index=last, cursor=cursor,
                                                  profiled=profiled))
        total_pods = int((await sim.stats())["objects"]["pods"])
        await asyncio.sleep(5.0)  # status writes and requeues after the cold start
        rss = rss_mib(pid)[0]
        out["memory"] = {"pods": total_pods, "controller_rss_mib": mib(rss),
                         "bytes_per_pod_all_in": round(rss * 2**20 / total_pods) if total_pods else None,
                         "bytes_per_pod_added_by_cold_start": round(
                             (rss - out["adopted"]["controller_rss_mib"]) * 2**20 / nodes),
                         "sim_rss_mib": mib(rss_mib(sim.pid)[0])}
        log("cold start", **{k: out["cold_start"].get(k) for k in ("created_seconds", "ready_seconds")},
            rss_mib=mib(rss))
        if "relist" in args.stages:
            await stage(out, "forced_relist", forced_relist(sim, ctl, pid, timeout=args.timeout))
            log("relist", **{k: out["forced_relist"].get(k) for k in ("seconds", "peak_over_steady")})
        joined = 0
        if "join" in args.stages:
            await stage(out, "node_join", joins(sim, ctl, pid, args, nodes=nodes, profiled=profiled))
            log("node join", **(out["node_join"].get("all_pods_created") or {}))
            joined = args.joins
        if "steady" in args.stages:
            await stage(out, "steady_state", steady_state(sim, ctl, pid, nodes=nodes, window=args.window_seconds,
                                                          warmup=args.warmup_seconds))
            log("steady state",
                **{k: out["steady_state"].get(k) for k in ("controller_writes", "controller_cpu_percent")})
        if "rollout" in args.stages:
            await stage(out, "rolling_update", rolling_update(sim, pid, args, index=last, desired=nodes + joined,
                                                              profiled=profiled, write_rate=raw_write_rate(out)))
            log("rolling update", **{k: out["rolling_update"].get(k)
                                     for k in ("finished", "wall_seconds", "estimated_wall_seconds",
                                               "wall_over_bound", "wall_over_api_bound")})
        out["controller_final"] = proc_usage(pid)
        out["controller_launched_to_end_seconds"] = round(time.monotonic() - launched, 1)


def raw_write_rate(out: dict[str, Any]) -> float | None:
    """The raw create rate on this simulator as filled: the last DaemonSet the raw client
    posted (the cold start's baseline), else the fresh simulator's sample."""
    posted = (out.get("posted_by_daemonset") or [{}])[-1].get("creates_per_second")
    rate = posted or dig(out, ("raw", "creates_per_second"))
    return float(rate) if rate else None


async def joins(sim: SimProcess, ctl: ControllerProcess, pid: int, args: argparse.Namespace, *,
                nodes: int, profiled: bool) -> dict[str, Any]:
    """``--joins`` nodes created one at a time: until one pod of every DaemonSet targets each.

    The joins start once the controller is idle: after the forced relist of a million pods it
    stays busy for seconds after its informers report the relist done, and a join in that
    time measures the relist, not the join (the first join of a run that did not wait took
    ten times the others, with no collection and no full plan in the window). The wait is
    reported (``controller_settle_seconds``).
    """
    settle = await wait_idle(pid, share=0.2, timeout=120.0)
    rv = (await sim.stats())["resourceVersion"]
    watch = PodWatch(sim.url, since=rv)
    await watch.start()
    try:
        cpu_before = proc_usage(pid)["cpu_seconds"]
        collections_before, plans_before = await collections(ctl), await plans(ctl)
        logged = len(ctl.logs)
        async with profile(pid if profiled else None, f"{args.name}-controller-joins", rate=200) as hot:
            timed = await time_joins(sim, watch, joins=args.joins, daemonsets=args.daemonsets, first_index=nodes,
                                     interval=args.join_interval, timeout=60.0)
        cpu = proc_usage(pid)["cpu_seconds"] - cpu_before
        collections_after, plans_after = await collections(ctl), await plans(ctl)
    finally:
        await watch.stop()
    out = {"joins": args.joins, "daemonsets": args.daemonsets, "controller_settle_seconds": round(settle, 1), **timed,
           "controller_cpu_ms_per_join": round(1000 * cpu / args.joins, 1),
           "controller_gc_in_window": collected_between(collections_before, collections_after),
           "plans_in_window": {k: int(v - plans_before.get(k, 0.0)) for k, v in plans_after.items()},
           "slowest_syncs_in_window": slowest_syncs(ctl.logs[logged:])}
    if hot:
        out["controller_profile"] = costs(hot)
    return out


async def plans(ctl: ControllerProcess) -> dict[str, float]:
    """The controller's sync plans and planned nodes so far, by mode (full, incremental)."""
    _, text = await ctl.get("/metrics")
    out: dict[str, float] = {}
    for line in str(text).splitlines():
        for metric, label in (("dsctl_sync_plans_total", "plans"), ("dsctl_sync_planned_nodes_total", "nodes")):
            if line.startswith(metric + "{"):
                mode = line.split('mode="', 1)[1].split('"', 1)[0]
                out[f"{label}_{mode}"] = float(line.rpartition(" ")[2])
    return out


async def collections(ctl: ControllerProcess) -> dict[str, dict[str, float]]:
    """The controller's garbage collections so far, count and seconds by generation
    (``dsctl_gc_collection_seconds``; empty for a controller without the metric)."""
    _, text = await ctl.get("/metrics")
    out: dict[str, dict[str, float]] = {}
    for generation in ("0", "1", "2"):
        count = total = 0.0
        for line in str(text).splitlines():
            if f'generation="{generation}"' not in line or not line.startswith("dsctl_gc_collection_seconds_"):
                continue
            if line.startswith("dsctl_gc_collection_seconds_count"):
                count = float(line.rpartition(" ")[2])
            elif line.startswith("dsctl_gc_collection_seconds_sum"):
                total = float(line.rpartition(" ")[2])
        out[generation] = {"count": count, "sum": total}
    return out


def collected_between(before: dict[str, dict[str, float]],
                      after: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The collections, and their seconds, by generation between two ``collections`` readings."""
    return {g: {"collections": int(now["count"] - before[g]["count"]),
                "seconds": round(now["sum"] - before[g]["sum"], 3)}
            for g, now in after.items()}


def slowest_syncs(logs: Sequence[dict[str, Any]], *, count: int = 5) -> list[dict[str, Any]]:
    """The longest syncs the controller logged (those that wrote), with what they planned."""
    syncs = [e for e in logs if e.get("event") == "sync" and isinstance(e.get("duration_ms"), (int, float))]
    syncs.sort(key=lambda e: -float(e["duration_ms"]))
    keep = ("key", "duration_ms", "mode", "planned_nodes", "creates", "deletes", "status_only", "timestamp")
    return [{k: e.get(k) for k in keep} for e in syncs[:count]]


# -- one size, the run, the report --------------------------------------------------------------


async def one_size(args: argparse.Namespace, nodes: int, *, main_size: bool) -> dict[str, Any]:
    """Every figure at one cluster size."""
    out: dict[str, Any] = {"nodes": nodes, "daemonsets": args.daemonsets}
    with_controller = args.only != "sim"
    prefilled = args.daemonsets - 1 if with_controller else args.daemonsets
    async with started_sim(args, nodes) as (sim, ready):
        out["sim_ready_seconds"] = round(ready, 1)
        empty = rss_mib(sim.pid)[0]
        out["sim_rss_empty_mib"] = mib(empty)
        log("sim ready", nodes=nodes, seconds=out["sim_ready_seconds"], rss_mib=mib(empty))
        async with contextlib.AsyncExitStack() as stack:
            watched = await stack.enter_async_context(pod_watch_drained(sim, enabled=args.watch_while_posting))
            async with contextlib.AsyncExitStack() as beside:
                sims = {nodes: sim}
                for small in (args.raw_nodes if main_size and args.only != "controller" else []):
                    sims[small] = (await beside.enter_async_context(started_sim(args, small)))[0]
                    await beside.enter_async_context(pod_watch_drained(sims[small], enabled=args.watch_while_posting))
                sample = await raw_sample(args, sims, main=nodes)
            first = sample[nodes].pop("first")
            out["raw"] = sample.pop(nodes)
            out["raw_beside"] = {str(n): {k: v for k, v in f.items() if k != "first"} for n, f in sample.items()}
            log("raw", **{f"{n}_nodes": f["creates_per_second"] for n, f in {nodes: out["raw"], **sample}.items()})
            async with profile(sim.pid if args.profile_sim and main_size else None,
                               f"{args.name}-sim-posting") as hot:
                out["posted_by_daemonset"] = await fill(sim, args, nodes=nodes, daemonsets=prefilled, first=first,
                                                        sampled=min(args.raw_pods, nodes),
                                                        baseline_last=with_controller)
            out["pod_watch_while_posting"] = {"bytes": watched["bytes"], "streams": watched["watches"]}
        if hot:
            out["sim_profile_while_posting"] = costs(hot)
        out["sim_settle_seconds"] = await quiet(sim, timeout=args.timeout)
        await wait_idle(sim.pid, timeout=args.timeout)
        pods = int((await sim.stats())["objects"]["pods"])
        full = rss_mib(sim.pid)[0]
        out["sim_memory"] = {"pods": pods, "rss_mib": mib(full),
                             "bytes_per_pod": round((full - empty) * 2**20 / pods) if pods else None}
        log("sim filled", pods=pods, rss_mib=mib(full), bytes_per_pod=out["sim_memory"]["bytes_per_pod"])
        if args.only != "controller":
            await stage(out, "sim_list_all_pods", list_all(sim))
            since = out["sim_list_all_pods"].get("resource_version") or (await sim.stats())["resourceVersion"]
            await stage(out, "sim_watch_with_bookmarks",
                        watch_to_bookmark(sim, since=since, timeout=3 * args.bookmark_seconds + 30))
        if with_controller:
            _, cursor, _ = await request_log(sim, since=0)
            await controller_part(sim, args, out, nodes=nodes, cursor=cursor,
                                  profiled=args.profile_controller and main_size)
        final = proc_usage(sim.pid)
        out["sim_final"] = final
    return out


def growth(small: dict[str, Any], large: dict[str, Any]) -> dict[str, Any]:
    """The large size's figure over the small one's, for the figures whose growth matters."""
    paths = {
        "raw_creates_per_second": ("raw", "creates_per_second"),
        "sim_bytes_per_pod": ("sim_memory", "bytes_per_pod"),
        "caches_synced_seconds": ("caches_synced_seconds",),
        "controller_bytes_per_pod": ("memory", "bytes_per_pod_all_in"),
        "cold_start_creates_per_second": ("cold_start", "sim_log", "creates_per_second"),
        "controller_cpu_ms_per_created_pod": ("cold_start", "controller_cpu_ms_per_pod"),
        "node_join_p50_ms": ("node_join", "all_pods_created", "p50_ms"),
        "node_join_p99_ms": ("node_join", "all_pods_created", "p99_ms"),
        "steady_state_cpu_percent": ("steady_state", "controller_cpu_percent"),
        "rolling_update_wall_over_bound": ("rolling_update", "wall_over_bound"),
        "rolling_update_wall_over_api_bound": ("rolling_update", "wall_over_api_bound"),
    }
    out: dict[str, Any] = {}
    for name, path in paths.items():
        a, b = dig(small, path), dig(large, path)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
            out[name] = round(b / a, 3)
    return out


def dig(data: Any, path: Sequence[str]) -> Any:
    """``data[path[0]][path[1]]...``, or None where a step is missing."""
    for step in path:
        if not isinstance(data, dict):
            return None
        data = data.get(step)
    return data


def headline(result: dict[str, Any]) -> dict[str, Any]:
    """The figures issue 31 asks for, per size, and the ratios that judge them (never asserted)."""
    rows: dict[str, Any] = {}
    for size, figures in result["sizes"].items():
        cold = figures.get("cold_start") or {}
        rate = dig(cold, ("sim_log", "creates_per_second"))
        raw_last = (figures.get("posted_by_daemonset") or [{}])[-1].get("creates_per_second")
        rows[size] = {
            "sim_ready_seconds": figures.get("sim_ready_seconds"),
            "sim_rss_mib": dig(figures, ("sim_memory", "rss_mib")),
            "sim_bytes_per_pod": dig(figures, ("sim_memory", "bytes_per_pod")),
            "raw_creates_per_second": dig(figures, ("raw", "creates_per_second")),
            "caches_synced_seconds": figures.get("caches_synced_seconds"),
            "controller_rss_mib": dig(figures, ("memory", "controller_rss_mib")),
            "controller_bytes_per_pod": dig(figures, ("memory", "bytes_per_pod_all_in")),
            "relist_peak_over_steady": dig(figures, ("forced_relist", "peak_over_steady")),
            "cold_start_creates_per_second": rate,
            "cold_start_over_raw": round(rate / raw_last, 3) if rate and raw_last else None,
            "controller_cpu_ms_per_created_pod": cold.get("controller_cpu_ms_per_pod"),
            "node_join_p50_ms": dig(figures, ("node_join", "all_pods_created", "p50_ms")),
            "node_join_p99_ms": dig(figures, ("node_join", "all_pods_created", "p99_ms")),
            "steady_state_writes": dig(figures, ("steady_state", "controller_writes")),
            "steady_state_cpu_percent": dig(figures, ("steady_state", "controller_cpu_percent")),
            "rolling_update_wall_over_bound": dig(figures, ("rolling_update", "wall_over_bound")),
            "rolling_update_wall_over_api_bound": dig(figures, ("rolling_update", "wall_over_api_bound")),
            "rolling_update_finished": dig(figures, ("rolling_update", "finished")),
        }
    return rows


def table(rows: dict[str, Any]) -> str:
    """The headline rows as a text table, one column per size."""
    sizes = list(rows)
    names = list(next(iter(rows.values()))) if rows else []
    width = max((len(n) for n in names), default=10)
    lines = [f"{'':<{width}}  " + "  ".join(f"{s + ' nodes':>14}" for s in sizes)]
    for name in names:
        cells = "  ".join(f"{'-' if rows[s][name] is None else rows[s][name]!s:>14}" for s in sizes)
        lines.append(f"{name:<{width}}  {cells}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every size in order, smallest first; the growth ratios and the headline table last."""
    result: dict[str, Any] = {"benchmark": NAME, "environment": environment(), "args": vars(args), "sizes": {}}
    start = time.monotonic()
    sizes = [n for n in (args.compare_nodes, args.nodes) if n]
    for nodes in sizes:
        result["sizes"][str(nodes)] = await one_size(args, nodes, main_size=nodes == args.nodes)
    main = result["sizes"].get(str(args.nodes)) or {}
    beside = {size: figures["creates_per_second"] for size, figures in (main.get("raw_beside") or {}).items()}
    if beside and main.get("raw"):
        # Measured in alternating blocks on fresh simulators of each size: the growth of the
        # create path with cluster size, free of the host's drift.
        rate = main["raw"]["creates_per_second"]
        result["raw_create_rate"] = {"creates_per_second": {str(args.nodes): rate, **beside},
                                     "largest_over_each": {size: round(rate / r, 3) for size, r in beside.items()}}
    if len(sizes) == 2:
        result["growth"] = growth(result["sizes"][str(sizes[0])], result["sizes"][str(sizes[1])])
    result["headline"] = headline(result)
    result["run_seconds"] = round(time.monotonic() - start, 1)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--daemonsets", type=int, default=10)
    parser.add_argument("--compare-nodes", type=int, default=5000, help="the smaller size of the same run (0: none)")
    parser.add_argument("--raw-nodes", type=int, nargs="*", default=[1000],
                        help="fresh simulators whose raw create rate is measured beside the main size's, "
                             "in alternating blocks")
    parser.add_argument("--raw-pods", type=int, default=20_000, help="pods posted to measure the raw rate")
    parser.add_argument("--raw-block", type=int, default=1000, help="pods per block of the alternating raw sample")
    parser.add_argument("--raw-concurrency", type=int, default=32)
    parser.add_argument("--only", choices=["sim", "controller"], help="run one part")
    parser.add_argument("--pod-startup-seconds", type=float, default=0.5)
    parser.add_argument("--bookmark-seconds", type=float, default=5.0)
    parser.add_argument("--no-watch-while-posting", dest="watch_while_posting", action="store_false",
                        help="post without a pod watch open (default: one is, as an informer's would be)")
    parser.add_argument("--joins", type=int, default=50)
    parser.add_argument("--join-interval", type=float, default=0.2)
    parser.add_argument("--window-seconds", type=float, default=60.0, help="steady state, measured")
    parser.add_argument("--warmup-seconds", type=float, default=10.0, help="steady state, before measuring")
    parser.add_argument("--timeout", type=float, default=1800.0, help="ceiling of each wait, seconds")
    parser.add_argument("--profile-sim", action="store_true", help="py-spy on the simulator while the raw client posts")
    parser.add_argument("--profile-controller", action="store_true",
                        help="py-spy on the controller while it starts and during its cold start, and on both "
                             "processes during the rolling update")
    parser.add_argument("--rollout-budget", type=float, default=480.0,
                        help="seconds to wait for the rolling update; past it, its pace gives the estimate")
    parser.add_argument("--stages", nargs="*", choices=STAGES, default=list(STAGES),
                        help="the controller stages after the cold start to run (default: all)")
    parser.add_argument("--name", default=NAME, help="basename of the result file")
    args = parser.parse_args(argv)
    if args.daemonsets < 2 and args.only != "sim":
        parser.error("the controller part needs at least 2 DaemonSets: one adopted, one cold-started")
    result = asyncio.run(run(args))
    log("scale\n" + table(result["headline"]))
    write_result(args.name, result)


if __name__ == "__main__":
    main()
