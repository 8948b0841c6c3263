"""Starting the two processes a benchmark measures: the simulated cluster and the controller.

Every cluster benchmark runs three processes: the simulated cluster (``dsctl sim serve``),
the real controller (``python -m dsctl run``), and the benchmark itself, which drives the
cluster over HTTP and observes it. The processes come from the test suite's harness
(``tests.support``), so benchmarks and integration tests start them the same way; this module
adds the controller's production settings and the DaemonSet every benchmark deploys.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness.results import CONTROLLER_PATH, SIM_PATH
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.controllerproc import ControllerProcess
from tests.support.simproc import SimProcess

__all__ = ["ControllerProcess", "SimProcess", "controller", "converge", "daemonset", "sim_args", "sim_process"]

_CPROFILED = Path(__file__).resolve().parent / "cprofiled.py"


def sim_args(*, startup: float = 1.0, history: int | None = None, log_level: str = "warning",
             extra: tuple[str, ...] = ()) -> list[str]:
    """``dsctl sim serve`` flags: the pod start-up delay, quiet logs, and the history size."""
    args = ["--log-level", log_level, "--pod-startup-seconds", str(startup)]
    if history is not None:
        args += ["--history-size", str(history)]
    return [*args, *extra]


def sim_process(nodes: int, args: list[str], *, startup_timeout: float = 300.0) -> SimProcess:
    """``dsctl sim serve`` with ``nodes`` nodes; another tree's simulator when
    ``DSCTL_BENCH_SIM_PATH`` names one (``results.sim_tree`` records and checks it)."""
    path = os.environ.get(SIM_PATH)
    return SimProcess(nodes=nodes, args=args, startup_timeout=startup_timeout,
                      env={"PYTHONPATH": path} if path else None)


def daemonset(name: str, *, namespace: str = "default", startup_seconds: float | None = None,
              node_selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A plain agent DaemonSet (RollingUpdate defaults) whose pods are labelled ``app=<name>``."""
    annotations = {"sim.dsctl.io/startup-seconds": str(startup_seconds)} if startup_seconds is not None else {}
    pod_spec: dict[str, Any] = {"containers": [{
        "name": "agent", "image": "registry.example/agent:1.0",
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
    }]}
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"bench": "dsctl"}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "bench": "dsctl"}, "annotations": annotations},
                         "spec": pod_spec},
        },
    }


def controller(kubeconfig: str, *extra: str, cprofile_to: Path | None = None) -> ControllerProcess:
    """The controller process at its production log level (the test harness defaults to debug).

    With ``cprofile_to`` it runs under ``harness/cprofiled.py``: send it ``SIGUSR1`` to start
    profiling and ``SIGUSR2`` to stop and write the stats there (``profiling.cprofile_window``).

    ``DSCTL_BENCH_CONTROLLER_PATH``, when set, is the controller's ``PYTHONPATH`` (the sim keeps
    this process's): an older tree's controller against this tree's simulator, so a before and
    after differ in the controller only. The interpreter then runs with ``-P``: ``python -m``
    puts the working directory first on ``sys.path``, and from the repository root that is this
    tree's own ``dsctl``, which would shadow the path (``results.controller_tree`` checks).
    """
    launcher = [str(_CPROFILED), str(cprofile_to)] if cprofile_to else []
    path = os.environ.get(CONTROLLER_PATH)
    if path:
        launcher = ["-P", *launcher]
    return ControllerProcess(kubeconfig, args=["--log-level", "info", *extra], launcher=launcher,
                             env={"PYTHONPATH": path} if path else None)


async def converge(client: KubeClient, *, count: int, nodes: int, timeout: float) -> float:
    """Seconds until ``count`` benchmark DaemonSets (``daemonset``'s label) report all ``nodes`` pods Ready."""
    start = time.monotonic()
    while True:
        items = (await client.list(DAEMONSETS, namespace="default", label_selector="bench=dsctl"))["items"]
        ready = sum(1 for ds in items if int((ds.get("status") or {}).get("numberReady") or 0) == nodes)
        if ready == count:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{ready}/{count} DaemonSets converged in {timeout}s")
        await asyncio.sleep(1.0)
