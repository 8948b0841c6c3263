"""Shared plumbing of the controller benchmarks (``benchmarks/controller_*.py``).

Every controller benchmark runs three processes: the simulated cluster (``dsctl sim serve``),
the real controller (``python -m dsctl run``), and the benchmark itself, which drives the
cluster over HTTP and observes it. This module owns what they share:

- process accounting from ``/proc`` (CPU seconds, current and peak RSS), because the machine
  is noisy and wall time alone says little;
- a raw pod watch that stamps each pod with the monotonic time it was first seen, bound and
  Ready, so latencies do not depend on second-granular ``creationTimestamp``s;
- the DaemonSet manifest used everywhere, Prometheus text parsing, the sim's request log,
  percentiles, and writing ``benchmarks/results/<name>.json``.

Nothing here asserts a timing: the scripts report figures and ratios measured in one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.controllerproc import ControllerProcess  # noqa: E402
from tests.support.simproc import SimProcess  # noqa: E402

__all__ = [
    "RESULTS",
    "ROOT",
    "ControllerProcess",
    "CpuTrace",
    "PodTimes",
    "PodWatch",
    "SimProcess",
    "bucket_quantiles",
    "controller",
    "cprofile_window",
    "curve_of",
    "daemonset",
    "environment",
    "histogram",
    "log",
    "percentile",
    "proc_cpu_seconds",
    "proc_usage",
    "profile",
    "request_log",
    "server_cpu_apart",
    "wait_until",
    "watch_delivery",
    "write_result",
]

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(message: str, **fields: Any) -> None:
    """Progress to stderr (stdout carries only the final JSON)."""
    extra = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"[{time.strftime('%H:%M:%S')}] {message} {extra}".rstrip(), file=sys.stderr, flush=True)


def proc_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a live process: one read of ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    rest = stat[stat.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / _CLOCK_TICKS


def proc_usage(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) and current/peak RSS in MiB of a live process."""
    cpu = proc_cpu_seconds(pid)
    mem: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            mem[key] = int(value.split()[0]) / 1024
    return {"cpu_seconds": round(cpu, 2), "rss_mib": round(mem.get("VmRSS", 0.0), 1),
            "peak_rss_mib": round(mem.get("VmHWM", 0.0), 1)}


def environment() -> dict[str, Any]:
    """Machine and version facts recorded beside every result."""
    import kubernetes_asyncio

    commit = _short_commit(ROOT)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "dsctl"], capture_output=True,
                           text=True, check=False).stdout.strip()
    return {"commit": commit, "dsctl_modified_since_commit": bool(dirty), "cpus": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "aiohttp": aiohttp.__version__, "kubernetes_asyncio": kubernetes_asyncio.__version__,
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()], **cpu_facts(), **controller_tree()}


