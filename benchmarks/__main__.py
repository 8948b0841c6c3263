"""``python -m benchmarks NAME [ARGS]``: run one benchmark; without a name, list them.

Run from the repository root with the project's environment (``.venv/bin/python -m
benchmarks``). ``python -m benchmarks NAME --help`` shows a benchmark's options.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks import the test suite's process harness
    sys.path.insert(0, str(ROOT))

BENCHMARKS: dict[str, tuple[str, str]] = {
    "scale": ("scale", "the simulator and the controller at 100,000 nodes (and 5,000) in one run: memory, "
                       "create rates, cold start, node join, steady state, rolling update"),
    "sim-scale": ("sim_scale", "the simulator alone: create throughput by client and concurrency, list latency, RSS"),
    "cold-start": ("controller_cold_start", "one DaemonSet to N Ready pods, against the raw client's create rate, "
                                            "in rounds"),
    "cold-start-pool": ("cold_start_pool", "pool cold-start rounds from result files: geometric mean ratio with "
                                           "a 90 % bootstrap interval"),
    "node-join": ("controller_node_join", "node created -> all its daemon pods created, with many DaemonSets"),
    "node-priority": ("controller_node_priority", "where a system-node-critical pod comes among a new node's pods"),
    "noop-sync": ("controller_noop_sync", "CPU of one no-op sync of a large DaemonSet, in process and end to end"),
    "steady-state": ("controller_steady_state", "writes and controller CPU under node heartbeats"),
    "startup": ("controller_startup", "dsctl run to /readyz, and RSS at that moment"),
    "rollout": ("rollout_1000", "rolling update over 1,000 nodes: wall time against the lower bound"),
    "inplace": ("inplace_1000", "in-place against recreate rolling updates over 1,000 nodes"),
    "request-path": ("request_path", "CPU per pod create spent in dsctl's own client code"),
    "informer-sync": ("informer_sync", "informer sync time, RSS and watch throughput against a fixture server"),
    "informer-memory": ("informer_memory", "informer cache memory: full dicts against projections"),
    "informer-relist": ("informer_relist", "peak RSS of a forced relist (compaction and an expired continue)"),
    "informer-event-path": ("informer_event_path", "pod watch events applied per second, replayed in process"),
    "informer-sim": ("informer_sim", "informer sync against the real simulator"),
    "readiness-gate": ("readiness_gate", "node join with gating DaemonSets: node created -> readiness taint removed, "
                                         "and controller CPU per join against a run without gates"),
    "departing-window": ("departing_window", "creates on departing nodes over a window, for a DaemonSet tolerating "
                                             "every taint"),
    "plan-time": ("plan_time", "dsctl plan at 5,000 nodes, in process and end to end"),
    "view-grid": ("view_grid", "dsctl view at 5,000 nodes x 20 DaemonSets: page load and live updates"),
    "image-size": ("image_size", "the controller image's size, unpacked and compressed"),
    "chaos-soak": ("chaos_soak", "the chaos scenarios back to back for a while, with a summary"),
}


def usage() -> str:
    """The list of benchmarks, one line each."""
    width = max(len(name) for name in BENCHMARKS)
    lines = ["usage: python -m benchmarks NAME [ARGS]   (NAME --help for its options)", "", "benchmarks:"]
    lines += [f"  {name:<{width}}  {description}" for name, (_, description) in BENCHMARKS.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the benchmark named by ``argv[0]`` with the rest of ``argv``; list them without one."""
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{BENCHMARKS[name][0]}")
    entry: Callable[[list[str]], int | None] = module.main
    return entry(rest) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
