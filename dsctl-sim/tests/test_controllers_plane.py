"""The control plane as a whole: start over existing state, switches, clean shutdown."""

from __future__ import annotations

import asyncio

from dsctl_api.pods import is_pod_ready
from dsctl_sim.controllers import FakeClock, RealClock, start_control_plane
from dsctl_sim.controllers.testing import make_node, make_pod, pin_to_node, wait_for
from dsctl_sim.storage import Storage


def _sim_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("sim-")]


async def test_stop_ends_every_task_it_started() -> None:
    """Every task is named sim-*, and none is left after stop()."""
    storage = Storage()
    plane = start_control_plane(storage, pod_startup_seconds=0)
    names = {t.get_name() for t in _sim_tasks()}
    assert {"sim-scheduler", "sim-kubelet", "sim-garbage-collector", "sim-pod-gc",
            "sim-node-lifecycle", "sim-taint-manager", "sim-feeds:pods"} <= names
    await plane.stop()
    assert _sim_tasks() == []


async def test_existing_objects_are_picked_up_at_start() -> None:
    """Pods and nodes stored before the control plane starts are acted on."""
    storage = Storage()
    storage.create("nodes", make_node("n"))
    storage.create("pods", make_pod("p", affinity=pin_to_node("n")))
    plane = start_control_plane(storage, pod_startup_seconds=0)
    try:
        await wait_for(lambda: is_pod_ready(storage.get("pods", "default", "p") or {}),
                       what="pod Ready")
        stats = plane.stats()
        assert stats["scheduler"]["bound"] == 1
        assert stats["kubelet"]["pods"] == 1
    finally:
        await plane.stop()


async def test_real_clock_startup_delay() -> None:
    """With the wall clock, a short startup delay makes the pod Ready shortly after Running."""
    storage = Storage()
    storage.create("nodes", make_node("n"))
    plane = start_control_plane(storage, pod_startup_seconds=1.0, clock=RealClock())
    try:
        storage.create("pods", make_pod("p", node_name="n"))
        await wait_for(
            lambda: (storage.get("pods", "default", "p") or {}).get("status", {}).get("phase")
            == "Running",
            what="Running",
        )
        assert not is_pod_ready(storage.get("pods", "default", "p") or {})
        await wait_for(lambda: is_pod_ready(storage.get("pods", "default", "p") or {}),
                       what="Ready", timeout=5)
    finally:
        await plane.stop()


async def test_switched_off_loops_do_nothing() -> None:
    """scheduler=False leaves pods unbound; the other loops still run."""
    storage = Storage()
    clock = FakeClock()
    storage.create("nodes", make_node("n"))
    plane = start_control_plane(storage, pod_startup_seconds=0, clock=clock, scheduler=False)
    try:
        assert plane.scheduler is None
        storage.create("pods", make_pod("pending", affinity=pin_to_node("n")))
        storage.create("pods", make_pod("direct", node_name="n"))
        await wait_for(lambda: is_pod_ready(storage.get("pods", "default", "direct") or {}),
                       what="directly bound pod Ready")
        await plane.settle()
        pending = storage.get("pods", "default", "pending")
        assert pending is not None and not pending["spec"].get("nodeName")
    finally:
        await plane.stop()


async def test_stop_cancels_pending_timers() -> None:
    """Timers for future transitions (Ready, eviction, retries) do not outlive stop()."""
    storage = Storage()
    clock = FakeClock()
    storage.create("nodes", make_node("n"))
    plane = start_control_plane(storage, pod_startup_seconds=30, clock=clock)
    storage.create("pods", make_pod("p", node_name="n"))
    storage.create("pods", make_pod("stuck", node_selector={"no": "such-node"}))
    await wait_for(lambda: clock.pending >= 1, what="a Ready timer")
    await plane.settle()
    await plane.stop()
    assert clock.pending == 0
