"""``dsctl run`` start-up: seconds until ``/readyz`` answers 200, and RSS at that moment.

One ``dsctl sim serve`` (separate process, ``--nodes``, default 100) with one DaemonSet already
converged. Then, ``--rounds`` times (default 5), the controller is started from each source
tree in turn, alternating so that machine noise falls on both alike: ``current`` (this
checkout) and, with ``--before DIR``, another checkout of dsctl (for example a worktree of an
older commit). Each run: ``python -m dsctl run`` with ``PYTHONPATH=<tree>``, polled on
``/readyz`` every 10 ms; RSS from ``/proc/<pid>/status`` at the first 200; then SIGTERM. The
import cost alone is measured too: a fresh interpreter importing what ``dsctl run`` imports.

Usage: ``python -m benchmarks startup [--before DIR] [--rounds 5] [--nodes 100]``.
Prints the JSON summary; writes ``benchmarks/results/controller_startup.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.harness.cluster import SimProcess, daemonset
from benchmarks.harness.procs import rss_mib
from benchmarks.harness.results import ROOT, environment, log, write_result
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS

# What ``dsctl run`` imports before it connects: the CLI, its parser (which used to pull in the
# simulator's), and the runner. Prints seconds, modules loaded, and simulator modules loaded.
IMPORTS = (
    "import sys, time; t = time.perf_counter(); import dsctl.cli, dsctl.app.runner; dsctl.cli.build_parser(); "
    "print(time.perf_counter() - t, len(sys.modules), "
    "sum(m.split('.')[0] in ('dsctl_sim', 'jsonpatch') or m.split('.')[:2] == ['dsctl', 'sim'] for m in sys.modules))"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _one_start(tree: Path, kubeconfig: str) -> dict[str, float]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsctl", "run", "--kubeconfig", kubeconfig, "--log-level", "warning",
        "--metrics-bind-address", "0", "--health-probe-bind-address", f"127.0.0.1:{port}",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=env, cwd=str(tree),
    )
    try:
        async with aiohttp.ClientSession() as session:
            while True:
                if proc.returncode is not None:
                    raise RuntimeError(f"controller from {tree} exited with {proc.returncode}")
                try:
                    async with session.get(f"http://127.0.0.1:{port}/readyz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.01)
        ready = time.perf_counter() - started
        return {"ready_seconds": ready, "rss_mib": rss_mib(proc.pid)[0]}
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()


def _imports(tree: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(tree)}, cwd=str(tree), timeout=60)
    seconds, modules, sim_modules = out.stdout.split()
    return {"import_seconds": float(seconds), "modules": float(modules), "sim_modules": float(sim_modules)}


def _summary(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(s[key] for s in samples), 4) for key in samples[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks startup", description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="another dsctl checkout to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=100)
    asyncio.run(run(parser.parse_args(argv)))


async def run(args: argparse.Namespace) -> None:
    """Start each tree's controller ``--rounds`` times against one simulator; write the medians."""
    trees = {"current": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    async with SimProcess(nodes=args.nodes, args=["--pod-startup-seconds", "0.1"]) as sim:
        async with await KubeClient.from_config(kubeconfig=sim.kubeconfig) as client:
            await client.create(DAEMONSETS, daemonset("startup"), namespace="default")
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                sample = await _one_start(tree, sim.kubeconfig)
                sample.update(await asyncio.to_thread(_imports, tree))
                samples[name].append(sample)
                log("start", round=round_, tree=name, **sample)
    result: dict[str, Any] = {
        "environment": environment(), "nodes": args.nodes, "rounds": args.rounds,
        "median": {name: _summary(s) for name, s in samples.items()}, "samples": samples,
    }
    if "before" in samples:
        cur, old = result["median"]["current"], result["median"]["before"]
        result["ratio_current_over_before"] = {k: round(cur[k] / old[k], 3) for k in cur if old[k]}
    write_result("controller_startup", result)
    print(result["median"], result.get("ratio_current_over_before"))


if __name__ == "__main__":
    main()
