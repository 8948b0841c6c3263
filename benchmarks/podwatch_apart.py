"""A ``PodWatch`` in a process of its own, at the lowest CPU priority.

The benchmark's pod watch decodes every event of every pod: in a 5,000-node cold start that is
about a sixth of a CPU. In the benchmark's own process it shares a CPU (with ``--pin``, the one
CPU the clients have) with whatever is measured, and it takes that CPU exactly when the client
should answer the server: the simulator waited measurably longer for the controller with the
observer beside it (BENCHMARKS.md §21). A real cluster has no such observer. Here it runs apart,
niced to 19, so it only uses CPU the measured client leaves; its stamps stay on the shared
monotonic clock (``CLOCK_MONOTONIC`` is system-wide on Linux), so they compare with this
process's times. The price: while the clients' CPU is busy, a stamp can trail its event by the
time the observer waits for CPU, so the Ready times are upper bounds. The create rates, which
the ratios use, come from the sim's request log, not from these stamps.

The parent sees counts and latest times as the child reports them (every 20 ms when they
changed), which is what the waits need; ``stop`` collects every pod's stamps for the curves.

Run by ``PodWatchApart``; as a script: ``podwatch_apart.py URL SELECTOR`` (stdin ``stop``
ends it after printing the pods).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import asdict
from typing import Any

import orjson
from common import PodTimes, PodWatch, curve_of

__all__ = ["PodWatchApart"]

NICE = 19
REPORT_SECONDS = 0.02


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
            sys.executable, __file__, *self._args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            limit=1 << 26)
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
