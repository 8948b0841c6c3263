"""Risk lines: each one raised by exactly the situation it names."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.plan.risks import risks
from tests.support.builders import daemonset, node, rolling

CP = node("cp-0", labels={"node-role.kubernetes.io/control-plane": ""},
          taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])
WORKERS = {f"w-{i}": node(f"w-{i}") for i in range(8)}


def _ids(ds: dict[str, Any], live: dict[str, Any] | None = None, *, custom: bool = False,
         gained: tuple[str, ...] = (), should_run: tuple[str, ...] = tuple(WORKERS)) -> list[str]:
    nodes = {**WORKERS, "cp-0": CP}
    return [r["id"] for r in risks(ds, live, custom=custom, nodes=nodes, gained=gained, should_run=should_run)]


def _gate(value: str | None) -> dict[str, Any]:
    ds = daemonset("agent")
    if value is not None:
        ds["metadata"]["annotations"] = {"dsctl.io/node-readiness-gate": value}
    return ds


def _annotated(annotations: dict[str, str] | None) -> dict[str, Any]:
    ds = daemonset("agent")
    if annotations is not None:
        ds["metadata"]["annotations"] = annotations
    return ds


@pytest.mark.parametrize(
    ("ds", "live", "kwargs", "expected"),
    [
        pytest.param(daemonset("agent"), None, {}, [], id="nothing"),
        pytest.param(daemonset("agent"), None, {"gained": ("cp-0", "w-1")}, ["control-plane"], id="control-plane"),
        pytest.param(daemonset("agent", strategy=rolling(max_unavailable=2)), None, {}, ["max-unavailable"],
                     id="a-quarter-unavailable"),
        pytest.param(daemonset("agent", strategy=rolling(max_unavailable=1)), None, {}, [], id="one-of-eight"),
        pytest.param(daemonset("agent", strategy=rolling(max_unavailable=0, max_surge="50%")), None, {}, [],
                     id="surge-keeps-every-pod"),
        pytest.param(daemonset("agent", image="registry.example/agent:latest"), None, {}, ["latest-image"],
                     id="latest"),
        pytest.param(daemonset("agent", image="agent"), None, {}, ["latest-image"], id="no-tag"),
        pytest.param(daemonset("agent", image="agent@sha256:" + "a" * 64), None, {}, [], id="digest"),
        pytest.param(daemonset("agent", labels={"app": "other"}), daemonset("agent"), {}, ["selector-change"],
                     id="selector-change"),
        pytest.param(daemonset("agent", tolerations=[{"operator": "Exists"}]), None, {}, ["tolerates-everything"],
                     id="tolerates-everything"),
        pytest.param(daemonset("agent", tolerations=[{"key": "gpu", "operator": "Exists"}]), None, {}, [],
                     id="tolerates-one-key"),
        pytest.param(_gate("true"), _gate(None), {}, ["readiness-gate"], id="gate-added"),
        pytest.param(_gate(None), _gate("true"), {}, ["readiness-gate"], id="gate-removed"),
        pytest.param(_gate("false"), _gate("true"), {}, ["readiness-gate"], id="gate-turned-false"),
        pytest.param(_gate("true"), _gate("true"), {}, [], id="gate-kept"),
        pytest.param(_gate("false"), _gate(None), {}, [], id="gate-false-is-no-gate"),
        pytest.param(_gate("sometimes"), _gate(None), {}, ["readiness-gate"], id="gate-unreadable-gates"),
        pytest.param(_annotated(None), _annotated({"dsctl.io/max-disruptions": "1"}), {},
                     ["max-disruptions-removed"], id="budget-removed"),
        pytest.param(_annotated({"dsctl.io/max-disruptions": "2"}), _annotated({"dsctl.io/max-disruptions": "1"}),
                     {}, [], id="budget-changed"),
        pytest.param(_annotated({"dsctl.io/max-disruptions": "1"}), None, {}, [], id="budget-on-a-new-daemonset"),
        pytest.param(_annotated({"dsctl.io/unhealthy-node-policy": "Skip"}), _annotated(None), {},
                     ["unhealthy-node-policy"], id="policy-to-skip"),
        pytest.param(_annotated(None), _annotated({"dsctl.io/unhealthy-node-policy": "Skip"}), {},
                     ["unhealthy-node-policy"], id="policy-back-to-count"),
        pytest.param(_annotated({"dsctl.io/unhealthy-node-policy": "Count"}), _annotated(None), {}, [],
                     id="count-is-the-default"),
        pytest.param(_annotated({"dsctl.io/unhealthy-node-policy": "Sometimes"}), _annotated(None), {}, [],
                     id="unreadable-policy-is-reported-by-the-controller"),
    ],
)
def test_each_risk_is_raised_by_its_situation(ds: dict[str, Any], live: dict[str, Any] | None,
                                              kwargs: dict[str, Any], expected: list[str]) -> None:
    """One line per risk, and none without a reason."""
    assert _ids(ds, live, **kwargs) == expected


@pytest.mark.parametrize(("custom", "word"), [pytest.param(False, "refuses", id="apps-v1"),
                                              pytest.param(True, "released", id="custom")])
def test_a_selector_change_says_what_the_api_does(custom: bool, word: str) -> None:
    """apps/v1 refuses a selector change; the custom kind accepts it and releases pods."""
    (risk,) = risks(daemonset("agent", labels={"app": "b"}), daemonset("agent"), custom=custom, nodes=WORKERS,
                    gained=(), should_run=())
    assert word in risk["message"]


@pytest.mark.parametrize(
    ("ds", "live", "words"),
    [
        pytest.param({"nodeReadinessGate": True}, {}, "turned on (spec.nodeReadinessGate)", id="crd-field-on"),
        pytest.param({}, {"nodeReadinessGate": True}, "turned off", id="crd-field-off"),
        pytest.param({"nodeReadinessGate": "yes"}, {}, "must be true or false", id="crd-field-unreadable"),
    ],
)
def test_readiness_gate_field_of_the_custom_kind(ds: dict[str, Any], live: dict[str, Any], words: str) -> None:
    """The custom kind's spec.nodeReadinessGate is read as the controller reads it (NODE_READINESS_GATE_FIELD)."""
    new, old = daemonset("agent", api_version="dsctl.io/v1"), daemonset("agent", api_version="dsctl.io/v1")
    new["spec"].update(ds)
    old["spec"].update(live)
    (risk,) = risks(new, old, custom=True, nodes=WORKERS, gained=(), should_run=())
    assert risk["id"] == "readiness-gate" and words in risk["message"]


