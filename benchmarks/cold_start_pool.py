"""The cold-start ratio over many rounds at once, with a bootstrap interval.

``controller_cold_start.py`` runs a few rounds of each phase side by side, and the ratio of one
round (controller create rate over the raw client's) moves by tens of percent: each phase's
rate carries the machine's speed in the seconds it ran, the raw rate most of all. Pooling the
rounds of several runs of the same code, and resampling them, says how well the ratio is known:

- ``geometric_mean``: the geometric mean of the per-round ratios (log rates average linearly,
  so one very fast or slow phase counts as much up as down);
- ``ratio_of_medians``: the controller's median rate over the baseline's;
- the geometric mean with a 90 % bootstrap interval (rounds resampled with replacement, fixed
  seed), and the share of rounds at or above the goal.

Usage: ``python -m benchmarks cold-start-pool [LABEL=]GLOB ... [--baseline raw]
[--phase unlimited] [--out FILE]``.
Rounds are grouped by label (the glob itself when none is given) and node count.
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.stats import Round, bootstrap_interval, geometric_mean_ratio, ratio_of_medians

__all__ = ["load_sources", "pool", "round_rates", "rounds_of", "summarize"]

CONTROLLER_PHASE = "unlimited"
"""The controller phase with the client's rate limit lifted, the one the goal is about."""


def round_rates(summary: dict[str, Any]) -> dict[str, float]:
    """Each phase's create rate in one round summary, by phase name (``raw``,
    ``raw_slowstart_owned``, ``unlimited`` ...): flat for raw phases, nested for controller ones."""
    rates: dict[str, float] = {}
    for key, value in summary.items():
        if key.endswith("_creates_per_second") and value:
            rates[key.removesuffix("_creates_per_second")] = float(value)
        elif key.startswith("controller_") and value.get("creates_per_second"):
            rates[key.removeprefix("controller_")] = float(value["creates_per_second"])
    return rates


def rounds_of(result: dict[str, Any], *, baseline: str = "raw", phase: str = CONTROLLER_PHASE) -> list[Round]:
    """The rounds of one ``controller_cold_start`` result that ran both the baseline and
    ``phase`` (a controller phase or another raw one)."""
    found: list[Round] = []
    for summary in result.get("rounds") or []:
        rates = round_rates(summary)
        if baseline in rates and phase in rates:
            found.append((rates[baseline], rates[phase]))
    return found


def summarize(rounds: Sequence[Round], *, goal: float = 0.8) -> dict[str, Any]:
    """The pooled figures of one group of rounds."""
    low, high = bootstrap_interval(rounds, geometric_mean_ratio)
    per_round = [ctl / base for base, ctl in rounds]
    return {
        "rounds": len(rounds),
        "baseline_median": round(statistics.median(base for base, _ in rounds), 1),
        "measured_median": round(statistics.median(ctl for _, ctl in rounds), 1),
        "geometric_mean": round(geometric_mean_ratio(rounds), 3),
        "geometric_mean_ci90": [round(low, 3), round(high, 3)],
        "ratio_of_medians": round(ratio_of_medians(rounds), 3),
        "per_round_at_or_above_goal": round(sum(1 for v in per_round if v >= goal) / len(per_round), 3),
    }


def pool(sources: Iterable[tuple[str, dict[str, Any]]], *, baseline: str = "raw",
         phase: str = CONTROLLER_PHASE, goal: float = 0.8) -> dict[str, dict[str, Any]]:
    """Rounds grouped by ``"<label> <nodes>"`` and summarized; ``sources`` are (label, result)."""
    groups: dict[str, list[Round]] = {}
    for label, result in sources:
        found = rounds_of(result, baseline=baseline, phase=phase)
        if found:
            groups.setdefault(f"{label} {result.get('nodes')}", []).extend(found)
    return {key: summarize(rounds, goal=goal) for key, rounds in sorted(groups.items())}


def load_sources(patterns: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """(label, result) per matched file; a file two globs of one label match counts once."""
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[tuple[str, str]] = set()
    for pattern in patterns:
        label, _, spec = pattern.rpartition("=")
        paths = sorted(glob.glob(spec))
        if not paths:
            raise SystemExit(f"no result file matches {spec!r}")
        for path in paths:
            key = (label or spec, str(Path(path).resolve()))
            if key not in seen:
                seen.add(key)
                out.append((key[0], json.loads(Path(path).read_text())))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks cold-start-pool", description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="+", metavar="[LABEL=]GLOB",
                        help="controller_cold_start result files; a label groups several globs")
    parser.add_argument("--baseline", default="raw", help="raw phase to divide by (default raw)")
    parser.add_argument("--phase", default=CONTROLLER_PHASE,
                        help=f"phase to divide (default {CONTROLLER_PHASE}; a raw phase shows its ceiling)")
    parser.add_argument("--goal", type=float, default=0.8)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    pooled = pool(load_sources(args.patterns), baseline=args.baseline, phase=args.phase, goal=args.goal)
    text = json.dumps(pooled, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
