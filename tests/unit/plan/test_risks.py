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
        pytest.param(_gate("agent-ready"), _gate(None), {}, ["readiness-gate"], id="gate-added"),
        pytest.param(_gate(None), _gate("agent-ready"), {}, ["readiness-gate"], id="gate-removed"),
        pytest.param(_gate("agent-ready"), _gate("agent-ready"), {}, [], id="gate-kept"),
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


def test_readiness_gate_field_of_the_custom_kind() -> None:
    """The custom kind's spec.nodeReadinessGate is read as the annotation is."""
    ds = daemonset("agent", api_version="dsctl.io/v1")
    ds["spec"]["nodeReadinessGate"] = {"enabled": True}
    (risk,) = risks(ds, daemonset("agent", api_version="dsctl.io/v1"), custom=True, nodes=WORKERS, gained=(),
                    should_run=())
    assert risk["id"] == "readiness-gate" and "turned on" in risk["message"]
