"""Rolling update over 1,000 nodes: wall time against the lower bound, and the shape of the rollout.

Setup: ``dsctl_sim serve`` and ``dsctl run`` each in their own process (the harness of the
integration tests), 1,000 nodes, pods Ready 1 s after they start, and a DaemonSet with
``maxUnavailable: 10%``. After the first rollout settles, the image changes and a
``RolloutObserver`` (the invariant checker of the tests) follows the update until every node
runs one Ready pod of the new revision.

The lower bound: no controller can finish faster than ``waves x (termination + startup)``,
where ``waves = ceil(desired / maxUnavailable)``: a node's new pod can only start once its old
one is gone (no surge), and at most maxUnavailable nodes may be down at once. Termination is
the sim's grace-period cap (1 s) and startup the sim's pod delay. The ratio wall / bound is
the figure of merit: 1.0 would be a perfect controller with zero API latency.

Outputs ``benchmarks/results/rollout_1000.png`` (updated and available over time) and
``benchmarks/results/rollout_1000.json``, and prints the figures.
Usage: ``python -m benchmarks rollout [--nodes 1000] [--max-unavailable 10%] [--startup 1.0]``.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness.bounds import SIM_TERMINATION_CAP, rolling_update_bound
from benchmarks.harness.procs import proc_cpu_seconds
from benchmarks.harness.results import RESULTS
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.invariants import RolloutObserver, update_template
from tests.support.simproc import SimProcess


async def run(*, nodes: int, max_unavailable: str, startup: float, controller_args: list[str]) -> dict[str, Any]:
    """Run the scenario once; return the figures and the observer's timeline."""
    sim_args = ["--pod-startup-seconds", str(startup), "--log-level", "warning"]
    async with SimProcess(nodes=nodes, args=sim_args, startup_timeout=120) as sim, \
            ControllerProcess(sim.kubeconfig, args=["--log-level", "info", *controller_args]) as ctl:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=1000, burst=2000)
        try:
            ds = daemonset("agent", strategy=rolling(max_unavailable=max_unavailable))
            await client.create(DAEMONSETS, ds, namespace="default")
            started = time.monotonic()
            async with RolloutObserver(client, "agent") as first:
                await first.wait_rolled_out(300)
            initial = time.monotonic() - started
            assert ctl.proc is not None
            cpu = (proc_cpu_seconds(ctl.proc.pid), proc_cpu_seconds(sim.pid))
            async with RolloutObserver(client, "agent") as obs:
                old_hash = obs.current_hash
                t0 = time.monotonic()
                await update_template(client, "agent", image="registry.example/agent:2.0")
                await obs.wait_rolled_out(600)
                wall = time.monotonic() - t0
            cpu = (proc_cpu_seconds(ctl.proc.pid) - cpu[0], proc_cpu_seconds(sim.pid) - cpu[1])
        finally:
            await client.close()
    limits = rolling_update_bound(nodes, max_unavailable, startup=startup)
    budget, waves, bound = limits.budget, limits.waves, limits.seconds
    # Until the controller has written the new revision, "updated" means the new template: 0.
    timeline = [(round(max(0.0, t - t0), 3), 0 if rev == old_hash else updated, available)
                for t, rev, updated, available in obs.timeline]
    return {
        "nodes": nodes, "max_unavailable": max_unavailable, "budget": budget, "waves": waves,
        "termination_seconds": SIM_TERMINATION_CAP, "startup_seconds": startup,
        "lower_bound_seconds": round(bound, 2), "wall_seconds": round(wall, 2), "ratio": round(wall / bound, 3),
        "initial_rollout_seconds": round(initial, 2),
        "controller_cpu_seconds": round(cpu[0], 2), "sim_cpu_seconds": round(cpu[1], 2),
        "max_unavailable_seen": obs.max_unavailable_seen, "violations": [str(v) for v in obs.violations],
        "observer_events": obs.events, "observer_relists": obs.relists,
        "controller_errors": len(ctl.errors()),
        "controller_args": controller_args,
        "timeline": timeline,
    }


def plot(figures: dict[str, Any], path: Path) -> None:
    """Updated and available nodes over time, with the budget floor and the lower bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [t for t, _, _ in figures["timeline"]]
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.step(times, [u for _, u, _ in figures["timeline"]], where="post", label="nodes with a new-revision pod")
    ax.step(times, [a for _, _, a in figures["timeline"]], where="post", label="nodes with an available pod")
    ax.axhline(figures["nodes"] - figures["budget"], color="grey", linestyle="--",
               label=f"availability floor (desired - maxUnavailable = {figures['nodes'] - figures['budget']})")
    ax.axvline(figures["lower_bound_seconds"], color="red", linestyle=":",
               label=f"lower bound {figures['lower_bound_seconds']:.0f} s")
    ax.set_xlabel("seconds since the image update")
    ax.set_ylabel("nodes")
    ax.set_title(f"Rolling update, {figures['nodes']} nodes, maxUnavailable {figures['max_unavailable']}, "
                 f"{figures['startup_seconds']:g} s startup: {figures['wall_seconds']:.1f} s "
                 f"(x{figures['ratio']:.2f} the bound)")
    ax.legend(loc="center right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks rollout", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-unavailable", default="10%")
    parser.add_argument("--startup", type=float, default=1.0, help="pod startup seconds in the sim")
    parser.add_argument("--name", default="rollout_1000", help="basename of the PNG and JSON in results/")
    parser.add_argument("--controller-args", default="", help="extra 'dsctl run' flags, space-separated")
    args = parser.parse_args(argv)
    figures = asyncio.run(run(nodes=args.nodes, max_unavailable=args.max_unavailable, startup=args.startup,
                              controller_args=args.controller_args.split()))
    RESULTS.mkdir(exist_ok=True)
    plot(figures, RESULTS / f"{args.name}.png")
    (RESULTS / f"{args.name}.json").write_text(json.dumps(figures, indent=1) + "\n")
    for key, value in figures.items():
        if key != "timeline":
            print(f"{key:>24}: {value}")
    print(f"{'plot':>24}: benchmarks/results/{args.name}.png")
    return 1 if figures["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
