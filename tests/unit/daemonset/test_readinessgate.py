"""``readinessgate.plan_gate``: when a node loses the readiness taint, gets it back, or times out.

Table-driven over plain dicts: a node, the gating DaemonSets' verdicts and pods for it, the
memory and the time; no fakes.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest

from dsctl.daemonset.readinessgate import (
    BOOTSTRAP,
    CONTINUOUS,
    GateMemory,
    GatePlan,
    GateSettings,
    GatingDaemonSet,
    ReadinessTaint,
    addition_patch,
    plan_gate,
    removal_patch,
)
from dsctl.daemonset.reasons import READINESS_GATE_TIMEOUT, READINESS_TAINT_ADDED
from dsctl_api.timefmt import format_rfc3339
from tests.unit.daemonset.objects import T0, make_node, make_pod, taint

TAINT = ReadinessTaint("dsctl.io/agents-not-ready")
GATE = taint("dsctl.io/agents-not-ready", "NoSchedule")
OTHER = taint("dedicated", "NoSchedule", "infra")
SETTINGS = GateSettings(taint=TAINT, mode=BOOTSTRAP, timeout=600.0, retaint_seconds=30.0)
CONT = GateSettings(taint=TAINT, mode=CONTINUOUS, timeout=600.0, retaint_seconds=30.0)


def node(*taints: dict[str, Any], created: float | None = T0 - 5) -> dict[str, Any]:
    """A node with these taints, created ``created``."""
    result = make_node("n1", taints=list(taints))
    if created is not None:
        result["metadata"]["creationTimestamp"] = format_rfc3339(created)
    result["metadata"]["resourceVersion"] = "42"
    return result


def ready(since: float = T0 - 10, **kwargs: Any) -> dict[str, Any]:
    """A Ready pod on n1."""
    return make_pod("n1", ready=True, ready_since=since, **kwargs)


def unready(since: float | None = T0 - 10, **kwargs: Any) -> dict[str, Any]:
    """A not-Ready pod on n1 (its Ready condition False since ``since``; None: no condition)."""
    if since is None:
        return make_pod("n1", **kwargs)
    return make_pod("n1", ready=False, ready_since=since, **kwargs)


def gate(key: str, *pods: dict[str, Any], wants: bool = True, min_ready: int = 0) -> GatingDaemonSet:
    """Gating DaemonSet ``key`` with ``pods`` on n1."""
    return GatingDaemonSet(key=key, wants=wants, pods=tuple(pods), min_ready=min_ready)


def plan(the_node: dict[str, Any], *gates: GatingDaemonSet, memory: GateMemory | None = None,
         settings: GateSettings = SETTINGS, now: float = T0) -> GatePlan:
    """``plan_gate`` at ``now``."""
    return plan_gate(node=the_node, gating=list(gates), memory=memory, now=now, settings=settings)


@pytest.mark.parametrize(
    ("gates", "remove", "holding"),
    [
        pytest.param((), True, (), id="no-gating-daemonset-removes-at-once"),
        pytest.param((gate("ns/cni", ready()),), True, (), id="the-one-gating-pod-ready"),
        pytest.param((gate("ns/cni", unready()),), False, ("ns/cni",), id="gating-pod-not-ready-holds"),
        pytest.param((gate("ns/cni"),), False, ("ns/cni",), id="no-pod-yet-holds"),
        pytest.param((gate("ns/cni", ready()), gate("ns/csi", unready())), False, ("ns/csi",),
                     id="last-gating-pod-holds"),
        pytest.param((gate("ns/b", unready()), gate("ns/a")), False, ("ns/a", "ns/b"), id="holders-sorted"),
        pytest.param((gate("ns/gpu", wants=False), gate("ns/cni", ready())), True, (),
                     id="unwanted-node-is-not-held"),
        pytest.param((gate("ns/gpu", unready(), wants=False),), True, (), id="unwanted-even-with-a-pod-there"),
        pytest.param((gate("ns/cni", ready(deleting=True)),), False, ("ns/cni",), id="deleting-pod-does-not-count"),
        pytest.param((gate("ns/cni", ready(deleting=True), ready()),), True, (), id="surge-pod-ready"),
        pytest.param((gate("ns/cni", ready(since=T0 - 3), min_ready=5),), False, ("ns/cni",),
                     id="ready-but-not-yet-available"),
        pytest.param((gate("ns/cni", ready(since=T0 - 6), min_ready=5),), True, (), id="available-past-min-ready"),
    ],
)
def test_removal_waits_for_every_wanting_gating_daemonset(gates: tuple[GatingDaemonSet, ...], remove: bool,
                                                          holding: tuple[str, ...]) -> None:
    """The taint goes once every gating DaemonSet that wants the node has an available pod there."""
    result = plan(node(GATE), *gates)
    assert (result.remove, result.holding, result.add) == (remove, holding, False)


def test_an_untainted_node_needs_nothing_in_bootstrap_mode() -> None:
    """Bootstrap mode never adds the taint, whatever the pods."""
    assert plan(node(OTHER), gate("ns/cni", unready(since=T0 - 3600))) == GatePlan()


def test_another_effect_of_the_key_is_not_the_gate() -> None:
    """Only the configured key and effect are the gate's taint."""
    assert plan(node(taint("dsctl.io/agents-not-ready", "NoExecute"))) == GatePlan()


