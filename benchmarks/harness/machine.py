"""How steady the machine under a benchmark is, and a way to make it less steady on purpose.

A ratio of two phases measured seconds apart assumes the machine ran at one speed for both. A
shared virtual machine does not always: a neighbour on the host takes CPU time (the kernel
counts some of it as *steal*), and the same work takes longer from one second to the next. A
client that waits at barriers (the controller's slow-start batches) loses more to such stalls
than a steady pipeline does, because every stall of its own process leaves the server idle.
So every cold-start result records how steady the machine was while it ran:

- ``probe``: a fixed CPU loop timed a few times on each CPU; its spread, (p90 − p10) / median,
  is near 0.03 on a steady machine and was 0.2 to 0.4 on the noisy one of earlier sessions.
- ``Steal``: the share of all CPU time the kernel counted as stolen between two reads of
  ``/proc/stat``.

- ``wakeup_probe``: round trips of one byte through pipes between two processes on different
  CPUs, each after a pause long enough for both CPUs to go idle. That is what a barrier costs:
  the client's last answer wakes a sleeping server, or the server's wakes a sleeping client. A
  hypervisor that deschedules idle vCPUs makes it slow while the loop above stays fast.

``cpu_noise`` is the control experiment: one process per CPU that is busy for a random part of
every period, as a noisy neighbour is, so the effect of unsteadiness on a ratio can be measured
instead of guessed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LOOP_ITERATIONS", "Steal", "cpu_noise", "probe", "spread", "timing_summary", "wakeup_probe"]

LOOP_ITERATIONS = 300_000
"""About 8 ms of one 2.6 GHz vCPU: long enough to span a few scheduler ticks, short enough
that a probe of every CPU costs well under a second."""


def spread(timings: Sequence[float]) -> float:
    """(p90 − p10) / median of ``timings`` (nearest rank); 0 for fewer than two timings."""
    if len(timings) < 2:
        return 0.0
    ordered = sorted(timings)
    last = len(ordered) - 1
    low, high = ordered[round(0.1 * last)], ordered[round(0.9 * last)]
    return (high - low) / statistics.median(ordered)


def timing_summary(timings: Sequence[float]) -> dict[str, float]:
    """Median, fastest and slowest of a CPU's loop timings (ms), and their ``spread``."""
    return {"median_ms": round(statistics.median(timings), 2), "min_ms": round(min(timings), 2),
            "max_ms": round(max(timings), 2), "spread": round(spread(timings), 3)}


def _loop_ms(iterations: int) -> float:
    start = time.perf_counter()
    total = 0
    for k in range(iterations):
        total += k
    return 1000 * (time.perf_counter() - start)


def probe(*, samples: int = 10, gap_seconds: float = 0.02, iterations: int = LOOP_ITERATIONS) -> dict[str, Any]:
    """Time the fixed loop ``samples`` times on each CPU this process may use (Linux).

    The loop runs in this process, moved to one CPU at a time, with ``gap_seconds`` of sleep
    between timings so that each one samples a different moment. The affinity is restored.
    """
    every = os.sched_getaffinity(0)
    per_cpu: dict[str, dict[str, float]] = {}
    try:
        for cpu in sorted(every):
            os.sched_setaffinity(0, {cpu})
            timings = []
            for _ in range(samples):
                timings.append(_loop_ms(iterations))
                time.sleep(gap_seconds)
            per_cpu[str(cpu)] = timing_summary(timings)
    finally:
        os.sched_setaffinity(0, every)
    return {"per_cpu": per_cpu, "spread_max": max(s["spread"] for s in per_cpu.values())}


def wakeup_probe(*, trips: int = 100, pause_seconds: float = 0.002) -> dict[str, float]:
    """Median and p90 (µs) of ``trips`` one-byte round trips to an echo process on another CPU,
    each after ``pause_seconds`` of sleep on both sides. Empty on a machine with one CPU."""
    every = sorted(os.sched_getaffinity(0))
    if len(every) < 2:
        return {}
    here, there = every[0], every[-1]
    echo = subprocess.Popen([sys.executable, __file__, "--echo", "--cpu", str(there)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert echo.stdin is not None and echo.stdout is not None
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {here})
    micros = []
    try:
        echo.stdin.write(b"x")  # the first trip starts the child; not timed
        echo.stdout.read(1)
        for _ in range(trips):
            time.sleep(pause_seconds)
            start = time.perf_counter()
            echo.stdin.write(b"x")
            echo.stdout.read(1)
            micros.append(1e6 * (time.perf_counter() - start))
    finally:
        os.sched_setaffinity(0, mine)
        echo.stdin.close()
        echo.wait(timeout=10)
    ordered = sorted(micros)
    return {"median_us": round(statistics.median(ordered), 1),
            "p90_us": round(ordered[round(0.9 * (len(ordered) - 1))], 1)}


@dataclass(frozen=True, slots=True)
class Steal:
    """The ``cpu`` line of ``/proc/stat``: stolen and total jiffies since boot."""

    stolen: int
    total: int

    @classmethod
    def parse(cls, text: str) -> Steal:
        """From the text of ``/proc/stat`` (the aggregate ``cpu`` line; steal is its 8th value)."""
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] == "cpu":
                values = [int(v) for v in fields[1:]]
                # guest and guest_nice are already counted in user and nice.
                return cls(stolen=values[7] if len(values) > 7 else 0, total=sum(values[:8]))
        raise ValueError("no aggregate cpu line in /proc/stat")

    @classmethod
    def now(cls) -> Steal:
        """The current counters."""
        return cls.parse(Path("/proc/stat").read_text())

    def share_since(self, before: Steal) -> float:
        """The share of all CPU time stolen between ``before`` and this reading."""
        elapsed = self.total - before.total
        return (self.stolen - before.stolen) / elapsed if elapsed > 0 else 0.0


@contextlib.contextmanager
def cpu_noise(duty: float, *, period_ms: float = 20.0, seed: int = 1) -> Iterator[None]:
    """One busy process per CPU for the block: each is busy for a random share of every
    ``period_ms`` (uniform in 0 … 2 × ``duty``, so ``duty`` on average) and sleeps the rest.
    ``duty`` 0 starts nothing. The processes run at the benchmark's own priority."""
    if duty <= 0:
        yield
        return
    procs = [subprocess.Popen([sys.executable, __file__, "--cpu", str(cpu), "--duty", str(duty),
                               "--period-ms", str(period_ms), "--seed", str(seed + cpu)])
             for cpu in sorted(os.sched_getaffinity(0))]
    try:
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)


def _echo(*, cpu: int) -> None:
    """The far end of ``wakeup_probe``: send back every byte read, until end of input."""
    os.sched_setaffinity(0, {cpu})
    while byte := os.read(0, 1):
        os.write(1, byte)


def _main() -> None:
    parser = argparse.ArgumentParser(description="busy a random share of every period on one CPU, "
                                                 "or (--echo) the far end of the wake-up probe")
    parser.add_argument("--cpu", type=int, required=True)
    parser.add_argument("--echo", action="store_true")
    parser.add_argument("--duty", type=float, default=0.0)
    parser.add_argument("--period-ms", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.echo:
        _echo(cpu=args.cpu)
        return
    os.sched_setaffinity(0, {args.cpu})
    rng = random.Random(args.seed)
    period = args.period_ms / 1000
    while True:
        busy = rng.uniform(0, min(1.0, 2 * args.duty)) * period
        until = time.perf_counter() + busy
        while time.perf_counter() < until:
            pass
        time.sleep(period - busy)


if __name__ == "__main__":
    _main()
