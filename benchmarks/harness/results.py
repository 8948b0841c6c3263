"""Where a benchmark's figures go, and what is recorded beside them.

Each benchmark prints one JSON document on stdout and stores it as
``benchmarks/results/<name>.json`` (``write_result``), with ``environment()``: the commit, the
versions, the CPUs and the load when it started, since results from different hosts differ
by more than most changes do. Progress goes to stderr (``log``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

__all__ = [
    "CONTROLLER_PATH",
    "RESULTS",
    "ROOT",
    "SIM_PATH",
    "controller_tree",
    "cpu_facts",
    "environment",
    "log",
    "sim_tree",
    "wait_until",
    "write_result",
]

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""
RESULTS = Path(os.environ.get("DSCTL_BENCH_RESULTS") or ROOT / "benchmarks" / "results")
"""Where results are written: ``benchmarks/results``, or ``DSCTL_BENCH_RESULTS`` for a trial run."""

CONTROLLER_PATH = "DSCTL_BENCH_CONTROLLER_PATH"
"""When set, the controller's ``PYTHONPATH``: another tree's controller against this tree's
simulator (see ``cluster.controller``)."""
SIM_PATH = "DSCTL_BENCH_SIM_PATH"
"""When set, the simulator's ``PYTHONPATH`` (another tree's ``dsctl-sim`` and ``dsctl-api``):
that tree's simulator under this tree's benchmark (see ``cluster.sim_process``)."""


def log(message: str, **fields: Any) -> None:
    """Progress to stderr (stdout carries only the final JSON)."""
    extra = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"[{time.strftime('%H:%M:%S')}] {message} {extra}".rstrip(), file=sys.stderr, flush=True)


def environment() -> dict[str, Any]:
    """Machine and version facts recorded beside every result."""
    import kubernetes_asyncio

    commit = _short_commit(ROOT)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "dsctl", "dsctl-sim"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return {"commit": commit, "modified_since_commit": bool(dirty), "cpus": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "aiohttp": aiohttp.__version__, "kubernetes_asyncio": kubernetes_asyncio.__version__,
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()], **cpu_facts(), **controller_tree(),
            **sim_tree()}


def _short_commit(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()


def controller_tree() -> dict[str, Any]:
    """Which commit's controller runs, when ``DSCTL_BENCH_CONTROLLER_PATH`` gives it another tree's
    code (the path's first entry; its commit is recorded, never the path, which is this machine's).

    Raises ``SystemExit`` unless the controller's interpreter, started as ``cluster.controller``
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


def sim_tree() -> dict[str, Any]:
    """Which commit's simulator runs, when ``DSCTL_BENCH_SIM_PATH`` gives it another tree's code
    (the commit of the path's first entry's repository). ``SystemExit`` unless the simulator's
    interpreter imports ``dsctl_sim`` from that path."""
    path = os.environ.get(SIM_PATH)
    if not path:
        return {}
    first = Path(path.split(os.pathsep)[0]).resolve()
    found = subprocess.run([sys.executable, "-c", "import dsctl_sim; print(dsctl_sim.__file__)"],
                           env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                           check=False).stdout.strip()
    if not found or Path(found).resolve().parent.parent != first:
        raise SystemExit(f"{SIM_PATH}: the simulator would import dsctl_sim from {found or 'nowhere'}, "
                         f"not from {first}")
    return {"sim_commit": _short_commit(first.parent) or "unknown"}


def cpu_facts() -> dict[str, Any]:
    """What kind of CPUs ran the benchmark (``/proc/cpuinfo``, sysfs)."""
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


def write_result(name: str, result: Mapping[str, Any]) -> Path:
    """Print the JSON summary and store it as ``benchmarks/results/<name>.json``; returns the path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1)
    path = RESULTS / f"{name}.json"
    path.write_text(text + "\n")
    print(text, flush=True)
    return path


async def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.05,
                     what: str = "condition") -> float:
    """Poll ``predicate`` until true; returns the seconds waited. Raises TimeoutError."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        await asyncio.sleep(interval)
    return time.monotonic() - start
