"""What a process costs, read from ``/proc``: CPU seconds, current and peak RSS, over time.

The machine is shared, so wall time alone says little: every benchmark reports the CPU
seconds and the memory of the processes it measures beside its wall times. ``CpuTrace`` and
``RssTrace`` sample a process in the background, so a window found afterwards (a create
window from the simulator's request log, a relist) can be read off the samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Self

__all__ = [
    "CpuTrace",
    "RssTrace",
    "proc_cpu_seconds",
    "proc_usage",
    "reset_peak_rss",
    "rss_mib",
    "self_rss_mib",
    "server_cpu_apart",
    "wait_idle",
]

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a live process: one read of ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    rest = stat[stat.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / _CLOCK_TICKS


def rss_mib(pid: int | str = "self") -> tuple[float, float]:
    """(current RSS, peak RSS) of a process in MiB, from ``/proc/<pid>/status``."""
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(value.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def self_rss_mib() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MiB."""
    return rss_mib("self")


def proc_usage(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) and current/peak RSS in MiB of a live process."""
    cpu = proc_cpu_seconds(pid)
    rss, peak = rss_mib(pid)
    return {"cpu_seconds": round(cpu, 2), "rss_mib": round(rss, 1), "peak_rss_mib": round(peak, 1)}


def reset_peak_rss(pid: int | str = "self") -> bool:
    """Reset a process's peak RSS (``VmHWM``) to its current RSS; False where Linux refuses."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class _Sampler:
    """Samples process ``pid`` every ``every`` seconds while the block runs, and once more at its
    end; a subclass says what one sample records (``_sample``)."""

    def __init__(self, pid: int, *, every: float, name: str) -> None:
        self._pid = pid
        self._every = every
        self._name = f"{name}-{pid}"
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._run(), name=self._name)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._sample()

    def _sample(self) -> None:
        raise NotImplementedError

    async def _run(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(self._every)


class CpuTrace(_Sampler):
    """A process's CPU seconds sampled against the wall clock, to read its CPU over any window
    found afterwards (a create window taken from the sim's request log, say).

    ``async with CpuTrace(pid) as trace: ...`` then ``trace.busy(t0, t1)``: the share of one CPU
    the process used between wall times ``t0`` and ``t1``, interpolated between samples.
    """

    def __init__(self, pid: int, *, every: float = 0.02) -> None:
        super().__init__(pid, every=every, name="cpu-trace")
        self._samples: list[tuple[float, float]] = []

    def _sample(self) -> None:
        with contextlib.suppress(OSError):
            self._samples.append((time.time(), proc_cpu_seconds(self._pid)))

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


class RssTrace(_Sampler):
    """The highest RSS of a process seen while the block runs (sampled every ``every`` s), in MiB.

    For a process that has run for a while, its kernel peak (``VmHWM``) says nothing about one
    phase; this samples instead, so a short spike between samples can be missed.
    """

    def __init__(self, pid: int, *, every: float = 0.2) -> None:
        super().__init__(pid, every=every, name="rss-trace")
        self.peak_mib = 0.0
        self.samples = 0

    def _sample(self) -> None:
        with contextlib.suppress(OSError):
            self.peak_mib = max(self.peak_mib, rss_mib(self._pid)[0])
            self.samples += 1


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


async def wait_idle(pid: int, *, share: float = 0.05, window: float = 1.0, timeout: float = 600.0) -> float:
    """Seconds until ``pid`` uses less than ``share`` of a CPU over a ``window``: a server that
    has finished what it started (its control loops' first pass over a large cluster, say)."""
    start = time.monotonic()
    while True:
        before = proc_cpu_seconds(pid)
        await asyncio.sleep(window)
        if proc_cpu_seconds(pid) - before < share * window:
            return time.monotonic() - start - window
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"process {pid} still busy after {timeout}s")