@pytest.mark.parametrize(
    ("created", "memory", "gated"),
    [
        pytest.param(T0 - 5, None, 5.0, id="joined-tainted-from-creation"),
        pytest.param(T0 - 5000, None, 0.0, id="older-than-timeout-from-first-sighting"),
        pytest.param(None, None, 0.0, id="no-creation-time-from-first-sighting"),
        pytest.param(T0 + 30, None, 0.0, id="creation-in-the-future-clamped"),
        pytest.param(T0 - 5, GateMemory(since=T0 - 40), 40.0, id="remembered-start-wins"),
    ],
)
def test_gated_time_runs_from_the_gates_start(created: float | None, memory: GateMemory | None,
                                              gated: float) -> None:
    """A removal reports how long the node was gated, from creation or from what the memory says."""
    result = plan(node(GATE, created=created), memory=memory)
    assert result.remove and result.gated_seconds == gated and result.memory is None


def test_a_held_node_remembers_its_start_and_wakes_at_the_timeout() -> None:
    """Held: the start is kept, and the node is looked at again when the timeout falls due."""
    result = plan(node(GATE, created=T0 - 100), gate("ns/cni", unready()))
    assert result.memory == GateMemory(since=T0 - 100, timed_out=False)
    assert result.requeue_after == pytest.approx(500.0)
    assert result.events == ()


def test_a_ready_pod_waiting_out_min_ready_wakes_the_node_then() -> None:
    """A Ready pod within minReadySeconds: the plan looks again as it becomes available."""
    result = plan(node(GATE), gate("ns/cni", ready(since=T0 - 2), min_ready=5))
    assert result.requeue_after == pytest.approx(3.05)


def test_the_timeout_warns_once_and_keeps_the_taint() -> None:
    """Past the timeout: one Warning naming the DaemonSets not ready; the taint stays; no second event."""
    first = plan(node(GATE, created=T0 - 700), gate("ns/cni", ready()), gate("ns/csi", unready()),
                 memory=GateMemory(since=T0 - 601))
    assert not first.remove and first.memory == GateMemory(since=T0 - 601, timed_out=True)
    [event] = first.events
    assert (event.type, event.reason) == ("Warning", READINESS_GATE_TIMEOUT)
    assert "ns/csi" in event.message and "ns/cni" not in event.message and "10m0s" in event.message
    assert first.requeue_after is None
    again = plan(node(GATE), gate("ns/csi", unready()), memory=first.memory, now=T0 + 60)
    assert again.events == () and again.memory == first.memory


def test_many_holders_are_counted_not_all_named() -> None:
    """The timeout message names ten DaemonSets and counts the rest."""
    gates = [gate(f"ns/agent-{i:02d}") for i in range(13)]
    [event] = plan(node(GATE), *gates, memory=GateMemory(since=T0 - 601)).events
    assert "ns/agent-09" in event.message and "ns/agent-10" not in event.message and "and 3 more" in event.message


@pytest.mark.parametrize(
    ("pods", "add", "requeue"),
    [
        pytest.param((ready(),), False, None, id="ready-pod-nothing"),
        pytest.param((), False, None, id="missing-pod-is-no-reason"),
        pytest.param((unready(since=T0 - 31),), True, None, id="not-ready-past-retaint"),
        pytest.param((unready(since=T0 - 10),), False, 20.05, id="not-ready-waits-the-rest"),
        pytest.param((unready(since=None, created=T0 - 40),), True, None, id="no-condition-counts-from-creation"),
        pytest.param((unready(since=T0 - 31), ready()), False, None, id="a-ready-surge-pod-keeps-it-open"),
        pytest.param((unready(since=T0 - 31, deleting=True),), False, None, id="deleting-pod-is-no-reason"),
    ],
)
def test_continuous_mode_adds_the_taint_back(pods: tuple[dict[str, Any], ...], add: bool,
                                             requeue: float | None) -> None:
    """Continuous mode taints a node again once a gating pod there has been not Ready for the retaint time."""
    result = plan(node(OTHER), gate("ns/cni", *pods), settings=CONT)
    assert result.add is add and result.remove is False
    assert result.requeue_after == (pytest.approx(requeue) if requeue is not None else None)
    if add:
        [event] = result.events
        assert (event.reason, result.holding, result.memory) == (READINESS_TAINT_ADDED, ("ns/cni",),
                                                                  GateMemory(since=T0))


