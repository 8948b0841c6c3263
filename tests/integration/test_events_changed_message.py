"""A changed warning reaches the Events API even after the first one has spent its rate budget."""

from __future__ import annotations

import re

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, EVENTS
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

PARTITION = "dsctl.io/partition"


async def _warnings(kube: KubeClient) -> dict[str, int]:
    """InvalidRolloutControl messages about the DaemonSet, with their counts."""
    items = (await kube.list(EVENTS, namespace="default"))["items"]
    return {e["message"]: int(e.get("count") or 1) for e in items
            if e.get("reason") == "InvalidRolloutControl" and e["involvedObject"]["name"] == "agent"}


async def _dropped(controller: ControllerProcess) -> float:
    _, body = await controller.get("/metrics")
    found = re.search(r"^dsctl_events_dropped_total ([0-9.e+]+)$", body, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize("sim", [{"nodes": 2}], indirect=True)
async def test_a_second_invalid_value_is_reported_after_the_first_is_throttled(
    sim: SimProcess, kube: KubeClient, controller: ControllerProcess
) -> None:
    """partition -1 is warned until its budget is spent; partition 'x' then still shows in the Events API."""
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")
    await kube.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {PARTITION: "-1"}}}, namespace="default")
    await eventually(lambda: _warnings(kube), message="the first InvalidRolloutControl event")

    touches = iter(range(1_000_000))

    async def budget_spent() -> bool:
        # Every change of the DaemonSet is a sync, and every sync warns again.
        await kube.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {"touch": str(next(touches))}}},
                         namespace="default")
        return await _dropped(controller) > 0

    await eventually(budget_spent, timeout=60, interval=0.05, message="the first warning to be throttled")
    await kube.patch(DAEMONSETS, "agent", {"metadata": {"annotations": {PARTITION: "x"}}}, namespace="default")

    async def second_shown() -> dict[str, int]:
        return {m: c for m, c in (await _warnings(kube)).items() if "'x'" in m}

    shown = await eventually(second_shown, message="the second InvalidRolloutControl message")
    assert all(PARTITION in message for message in shown)
    first = [count for message, count in (await _warnings(kube)).items() if "'-1'" in message]
    assert first and max(first) > 1, "the first warning was counted, not written again and again"
