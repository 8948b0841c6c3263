"""``dsctl run`` start-up: time to ready, RSS, and what the run path imports.

The baseline the simulator split (issue 13) is compared against. For each of ``--runs``
rounds, against one ``dsctl sim serve`` with 3 nodes and one DaemonSet, it measures:

- ``version_seconds``: wall time of ``python -m dsctl --version`` (interpreter start plus the
  command line's imports);
- ``ready_seconds``: wall time from spawning ``python -m dsctl run`` to its first ``/readyz``
  200 (caches synced), and its RSS (current and peak) at that moment;
- once, in a separate interpreter: how many modules the ``run`` path has imported when the
  runner starts, how long those imports take, and whether ``dsctl.sim`` or ``jsonpatch`` are
  among them.

``--source DIR`` runs the controller from another checkout (PYTHONPATH=DIR), so one run of
this script on one machine compares two trees, e.g. the commit before the CLI stopped
importing the simulator::

    git archive <commit> | tar -x -C /tmp/before
    python benchmarks/controller_startup.py --runs 7 --source /tmp/before --name controller_startup-before
    python benchmarks/controller_startup.py --runs 7
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, daemonset, environment, log, proc_usage, write_result

from tests.controllerproc import ControllerProcess
from tests.simproc import SimProcess

# Runs `dsctl run` until the runner is about to connect (a kubeconfig that does not exist ends
# it there), then reports what got imported and how long the command took to get that far.
_IMPORT_PROBE = """
import contextlib, io, json, sys, time
start = time.perf_counter()
from dsctl.cli import main
with contextlib.redirect_stderr(io.StringIO()):
    main(['run', '--kubeconfig', '/nonexistent', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'])
elapsed = time.perf_counter() - start
mods = sorted(sys.modules)
print(json.dumps({"seconds": round(elapsed, 3), "modules": len(mods),
                  "dsctl_modules": sum(m.startswith('dsctl') for m in mods),
                  "imports_sim": any(m.startswith('dsctl.sim') for m in mods),
                  "imports_jsonpatch": 'jsonpatch' in mods}))
"""


def _env(source: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(source)}


def import_probe(source: Path) -> dict[str, Any]:
    """What the run path imports, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE], env=_env(source), capture_output=True, text=True,
                         timeout=120, check=True).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def version_seconds(source: Path) -> float:
    """Wall time of one ``python -m dsctl --version``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dsctl", "--version"], env=_env(source), capture_output=True,
                   timeout=120, check=True)
    return time.perf_counter() - start


async def ready_once(sim: SimProcess, source: Path) -> dict[str, float]:
    """Spawn the controller, wait for /readyz 200, and read its RSS then."""
    start = time.perf_counter()
    ctl = ControllerProcess(sim.kubeconfig, args=["--log-level", "info"], env={"PYTHONPATH": str(source)})
    await ctl.start()
    try:
        while True:
            status, _ = await ctl.get("/readyz")
            if status == 200:
                break
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - start
        assert ctl.proc is not None
        usage = proc_usage(ctl.proc.pid)
    finally:
        await ctl.stop()
    return {"ready_seconds": round(elapsed, 3), "rss_mib": usage["rss_mib"], "peak_rss_mib": usage["peak_rss_mib"],
            "cpu_seconds": usage["cpu_seconds"]}


def _median(rounds: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in rounds), 3)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """All rounds against one simulator."""
    source: Path = args.source
    imports = import_probe(source)
    log("imports", **imports)
    rounds: list[dict[str, float]] = []
    async with SimProcess(nodes=3, args=["--pod-startup-seconds", "0.1"]) as sim:
        status, body = await sim.request("POST", "/apis/apps/v1/namespaces/default/daemonsets", json=daemonset("agent"))
        assert status == 201, body
        for index in range(args.runs):
            row = {"version_seconds": round(version_seconds(source), 3), **await ready_once(sim, source)}
            log(f"round {index}", **row)
            rounds.append(row)
    return {
        "source": "this tree" if source == ROOT else args.source_label or "another tree",
        "runs": args.runs,
        "median": {key: _median(rounds, key) for key in rounds[0]},
        "rounds": rounds,
        "run_path_imports": imports,
        "environment": environment(),
    }


def main() -> None:
    """Parse flags, measure, write benchmarks/results/<name>.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--source", default=str(ROOT), help="checkout whose dsctl is measured (PYTHONPATH)")
    parser.add_argument("--source-label", default="", help="what --source is, for the result file")
    parser.add_argument("--name", default="controller_startup")
    args = parser.parse_args()
    args.source = Path(args.source).resolve()
    # `python -m` and `python -c` put the working directory first on sys.path: run from the
    # measured tree, or every child would import this one whatever PYTHONPATH says.
    os.chdir(args.source)
    write_result(args.name, asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
