"""The statistics the current figures use, and nothing more.

- ``percentile``: the nearest-rank percentile of latencies (node join p50/p99).
- ``geometric_mean_ratio`` and ``ratio_of_medians``: a measured phase's rate against a
  baseline's over many rounds (the cold start against the raw client).
- ``bootstrap_interval``: how well such a ratio is known, as a percentile bootstrap interval.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence

__all__ = ["Estimator", "Round", "bootstrap_interval", "geometric_mean_ratio", "percentile", "ratio_of_medians"]

Round = tuple[float, float]
"""(baseline rate, measured phase's rate) of one round."""

Estimator = Callable[[Sequence[Round]], float]


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``; NaN when empty."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def geometric_mean_ratio(rounds: Sequence[Round]) -> float:
    """The geometric mean of the per-round ratios (measured phase over baseline).

    Log rates average linearly, so one very fast or slow phase counts as much up as down.
    """
    return math.exp(statistics.fmean(math.log(measured / base) for base, measured in rounds))


def ratio_of_medians(rounds: Sequence[Round]) -> float:
    """The measured phase's median rate over the baseline's median rate."""
    return statistics.median(m for _, m in rounds) / statistics.median(b for b, _ in rounds)


def bootstrap_interval(rounds: Sequence[Round], estimator: Estimator, *, samples: int = 4000,
                       level: float = 0.9, seed: int = 12) -> tuple[float, float]:
    """The central ``level`` interval of ``estimator`` over ``samples`` resamplings of the rounds
    (percentile bootstrap). Deterministic for a given seed."""
    if not rounds:
        raise ValueError("no rounds to resample")
    rng = random.Random(seed)
    values = sorted(estimator(rng.choices(rounds, k=len(rounds))) for _ in range(samples))
    tail = (1.0 - level) / 2.0
    low = values[int(tail * (samples - 1))]
    high = values[math.ceil((1.0 - tail) * (samples - 1))]
    return low, high