def test_moving_the_gate_from_annotation_to_field_is_no_risk() -> None:
    """The same setting in the other place reads the same: no line."""
    old = daemonset("agent", api_version="dsctl.io/v1")
    old["metadata"]["annotations"] = {"dsctl.io/node-readiness-gate": "true"}
    new = daemonset("agent", api_version="dsctl.io/v1")
    new["spec"]["nodeReadinessGate"] = True
    assert risks(new, old, custom=True, nodes=WORKERS, gained=(), should_run=()) == []


def test_lifecycle_risk_lines_say_what_changes() -> None:
    """The budget and policy lines name where the setting was and what the controller then does."""
    found = risks(_annotated({"dsctl.io/unhealthy-node-policy": "Skip"}),
                  _annotated({"dsctl.io/max-disruptions": "10%"}), custom=False, nodes=WORKERS, gained=(),
                  should_run=())
    messages = {r["id"]: r["message"] for r in found}
    assert "dsctl.io/max-disruptions" in messages["max-disruptions-removed"]
    assert "deletes the PodDisruptionBudget" in messages["max-disruptions-removed"]
    assert messages["unhealthy-node-policy"].startswith("unhealthyNodePolicy changes from Count to Skip "
                                                        "(dsctl.io/unhealthy-node-policy)")
