"""Where a process spends its CPU during a window: py-spy samples or a cProfile window.

``profile(pid, name)`` samples any process with py-spy (``--nonblocking``, so the process is
never paused) and summarizes the collapsed stacks it wrote to ``results/<name>.folded``: the
top functions by own and by inclusive share of the busy samples. ``cprofile_window`` switches
on cProfile (CPU clock) inside a controller started through ``harness/cprofiled.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchmarks.harness.results import RESULTS, wait_until

__all__ = ["cprofile_window", "profile", "summarize_folded", "summarize_pstats", "top_costs"]


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
    """A source path as profiles show it: from the package down, or below ``site-packages``."""
    parts = Path(file).parts
    for package in ("dsctl", "dsctl_sim", "dsctl_api"):
        if package in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(package):])
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


def top_costs(summary: dict[str, Any], *, count: int = 5, skip: tuple[str, ...] = ()) -> list[list[Any]]:
    """The ``count`` largest inclusive costs of a ``summarize_folded`` summary below the event
    loop's own frames (which include everything), leaving out frames whose text starts with
    one of ``skip``."""
    loop_frames = ("Handle._run", "BaseEventLoop.", "Runner.run", "run (runners.py)", "<module>", "main (",
                   "_run_code", "_run_module_as_main", "serve_main", "Context.run", "_run_once")
    rows = [row for row in summary.get("top_inclusive_percent") or []
            if not str(row[0]).startswith(loop_frames + skip)]
    return rows[:count]
