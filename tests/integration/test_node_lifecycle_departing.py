"""Departing nodes end to end: no new daemon pod on a node that is going away, even for a DaemonSet
that tolerates every taint; running pods stay; a node that stops departing gets its pod again.

The window here is 5 s; ``benchmarks/departing_window.py`` runs the same scenario for the full
minute (``tests/support/departing.py``).
"""

from __future__ import annotations

import pytest

from dsctl.kube.client import KubeClient
from tests.support.clusterview import daemon_pods, is_ready, target_of
from tests.support.controllerproc import ControllerProcess
from tests.support.departing import REPLACED_ELSEWHERE, SIM_ARGS, run_departing
from tests.support.nodelife import remove_taint
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

WINDOW = 5.0


@pytest.mark.parametrize("sim", [{"nodes": 5, "args": SIM_ARGS}], indirect=True)
async def test_departing_nodes_get_no_new_pod_and_keep_their_running_one(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """Shutdown, either autoscaler taint, deletion: zero creates there in the window, running pods
    untouched, the shut-down node's failed pod left as it is; the held nodes are counted."""
    result = await run_departing(sim, kube, window=WINDOW)
    assert result.created_on_departing == {}
    assert result.changed_running == {}
    assert len(result.failed_left) == 1, "the pod the shutdown killed is neither deleted nor replaced"
    await eventually(lambda: _held(controller, float(len(REPLACED_ELSEWHERE))),
                     message="dsctl_daemonset_departing_held_nodes counts the held nodes")

    await remove_taint(kube, "node-2", "ToBeDeletedByClusterAutoscaler")
    await remove_taint(kube, "node-4", "karpenter.sh/disrupted")
    await sim.set_kubelet("node-0", running=True)  # back from the shutdown: Ready again

    async def back() -> bool:
        pods = {target_of(p): p for p in await daemon_pods(kube, "agent")}
        return all(n in pods and is_ready(pods[n]) for n in ("node-0", "node-2", "node-4"))

    await eventually(back, message="nodes that stopped departing get their pod again")
    await eventually(lambda: _held(controller, 1.0), message="only the deleting node still holds a create")


async def _held(ctl: ControllerProcess, expected: float) -> bool:
    return await ctl.daemonset_gauge("dsctl_daemonset_departing_held_nodes") == expected
