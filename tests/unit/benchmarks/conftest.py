"""The benchmark scripts run as scripts and import their siblings by plain name (``common``,
``cold_start_pool``); the tests of their pure parts import them the same way."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = str(Path(__file__).resolve().parents[3] / "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)
