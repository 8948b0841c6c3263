"""Chaos soak: the long scenario list of ``tests/chaos`` run back to back, with a summary.

Runs scenarios from the ``--long`` list (larger clusters, longer fault windows, several faults
each) until both ``--scenarios`` have run and ``--min-minutes`` have passed (or
``--max-minutes`` is reached), and writes ``benchmarks/results/chaos_soak.json`` after every
scenario, so an interrupted soak still leaves its partial counts:

- scenarios run and passed, and the failed ones with their replay command and violations;
- faults injected by type (scheduled steps) and requests the simulator failed on purpose;
- convergence time after the faults stopped: p50, p99, max.

Usage: ``python -m benchmarks chaos-soak [--scenarios 200] [--min-minutes 30] [--start 0]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from benchmarks.harness.results import RESULTS
from benchmarks.harness.stats import percentile
from tests.chaos.conftest import LONG_SEED_BASE
from tests.chaos.engine import CONVERGENCE_BOUND, ScenarioResult, run_scenario
from tests.chaos.scenario import THEMES, generate

OUT = RESULTS / "chaos_soak.json"


def _percentile(values: list[float], q: float) -> float | None:
    return round(percentile(values, q * 100), 3) if values else None


def summarise(results: list[ScenarioResult], *, elapsed: float, finished: bool) -> dict[str, Any]:
    """The JSON document for the results so far."""
    faults: Counter[str] = Counter()
    themes: Counter[str] = Counter()
    for result in results:
        faults.update(result.scenario.fault_counts())
        themes[result.scenario.theme] += 1
    convergence = [r.convergence_seconds for r in results if r.convergence_seconds is not None]
    failed = [r for r in results if r.violations]
    return {
        "finished": finished,
        "elapsed_seconds": round(elapsed, 1),
        "scenarios_run": len(results),
        "scenarios_passed": len(results) - len(failed),
        "violations": sum(len(r.violations) for r in results),
        "convergence_bound": f"{CONVERGENCE_BOUND:.0f} s + the scenario's ideal rollout time",
        "convergence_bound_seconds_max": max((r.bound_seconds for r in results), default=None),
        "convergence_seconds": {
            "p50": _percentile(convergence, 0.50), "p99": _percentile(convergence, 0.99),
            "max": max(convergence, default=None),
            "mean": round(statistics.fmean(convergence), 3) if convergence else None,
        },
        "faults_injected_by_type": dict(sorted(faults.items())),
        "faults_injected_total": sum(faults.values()),
        "requests_failed_on_purpose": sum(r.injected_errors for r in results),
        "creates_in_flight_at_deletion": sum(r.raced_creates for r in results),
        "scenarios_by_theme": dict(sorted(themes.items())),
        "scenario_seconds_mean": round(statistics.fmean(r.duration_seconds for r in results), 2) if results else None,
        "failures": [{"id": r.scenario.id, "seed": r.scenario.seed, "replay": r.scenario.replay(long=True),
                      "violations": r.violations[:10]} for r in failed],
    }


def _write(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(path)


async def soak(*, scenarios: int, min_minutes: float, max_minutes: float, start: int, out: Path) -> dict[str, Any]:
    """Run the soak; returns the final summary (also written to ``out``)."""
    results: list[ScenarioResult] = []
    began = time.monotonic()
    index = start
    while True:
        elapsed = time.monotonic() - began
        enough = len(results) >= scenarios and elapsed >= min_minutes * 60
        if enough or elapsed >= max_minutes * 60:
            break
        theme = THEMES[index % len(THEMES)]
        scenario = generate(LONG_SEED_BASE + index, theme=theme, index=index, long=True)
        try:
            result = await run_scenario(scenario, log=lambda _line: None)
        except Exception as exc:  # a crash of the harness itself is a failed scenario, not the end
            result = ScenarioResult(scenario, violations=[f"harness error: {exc!r}"])
        results.append(result)
        verdict = "ok" if not result.violations else f"FAILED ({len(result.violations)})"
        print(f"[{elapsed / 60:5.1f} min] {scenario.id} seed={scenario.seed} {verdict} "
              f"converged={result.convergence_seconds}s took={result.duration_seconds}s", flush=True)
        if result.violations:
            print(result.report(long=True), flush=True)
        _write(summarise(results, elapsed=time.monotonic() - began, finished=False), out)
        index += 1
    doc = summarise(results, elapsed=time.monotonic() - began, finished=True)
    _write(doc, out)
    return doc


async def _until_signalled(work: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any] | None:
    """Run ``work``; SIGTERM or SIGINT cancel it, so every ``finally`` stops its processes."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks chaos-soak", description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--min-minutes", type=float, default=30.0)
    parser.add_argument("--max-minutes", type=float, default=120.0)
    parser.add_argument("--start", type=int, default=0, help="index of the first scenario")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    doc = asyncio.run(_until_signalled(soak(scenarios=args.scenarios, min_minutes=args.min_minutes,
                                            max_minutes=args.max_minutes, start=args.start, out=args.out)))
    if doc is None:
        print("interrupted; partial results in", args.out)
        return 1
    print(json.dumps({k: v for k, v in doc.items() if k != "failures"}, indent=2))
    return 0 if not doc["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