def _short_commit(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()


CONTROLLER_PATH = "DSCTL_BENCH_CONTROLLER_PATH"


def controller_tree() -> dict[str, Any]:
    """Which commit's controller runs, when ``DSCTL_BENCH_CONTROLLER_PATH`` gives it another tree's
    code (the path's first entry; its commit is recorded, never the path, which is this machine's).

    Raises ``SystemExit`` unless the controller's interpreter, started as :func:`controller`
    starts it, imports ``dsctl`` from that tree: a result must not name a controller that did
    not run.
    """
    path = os.environ.get(CONTROLLER_PATH)
    if not path:
        return {}
    tree = Path(path.split(os.pathsep)[0]).resolve()
    found = subprocess.run([sys.executable, "-P", "-c", "import dsctl; print(dsctl.__file__)"],
                           env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                           check=False).stdout.strip()
    if not found or Path(found).resolve().parent.parent != tree:
        raise SystemExit(f"{CONTROLLER_PATH}: the controller would import dsctl from {found or 'nowhere'}, "
                         f"not from {tree}")
    return {"controller_commit": _short_commit(tree) or "unknown"}


def cpu_facts() -> dict[str, Any]:
    """What kind of CPUs ran the benchmark (``/proc/cpuinfo``, sysfs): results from different
    hosts differ by more than most changes do, so each result says which host it came from."""
    facts: dict[str, Any] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key in ("model name", "cpu MHz", "cache size") and key.replace(" ", "_") not in facts:
                facts[key.replace(" ", "_")] = value
    with contextlib.suppress(OSError):
        siblings = Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list").read_text().strip()
        facts["cpu0_thread_siblings"] = siblings
    return facts


def write_result(name: str, result: Mapping[str, Any]) -> None:
    """Print the JSON summary and store it as ``benchmarks/results/<name>.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1)
    (RESULTS / f"{name}.json").write_text(text + "\n")
    print(text, flush=True)


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``; NaN when empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


async def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.05,
                     what: str = "condition") -> float:
    """Poll ``predicate`` until true; returns the seconds waited. Raises TimeoutError."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        await asyncio.sleep(interval)
    return time.monotonic() - start


def daemonset(name: str, *, namespace: str = "default", startup_seconds: float | None = None,
              node_selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A plain agent DaemonSet (RollingUpdate defaults) whose pods are labelled ``app=<name>``."""
    annotations = {"sim.dsctl.io/startup-seconds": str(startup_seconds)} if startup_seconds is not None else {}
    pod_spec: dict[str, Any] = {"containers": [{
        "name": "agent", "image": "registry.example/agent:1.0",
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
    }]}
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"bench": "dsctl"}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "bench": "dsctl"}, "annotations": annotations},
                         "spec": pod_spec},
        },
    }


def controller(kubeconfig: str, *extra: str, cprofile_to: Path | None = None) -> ControllerProcess:
    """The controller process at its production log level (the harness defaults to debug).

    With ``cprofile_to`` it runs under ``benchmarks/cprofiled.py``: send it ``SIGUSR1`` to start
    profiling and ``SIGUSR2`` to stop and write the stats there (see :func:`cprofile_window`).

    ``DSCTL_BENCH_CONTROLLER_PATH``, when set, is the controller's ``PYTHONPATH`` (the sim keeps
    this process's): an older tree's controller against this tree's simulator, so a before and
    after differ in the controller only. The interpreter then runs with ``-P``: ``python -m``
    puts the working directory first on ``sys.path``, and from the repository root that is this
    tree's own ``dsctl``, which would shadow the path (:func:`controller_tree` checks).
    """
    launcher = [str(Path(__file__).resolve().parent / "cprofiled.py"), str(cprofile_to)] if cprofile_to else []
    path = os.environ.get(CONTROLLER_PATH)
    if path:
        launcher = ["-P", *launcher]
    return ControllerProcess(kubeconfig, args=["--log-level", "info", *extra], launcher=launcher,
                             env={"PYTHONPATH": path} if path else None)


# -- profiling ----------------------------------------------------------------------------------

def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


@contextlib.asynccontextmanager
async def profile(pid: int | None, name: str, *, rate: int = 50) -> AsyncIterator[dict[str, Any]]:
    """Sample ``pid`` with py-spy for the duration of the block (no-op when ``pid`` is None).

    Writes collapsed stacks to ``benchmarks/results/<name>.folded`` and fills the yielded dict
    with the top functions by self and by inclusive samples once the block exits.
    """
    summary: dict[str, Any] = {}
    spy = _py_spy()
    if pid is None or spy is None:
        if pid is not None:
            summary["error"] = "py-spy not installed"
        yield summary
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}.folded"
    proc = await asyncio.create_subprocess_exec(
        spy, "record", "-p", str(pid), "-r", str(rate), "--nonblocking", "--function", "-f", "raw",
        "-o", str(out), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        yield summary
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 30)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if out.exists():
            summary.update(summarize_folded(out.read_text()))


@contextlib.asynccontextmanager
async def cprofile_window(pid: int | None, out: Path | None, *, top: int = 30) -> AsyncIterator[dict[str, Any]]:
    """Profile a controller started with ``controller(..., cprofile_to=out)`` for the block.

    A no-op when ``pid`` or ``out`` is None. Once the block exits, the yielded dict holds the
    profiled CPU seconds and the ``top`` functions by own and by cumulative CPU time.
    """
    summary: dict[str, Any] = {}
    if pid is None or out is None:
        yield summary
        return
    stats = str(out)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(stats)
    os.kill(pid, signal.SIGUSR1)
    try:
        yield summary
    finally:
        os.kill(pid, signal.SIGUSR2)
        try:
            await wait_until(lambda: os.path.exists(stats), timeout=30, interval=0.1, what="cProfile stats")
            await asyncio.sleep(0.5)  # the dump may still be being written
            summary.update(summarize_pstats(out, top=top))
        except TimeoutError:
            summary["error"] = "no stats written"


def _short_path(file: str) -> str:
    """A source path as profiles show it: from ``dsctl/`` or below ``site-packages``, else its name."""
    parts = Path(file).parts
    if "dsctl" in parts:
        return "/".join(parts[parts.index("dsctl"):])
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1:])
    return Path(file).name


def _pstats_name(func: tuple[str, int, str]) -> str:
    file, _, name = func
    return f"{name} ({_short_path(file)})"


def summarize_pstats(path: Path, *, top: int = 30) -> dict[str, Any]:
    """Total CPU seconds and the top functions (own and cumulative seconds, calls) of a stats file."""
    import pstats

    stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    total = sum(tt for _, _, tt, _, _ in stats.values())

    def ranked(index: int) -> list[list[Any]]:
        rows = sorted(stats.items(), key=lambda kv: -kv[1][index])[:top]
        return [[_pstats_name(func), round(row[index], 3), row[1]] for func, row in rows]

    return {"cpu_seconds": round(total, 3), "top_own_seconds_calls": ranked(2),
            "top_cumulative_seconds_calls": ranked(3)}


def _frame(frame: str) -> str:
    """``func (path/to/module.py:12)`` -> ``func (module.py)``: short, stable across lines."""
    func, _, where = frame.partition(" (")
    return f"{func} ({_short_path(where.rsplit(':', 1)[0].rstrip(')'))})"


# Leaves that mean "waiting": the event loop's poll, and executor threads blocked on their queue.
_IDLE_LEAVES = ("EpollSelector.select (", "_worker (thread.py)")


def summarize_folded(text: str, *, top: int = 20) -> dict[str, Any]:
    """Top functions by self and inclusive share of the busy samples in a py-spy collapsed file.

    py-spy reports a thread sitting in ``epoll_wait`` or on an executor queue as active;
    those samples are counted as ``idle_samples`` and left out of the percentages.
    """
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = idle = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue  # a frame name py-spy read torn from a running process (--nonblocking)
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";")]
        if frames[-1].startswith(_IDLE_LEAVES):
            idle += count
            continue
        total += count
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count

    def ranked(table: dict[str, int]) -> list[list[Any]]:
        best = sorted(table.items(), key=lambda kv: -kv[1])[:top]
        return [[frame, round(100 * n / total, 1)] for frame, n in best]

    return {"samples": total, "idle_samples": idle, "top_self_percent": ranked(own),
            "top_inclusive_percent": ranked(inclusive)}


# -- Prometheus text ----------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def histogram(text: str, name: str) -> dict[str, float]:
    """``{"count", "sum"}`` of an unlabelled histogram ``name`` in Prometheus text."""
    out = {"count": 0.0, "sum": 0.0}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        metric, value = match.group(1), float(match.group(3))
        if metric == f"{name}_count":
            out["count"] += value
        elif metric == f"{name}_sum":
            out["sum"] += value
    return out


def bucket_quantiles(text: str, name: str, *, labels: dict[str, str], quantiles: tuple[float, ...] = (0.5, 0.9, 0.99),
                     ) -> dict[str, float | None]:
    """Count, mean and quantiles (each the upper bound of the bucket it falls in; None past the
    last finite bucket) of histogram ``name``'s one series whose labels include ``labels``."""
    buckets: list[tuple[float, float]] = []
    count = total = 0.0
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or not match.group(1).startswith(name):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if any(found.get(k) != v for k, v in labels.items()):
            continue
        metric, value = match.group(1), float(match.group(3))
        if metric == f"{name}_bucket":
            buckets.append((float(found["le"]), value))
        elif metric == f"{name}_count":
            count = value
        elif metric == f"{name}_sum":
            total = value
    buckets.sort()
    out: dict[str, float | None] = {"count": count, "mean": total / count if count else None}
    for q in quantiles:
        bound = next((le for le, seen in buckets if count and seen >= q * count), None)
        out[f"p{round(q * 100)}"] = bound if bound is not None and bound != float("inf") else None
    return out


async def watch_delivery(sim: SimProcess, *, resource: str) -> dict[str, Any]:
    """How long the sim's watch streams of ``resource`` held a change before sending it
    (``sim_apiserver_watch_delivery_seconds``): batches sent, and per batch its oldest change's
    wait in ms (mean; p50/p90/p99 as bucket upper bounds). Empty on a sim without the metric."""
    status, text = await sim.request("GET", "/metrics")
    if status != 200 or not isinstance(text, str):
        return {}
    found = bucket_quantiles(text, "sim_apiserver_watch_delivery_seconds", labels={"resource": resource})
    if not found["count"]:
        return {}
    return {"batches": int(found["count"] or 0),
            **{f"{k}_ms": round(v * 1000, 2) for k, v in found.items() if k != "count" and v is not None}}


@contextlib.asynccontextmanager
async def server_cpu_apart(server: int, *, enabled: bool) -> AsyncIterator[None]:
    """With ``enabled``: the process ``server`` alone on the first CPU, this process (and what it
    starts meanwhile) on the others, as an API server and its clients run on different hosts.
    This process gets every CPU back after; the server exits with its phase."""
    if not enabled:
        yield
        return
    every = os.sched_getaffinity(0)
    first = min(every)
    os.sched_setaffinity(server, {first})
    os.sched_setaffinity(0, every - {first})
    try:
        yield
    finally:
        os.sched_setaffinity(0, every)


class CpuTrace:
    """A process's CPU seconds sampled against the wall clock, to read its CPU over any window
    found afterwards (a create window taken from the sim's request log, say).

    ``async with CpuTrace(pid) as trace: ...`` then ``trace.busy(t0, t1)``: the share of one CPU
    the process used between wall times ``t0`` and ``t1``, interpolated between samples.
    """

    def __init__(self, pid: int, *, every: float = 0.02) -> None:
        self._pid = pid
        self._every = every
        self._samples: list[tuple[float, float]] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> CpuTrace:
        self._task = asyncio.create_task(self._run(), name=f"cpu-trace-{self._pid}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._sample()

    def _sample(self) -> None:
        with contextlib.suppress(OSError):
            self._samples.append((time.time(), proc_cpu_seconds(self._pid)))

    async def _run(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(self._every)

    def _at(self, t: float) -> float:
        samples = self._samples
        for (t0, c0), (t1, c1) in itertools.pairwise(samples):
            if t0 <= t <= t1:
                return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        return samples[0][1] if t < samples[0][0] else samples[-1][1]

    def busy(self, t0: float, t1: float) -> float | None:
        """CPU seconds per second between ``t0`` and ``t1`` (wall clock), or None without samples."""
        if len(self._samples) < 2 or t1 <= t0:
            return None
        return round((self._at(t1) - self._at(t0)) / (t1 - t0), 3)


# -- the sim's request log ----------------------------------------------------------------------

async def request_log(sim: SimProcess, *, since: int) -> tuple[list[dict[str, Any]], int, int]:
    """Every request-log record after cursor ``since``: ``(records, next cursor, dropped)``."""
    records: list[dict[str, Any]] = []
    dropped = 0
    while True:
        page = await sim.requests(since=since, limit=10_000)
        records.extend(page["items"])
        dropped += int(page.get("dropped") or 0)
        if not page["items"]:
            return records, int(page["next"]), dropped
        since = int(page["next"])


# -- pod watch ----------------------------------------------------------------------------------

@dataclass
class PodTimes:
    """Monotonic times at which the watch first saw a pod in each state.

    ``node`` is the bound node, or until binding the node its affinity targets.
    """

    node: str = ""
    seen: float = 0.0
    bound: float = 0.0
    ready: float = 0.0


def curve_of(pods: Iterable[PodTimes], attr: str, *, since: float, points: int = 100) -> list[float]:
    """Seconds after ``since`` at which 1/points, 2/points ... of ``pods`` reached milestone ``attr``."""
    times = sorted(getattr(t, attr) - since for t in pods if getattr(t, attr))
    if not times:
        return []
    return [round(times[max(0, math.ceil(k * len(times) / points) - 1)], 3) for k in range(1, points + 1)]


@dataclass
class PodWatch:
    """Watches pods (optionally by label selector) from "now" and stamps each pod's milestones.

    Runs as a background task in the benchmark process; resumes from the last resourceVersion
    if the server ends the stream. ``pods`` maps ``namespace/name`` to ``PodTimes``; deleted
    pods stay in the map with ``deleted`` counting them. ``by_node`` indexes pod keys by node.
    """

    url: str
    label_selector: str = ""
    namespace: str = ""
    pods: dict[str, PodTimes] = field(default_factory=dict)
    by_node: dict[str, set[str]] = field(default_factory=dict)
    deleted: int = 0
    events: int = 0
    _task: asyncio.Task[None] | None = None
    _rv: str = ""
    _started: asyncio.Event = field(default_factory=asyncio.Event)

    def count(self, attr: str) -> int:
        """How many pods reached milestone ``attr`` ("seen", "bound" or "ready")."""
        return sum(1 for t in self.pods.values() if getattr(t, attr))

    def curve(self, attr: str, *, since: float, points: int = 100) -> list[float]:
        """Seconds after ``since`` at which 1/points, 2/points ... of the pods reached ``attr``."""
        return curve_of(self.pods.values(), attr, since=since, points=points)

    def last(self, attr: str) -> float:
        """The latest time any pod reached milestone ``attr``."""
        return max((getattr(t, attr) for t in self.pods.values()), default=0.0)

    async def start(self) -> None:
        """Open the stream; returns once the server has accepted it."""
        self._task = asyncio.create_task(self._run(), name="pod-watch")
        waiter = asyncio.ensure_future(self._started.wait())
        done, _ = await asyncio.wait({waiter, self._task}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        if self._task in done:
            self._task.result()
        waiter.cancel()

    async def stop(self) -> None:
        """Cancel the watch task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods" if self.namespace else "/api/v1/pods"
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with aiohttp.ClientSession(timeout=timeout, headers={"User-Agent": "dsctl-bench/watch"}) as http:
            while True:
                params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
                if self.label_selector:
                    params["labelSelector"] = self.label_selector
                if self._rv:
                    params["resourceVersion"] = self._rv
                async with http.get(self.url + path, params=params) as resp:
                    if resp.status != 200:
                        raise RuntimeError(f"watch failed: {resp.status} {await resp.text()}")
                    self._started.set()
                    async for line in _lines(resp):
                        self._observe(orjson.loads(line))

    def _observe(self, event: dict[str, Any]) -> None:
        now = time.monotonic()
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if meta.get("resourceVersion"):
            self._rv = meta["resourceVersion"]
        kind = event.get("type")
        if kind == "ERROR":
            raise RuntimeError(f"watch error: {obj}")
        if kind == "BOOKMARK":
            return
        self.events += 1
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if kind == "DELETED":
            self.deleted += 1
            return
        times = self.pods.get(key)
        if times is None:
            times = self.pods[key] = PodTimes(seen=now)
        spec = obj.get("spec") or {}
        node = spec.get("nodeName")
        if node and not times.bound:
            times.node, times.bound = node, now
        if not times.node:
            times.node = _affinity_target(spec)
        if times.node:
            self.by_node.setdefault(times.node, set()).add(key)
        if not times.ready and _is_ready(obj):
            times.ready = now


def _affinity_target(spec: Mapping[str, Any]) -> str:
    """The node a DaemonSet pod targets through its ``matchFields metadata.name`` affinity."""
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in affinity.get("nodeSelectorTerms") or ():
        for field_req in term.get("matchFields") or ():
            if field_req.get("key") == "metadata.name" and field_req.get("values"):
                return str(field_req["values"][0])
    return ""


def _is_ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


async def _lines(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    buffer = b""
    async for chunk in resp.content.iter_any():
        parts = (buffer + chunk).split(b"\n")
        buffer = parts.pop()
        for line in parts:
            if line.strip():
                yield line
