"""The progress deadline survives a controller restart in apps/v1 mode, where lastUpdateTime is not kept.

A rollout to a template that never becomes Ready is stuck from its first pod on. Halfway to the
deadline the controller is stopped and a new one started: the deadline is reported at the time
the first controller would have reported it, not one deadline after the restart. And no status
write of either carries a field apps/v1 lacks (the simulator, as kube-apiserver, logs each one it
drops).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.builders import daemonset, rolling
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

DEADLINE = 10
RESTART_AT = 5


async def _progressing(kube: KubeClient) -> dict[str, Any] | None:
    ds = await kube.get(DAEMONSETS, "agent", namespace="default")
    return next((c for c in (ds.get("status") or {}).get("conditions") or [] if c.get("type") == "Progressing"),
                None)


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_a_restart_halfway_keeps_the_deadline(sim: SimProcess, kube: KubeClient) -> None:
    """Stuck at t0, restarted at t0 + 5 s: ProgressDeadlineExceeded near t0 + 10 s, not t0 + 15 s."""
    body = daemonset("agent", image="registry.example/agent:1", strategy=rolling(max_unavailable=1))
    body["metadata"]["annotations"] = {"dsctl.io/progress-deadline-seconds": str(DEADLINE)}
    first = await ControllerProcess(sim.kubeconfig).start()
    try:
        await kube.create(DAEMONSETS, body, namespace="default")

        async def complete() -> bool:
            cond = await _progressing(kube)
            return cond is not None and cond["reason"] == "NewRevisionAvailable"

        await eventually(complete, message="the first rollout completes")
        template = {"metadata": {"annotations": {"sim.dsctl.io/never-ready": "true"}},
                    "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:2"}]}}
        patch = {"spec": {"template": template}}
        await kube.patch(DAEMONSETS, "agent", patch, namespace="default", patch_type="strategic")
        stuck_from = time.monotonic()

        async def started() -> bool:
            cond = await _progressing(kube)
            return cond is not None and cond["reason"] in ("FoundNewRevision", "NewRevisionCreated", "RevisionUpdated")

        await eventually(started, message="the rollout starts")
        await eventually(lambda: _after(stuck_from + RESTART_AT), timeout=RESTART_AT + 5, message="halfway")
    finally:
        await first.stop()
    assert not first.errors()
    async with ControllerProcess(sim.kubeconfig) as second:
        async def exceeded() -> bool:
            cond = await _progressing(kube)
            return cond is not None and cond["reason"] == "ProgressDeadlineExceeded"

        await eventually(exceeded, timeout=DEADLINE + 10, interval=0.2, message="the deadline is reported")
        elapsed = time.monotonic() - stuck_from
        assert DEADLINE - 1 <= elapsed < DEADLINE + RESTART_AT - 1.5, (
            f"reported {elapsed:.1f}s after the rollout stuck; the restart must not restart the clock")
        assert not second.errors()
    dropped = [line for line in sim.log_path.read_text().splitlines()
               if "sim_unknown_fields_dropped" in line and "daemonsets" in line]
    assert dropped == [], dropped[:3]


async def _after(moment: float) -> bool:
    return time.monotonic() >= moment
