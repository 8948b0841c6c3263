"""A pod watch that stamps each pod with the moment it was first seen, bound and Ready.

``PodWatch`` watches pods from "now" and stamps each one on the monotonic clock, so latencies
do not depend on second-granular ``creationTimestamp``s. It decodes every event of every pod:
in a 5,000-node cold start that is about a sixth of a CPU, which in the benchmark's own
process competes with whatever is measured (the simulator waited measurably longer for the
controller with the observer beside it). ``PodWatchApart`` runs the same watch in a process of
its own, niced to 19, so it only uses CPU the measured client leaves; its stamps stay on the
shared monotonic clock (``CLOCK_MONOTONIC`` is system-wide on Linux). The price: while the
clients' CPU is busy a stamp can trail its event, so Ready times are upper bounds. Create
rates come from the simulator's request log, not from these stamps.

The parent of a ``PodWatchApart`` sees counts and latest times as the child reports them
(every 20 ms when they changed); ``stop`` collects every pod's stamps for the curves. The
child is ``python -m benchmarks.harness.podwatch URL SELECTOR`` (stdin ``stop`` ends it).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import aiohttp
import orjson

from benchmarks.harness.results import ROOT

__all__ = ["PodTimes", "PodWatch", "PodWatchApart", "curve_of"]

NICE = 19
REPORT_SECONDS = 0.02


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
    """Watches pods (optionally by label selector) and stamps each pod's milestones.

    Runs as a background task in the benchmark process; resumes from the last resourceVersion
    if the server ends the stream. ``pods`` maps ``namespace/name`` to ``PodTimes``; deleted
    pods stay in the map with ``deleted`` counting them. ``by_node`` indexes pod keys by node.
    Without ``since`` every current pod arrives first; with a resourceVersion, only what
    changes after it (in a large cluster, the current pods would cost the benchmark dearly).
    """

    url: str
    label_selector: str = ""
    namespace: str = ""
    since: str = ""
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
        self._rv = self.since
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


class PodWatchApart:
    """The ``PodWatch`` interface the cold start uses, with the watch in a child process."""

    def __init__(self, url: str, *, label_selector: str = "") -> None:
        self._args = (url, label_selector)
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._counts: dict[str, Any] = {}
        self._started = asyncio.Event()
        self.pods: dict[str, PodTimes] = {}

    async def start(self) -> None:
        """Start the child; returns once its watch is open."""
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.harness.podwatch", *self._args, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, limit=1 << 26, cwd=ROOT)
        self._reader = asyncio.create_task(self._read(), name="pod-watch-apart")
        started = asyncio.ensure_future(self._started.wait())
        done, _ = await asyncio.wait({started, self._reader}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if self._reader in done:
            self._reader.result()
        if not self._started.is_set():
            raise TimeoutError("pod watch process did not start in 60 s")

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        async for line in self._proc.stdout:
            message = orjson.loads(line)
            if "pods" in message:
                self.pods = {key: PodTimes(**times) for key, times in message["pods"].items()}
                return
            self._counts = message
            self._started.set()
        raise RuntimeError(f"pod watch process ended: exit {await self._proc.wait()}")

    def count(self, attr: str) -> int:
        """Pods that reached ``seen`` or ``ready``, as last reported."""
        return int(self._counts.get(attr, 0))

    def last(self, attr: str) -> float:
        """The latest ``seen`` or ``ready`` stamp, as last reported."""
        return float(self._counts.get(f"last_{attr}", 0.0))

    def curve(self, attr: str, *, since: float, points: int = 100) -> list[float]:
        """As ``PodWatch.curve``, from the stamps ``stop`` collected."""
        return curve_of(self.pods.values(), attr, since=since, points=points)

    async def stop(self) -> None:
        """Collect every pod's stamps and end the child."""
        proc, reader = self._proc, self._reader
        if proc is None or reader is None:
            return
        if proc.stdin is not None and proc.returncode is None:
            with contextlib.suppress(ConnectionError):
                proc.stdin.write(b"stop\n")
                await proc.stdin.drain()
        try:
            await asyncio.wait_for(reader, timeout=60)
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()


async def _child(url: str, selector: str) -> None:
    os.nice(NICE)
    watch = PodWatch(url, label_selector=selector)
    await watch.start()
    out = sys.stdout.buffer

    def counts() -> bytes:
        return orjson.dumps({"seen": watch.count("seen"), "ready": watch.count("ready"),
                             "last_seen": watch.last("seen"), "last_ready": watch.last("ready")})

    async def report() -> None:
        reported = -1
        while True:
            if watch.events != reported:  # counting walks every pod: only after a change
                reported = watch.events
                out.write(counts() + b"\n")
                out.flush()
            await asyncio.sleep(REPORT_SECONDS)

    reporter = asyncio.create_task(report())
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    reporter.cancel()
    await watch.stop()
    out.write(orjson.dumps({"pods": {key: asdict(times) for key, times in watch.pods.items()}}) + b"\n")
    out.flush()


if __name__ == "__main__":
    asyncio.run(_child(sys.argv[1], sys.argv[2]))