def test_continuous_mode_ignores_daemonsets_that_do_not_want_the_node() -> None:
    """A gating DaemonSet excluded from the node never taints it."""
    assert plan(node(), gate("ns/gpu", unready(since=T0 - 300), wants=False), settings=CONT) == GatePlan()


def test_continuous_mode_removes_like_bootstrap() -> None:
    """Tainted again, the node loses the taint once the pod is available, timed from the re-taint."""
    result = plan(node(GATE), gate("ns/cni", ready()), memory=GateMemory(since=T0 - 45), settings=CONT)
    assert result.remove and result.gated_seconds == 45.0


# -- taint parsing and the patches ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("dsctl.io/agents-not-ready", ReadinessTaint("dsctl.io/agents-not-ready", "NoSchedule"),
                     id="key-alone-is-noschedule"),
        pytest.param("node.cilium.io/agent-not-ready:NoExecute",
                     ReadinessTaint("node.cilium.io/agent-not-ready", "NoExecute"), id="key-and-effect"),
        pytest.param("startup-taint.cluster-autoscaler.kubernetes.io/agents",
                     ReadinessTaint("startup-taint.cluster-autoscaler.kubernetes.io/agents"), id="autoscaler-prefix"),
        pytest.param("plain", ReadinessTaint("plain"), id="no-prefix"),
    ],
)
def test_taint_flag_parses(text: str, expected: ReadinessTaint) -> None:
    """``--readiness-taint`` takes ``key[:effect]``."""
    assert ReadinessTaint.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a b", id="space"),
        pytest.param("k:Sometimes", id="unknown-effect"),
        pytest.param("k=v:NoSchedule", id="value-given"),
        pytest.param("Bad_Prefix/name", id="bad-prefix"),
        pytest.param("x/" + "n" * 64, id="name-too-long"),
        pytest.param("/name", id="empty-prefix"),
    ],
)
def test_bad_taint_flags_are_refused(text: str) -> None:
    """A key or effect kube-apiserver would refuse is refused with a message."""
    with pytest.raises(ValueError, match=r"\S"):
        ReadinessTaint.parse(text)


@pytest.mark.parametrize(
    ("taints", "after"),
    [
        pytest.param([GATE], None, id="only-taint-removes-the-list"),
        pytest.param([OTHER, GATE, {"key": "x", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}],
                     [OTHER, {"key": "x", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}],
                     id="others-kept-in-order"),
        pytest.param([{**GATE, "value": "true"}], None, id="any-value"),
    ],
)
def test_removal_patch_applies_to_the_node_it_was_made_from(taints: list[dict[str, Any]],
                                                            after: list[dict[str, Any]] | None) -> None:
    """The removal applies to the node as read, and leaves every other taint as it was."""
    the_node = node(*taints)
    patched = jsonpatch.apply_patch(the_node, removal_patch(the_node, TAINT))
    assert patched["spec"].get("taints") == after


def test_removal_patch_fails_once_the_taints_changed() -> None:
    """A taint added by someone else since the read fails the patch's test: nothing is lost."""
    read = node(GATE)
    changed = node(GATE, OTHER)
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(changed, removal_patch(read, TAINT))


@pytest.mark.parametrize(
    "taints",
    [pytest.param([], id="no-taints"), pytest.param([OTHER], id="with-another-taint")],
)
def test_addition_patch_adds_and_is_guarded(taints: list[dict[str, Any]]) -> None:
    """The addition appends the taint, and fails on a node that changed since the read."""
    read = node(*taints)
    patched = jsonpatch.apply_patch(read, addition_patch(read, TAINT))
    assert patched["spec"]["taints"] == [*taints, TAINT.body()]
    changed = node(*taints, taint("late", "NoSchedule"))
    changed["metadata"]["resourceVersion"] = "43"
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(changed, addition_patch(read, TAINT))
