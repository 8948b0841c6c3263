"""Rollout controls (partition, paused, node selector): how they are read and what they hold."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.extensions import (
    NO_CONTROLS,
    InvalidControl,
    RolloutControls,
    frozen_nodes,
    rollout_controls,
)
from dsctl.daemonset.podplan import Plan
from dsctl.daemonset.update import plan_rolling_update
from dsctl_api.labels import parse_selector

from .objects import T0, make_ds, make_pod

OLD, NEW = "h-old", "h-new"
NODES = [f"node-{i}" for i in range(10)]


def _rolling(**fields: Any) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, **fields}}


@pytest.mark.parametrize(("ds", "expected"), [
    pytest.param(make_ds(), NO_CONTROLS, id="none"),
    pytest.param(make_ds(strategy=_rolling(partition=3)), RolloutControls(partition=3), id="field-partition"),
    pytest.param(make_ds(annotations={"dsctl.io/partition": "3"}), RolloutControls(partition=3),
                 id="annotation-partition"),
    pytest.param(make_ds(strategy=_rolling(partition=2), annotations={"dsctl.io/partition": "5"}),
                 RolloutControls(partition=2), id="field-wins"),
    pytest.param(make_ds(strategy=_rolling(paused=True)), RolloutControls(paused=True), id="field-paused"),
    pytest.param(make_ds(annotations={"dsctl.io/paused": "true"}), RolloutControls(paused=True),
                 id="annotation-paused"),
    pytest.param(make_ds(annotations={"dsctl.io/paused": "false"}), NO_CONTROLS, id="annotation-unpaused"),
    pytest.param(make_ds(strategy=_rolling(selector={"matchLabels": {"zone": "a"}})),
                 RolloutControls(selector=parse_selector("zone=a")), id="field-selector"),
    pytest.param(make_ds(annotations={"dsctl.io/selector": "zone in (a,b),!canary-off"}),
                 RolloutControls(selector=parse_selector("zone in (a,b),!canary-off")), id="annotation-selector"),
])
def test_rollout_controls_are_read_from_fields_and_annotations(ds: dict[str, Any], expected: RolloutControls) -> None:
    """Each control comes from its CRD field, else from its dsctl.io/ annotation."""
    assert rollout_controls(ds) == expected


@pytest.mark.parametrize(("ds", "field"), [
    pytest.param(make_ds(annotations={"dsctl.io/partition": "-1"}), "metadata.annotations[dsctl.io/partition]",
                 id="negative-annotation"),
    pytest.param(make_ds(annotations={"dsctl.io/partition": "three"}), "metadata.annotations[dsctl.io/partition]",
                 id="word"),
    pytest.param(make_ds(strategy=_rolling(partition=True)), "spec.updateStrategy.rollingUpdate.partition",
                 id="bool-partition"),
    pytest.param(make_ds(annotations={"dsctl.io/paused": "yes"}), "metadata.annotations[dsctl.io/paused]",
                 id="paused-yes"),
    pytest.param(make_ds(annotations={"dsctl.io/selector": "zone in (a"}), "metadata.annotations[dsctl.io/selector]",
                 id="selector-syntax"),
    pytest.param(make_ds(strategy=_rolling(selector=["zone"])), "spec.updateStrategy.rollingUpdate.selector",
                 id="selector-list"),
])
def test_unreadable_controls_name_their_source(ds: dict[str, Any], field: str) -> None:
    """A malformed control raises InvalidControl naming the field or annotation it came from."""
    with pytest.raises(InvalidControl) as caught:
        rollout_controls(ds)
    assert caught.value.field == field


@pytest.mark.parametrize(("controls", "old_only", "settled", "frozen"), [
    pytest.param(NO_CONTROLS, NODES, [], set(), id="nothing-held"),
    pytest.param(RolloutControls(partition=3), NODES, [], {"node-7", "node-8", "node-9"}, id="last-three-by-name"),
    pytest.param(RolloutControls(partition=3), NODES[5:], NODES[:5], {"node-7", "node-8", "node-9"},
                 id="updated-nodes-count"),
    pytest.param(RolloutControls(partition=3), NODES[8:], NODES[:8], {"node-8", "node-9"},
                 id="fewer-old-than-partition"),
    pytest.param(RolloutControls(partition=20), NODES, [], set(NODES), id="partition-beyond-nodes"),
    pytest.param(RolloutControls(paused=True), NODES, [], set(NODES), id="paused"),
    pytest.param(RolloutControls(selector=parse_selector("zone=a")), NODES, [], set(NODES[5:]),
                 id="selector-admits-first-five"),
    pytest.param(RolloutControls(selector=parse_selector("zone=a"), partition=7), NODES, [],
                 set(NODES[3:]), id="selector-and-partition"),
])
def test_frozen_nodes(controls: RolloutControls, old_only: list[str], settled: list[str], frozen: set[str]) -> None:
    """Only the first nodes-minus-partition admitted nodes, in name order, may be updated."""
    labels = {name: {"zone": "a" if int(name.split("-")[1]) < 5 else "b"} for name in NODES}
    assert frozen_nodes(controls, old_only=old_only, settled=settled, node_labels=labels) == frozenset(frozen)


def _ds(**strategy_fields: Any) -> dict[str, Any]:
    return make_ds(strategy={"type": "RollingUpdate",
                             "rollingUpdate": {"maxUnavailable": 10, **strategy_fields}})


def _converge(ds: dict[str, Any], pods: dict[str, dict[str, Any]], *, labels: dict[str, dict[str, str]] | None = None,
              controls: RolloutControls = NO_CONTROLS) -> dict[str, dict[str, Any]]:
    """Apply rolling-update passes (deleted pods come back new and Ready) until nothing changes."""
    for _ in range(len(pods) + 2):
        plan = plan_rolling_update(ds=ds, nodes_should_run=list(pods), pods_by_node={n: [p] for n, p in pods.items()},
                                   hash=NEW, now=T0, controls=controls, node_labels=labels)
        if not plan.deletes:
            return pods
        for ref in plan.deletes:
            pods[ref.node] = make_pod(ref.node, hash=NEW, ready=True, ready_since=T0 - 100)
    raise AssertionError("the rollout did not settle")


def _all_old(ready: bool = True) -> dict[str, dict[str, Any]]:
    return {n: make_pod(n, hash=OLD, ready=ready, ready_since=T0 - 100) for n in NODES}


def _hashes(pods: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {n: p["metadata"]["labels"]["controller-revision-hash"] for n, p in pods.items()}


def test_partition_three_of_ten_keeps_the_last_three_nodes_old() -> None:
    """partition 3 over 10 nodes ends with exactly node-7..9 on the old revision."""
    done = _converge(_ds(), _all_old(), controls=RolloutControls(partition=3))
    assert {n for n, h in _hashes(done).items() if h == OLD} == {"node-7", "node-8", "node-9"}


def test_lowering_partition_to_zero_finishes_the_rollout() -> None:
    """After partition 3 settles, partition 0 updates the held nodes too."""
    held = _converge(_ds(), _all_old(), controls=RolloutControls(partition=3))
    done = _converge(_ds(), held, controls=NO_CONTROLS)
    assert set(_hashes(done).values()) == {NEW}


def test_paused_plans_nothing_even_for_unavailable_old_pods() -> None:
    """A paused rollout deletes no old pod, not even an unavailable one."""
    pods = _all_old(ready=False)
    plan = plan_rolling_update(ds=_ds(), nodes_should_run=NODES, pods_by_node={n: [p] for n, p in pods.items()},
                               hash=NEW, now=T0, controls=RolloutControls(paused=True))
    assert plan == Plan()


def test_selector_canary_updates_only_matching_nodes_and_widening_finishes() -> None:
    """A zone=a selector updates node-0..4 only; dropping it updates the rest."""
    labels = {n: {"zone": "a" if int(n.split("-")[1]) < 5 else "b"} for n in NODES}
    canary = _converge(_ds(), _all_old(), labels=labels, controls=RolloutControls(selector=parse_selector("zone=a")))
    assert {n for n, h in _hashes(canary).items() if h == NEW} == set(NODES[:5])
    done = _converge(_ds(), canary, labels=labels,
                     controls=RolloutControls(selector=parse_selector("zone in (a,b)")))
    assert set(_hashes(done).values()) == {NEW}


def test_a_frozen_unavailable_pod_still_uses_the_budget() -> None:
    """An unavailable old pod on a held node counts against maxUnavailable: nothing else goes."""
    pods = _all_old()
    pods["node-9"] = make_pod("node-9", hash=OLD, ready=False)
    ds = make_ds(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
    plan = plan_rolling_update(ds=ds, nodes_should_run=NODES, pods_by_node={n: [p] for n, p in pods.items()},
                               hash=NEW, now=T0, controls=RolloutControls(partition=1))
    assert plan.deletes == ()


def test_surge_respects_partition() -> None:
    """With maxSurge, held nodes get no surge pod."""
    ds = make_ds(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 10}})
    pods = _all_old()
    plan = plan_rolling_update(ds=ds, nodes_should_run=NODES, pods_by_node={n: [p] for n, p in pods.items()},
                               hash=NEW, now=T0, controls=RolloutControls(partition=4))
    assert set(plan.creates) == set(NODES[:6])
