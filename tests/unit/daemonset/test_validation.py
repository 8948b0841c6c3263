"""Spec problems that stop reconciliation are found and named by field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsctl.daemonset.conditions import REQUIRED_COUNTERS, set_condition, without_condition
from dsctl.daemonset.reasons import INVALID
from dsctl.daemonset.validation import MAX_TOLERATIONS, validate_daemonset

GOOD: dict[str, Any] = {
    "metadata": {"name": "agent", "namespace": "default"},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}},
                     "spec": {"containers": [{"name": "a", "image": "agent:1"}]}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 0}},
    },
}


def _with(path: str, value: Any) -> dict[str, Any]:
    ds = copy.deepcopy(GOOD)
    target: Any = ds
    keys = path.split(".")
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = value
    return ds


def test_good_spec_has_no_problems() -> None:
    """A well-formed DaemonSet is acted on."""
    assert validate_daemonset(GOOD) == []


@pytest.mark.parametrize(
    ("ds", "field"),
    [
        pytest.param(_with("spec.updateStrategy.rollingUpdate.maxUnavailable", "abc"),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", id="max-unavailable-word"),
        pytest.param(_with("spec.updateStrategy.rollingUpdate.maxUnavailable", "150%"),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", id="max-unavailable-over-100"),
        pytest.param(_with("spec.updateStrategy.rollingUpdate.maxSurge", -1),
                     "spec.updateStrategy.rollingUpdate.maxSurge", id="negative-surge"),
        pytest.param(_with("spec.selector", {"matchLabels": {"app": "other"}}), "spec.selector",
                     id="selector-misses-template"),
        pytest.param(_with("spec.selector", None), "spec.selector", id="no-selector"),
        pytest.param(_with("spec.selector", {"matchExpressions": [{"key": "a", "operator": "Near"}]}),
                     "spec.selector", id="bad-operator"),
        pytest.param(_with("spec.template.spec.containers", []), "spec.template.spec.containers",
                     id="no-containers"),
        pytest.param(_with("spec.template.spec.containers", [{"name": "a"}]),
                     "spec.template.spec.containers[0].image", id="no-image"),
        pytest.param(_with("spec.template.spec.tolerations", [{"operator": "Exists"}] * (MAX_TOLERATIONS + 1)),
                     "spec.template.spec.tolerations", id="huge-tolerations"),
        pytest.param(_with("spec.updateStrategy.type", "Recreate"), "spec.updateStrategy.type",
                     id="unknown-strategy"),
        pytest.param(_with("spec.minReadySeconds", "5"), "spec.minReadySeconds", id="min-ready-string"),
        pytest.param(_with("spec.revisionHistoryLimit", -2), "spec.revisionHistoryLimit", id="negative-history"),
        pytest.param(_with("spec.template", "nonsense"), "spec.template.metadata.labels", id="template-not-object"),
    ],
)
def test_problems_name_the_field(ds: dict[str, Any], field: str) -> None:
    """Each unreconcilable spec yields a problem naming the offending field."""
    assert field in {p.field for p in validate_daemonset(ds)}


@pytest.mark.parametrize("ds", [pytest.param({}, id="empty"), pytest.param({"spec": 7}, id="spec-int"),
                                pytest.param({"spec": {"template": {"spec": {"containers": "x"}}}}, id="odd-types")])
def test_malformed_objects_never_raise(ds: dict[str, Any]) -> None:
    """Malformed objects produce problems, never exceptions."""
    assert validate_daemonset(ds)


def test_condition_keeps_transition_time_while_true() -> None:
    """Setting Invalid twice keeps its first lastTransitionTime; removing it drops the list."""
    first = set_condition({"numberReady": 1}, INVALID, reason="InvalidSpec", message="a", now=0)
    second = set_condition(first, INVALID, reason="InvalidSpec", message="b", now=100)
    assert second["conditions"][0]["lastTransitionTime"] == "1970-01-01T00:00:00Z"
    assert second["conditions"][0]["message"] == "b"
    assert without_condition(second, INVALID) == {"numberReady": 1, "currentNumberScheduled": 0,
                                                  "numberMisscheduled": 0, "desiredNumberScheduled": 0}


def test_condition_status_carries_the_required_counters() -> None:
    """A status written only for a condition still has the counters the CRD schema requires (422 otherwise)."""
    status = set_condition(None, INVALID, reason="InvalidSpec", message="a", now=0)
    assert {k: status[k] for k in REQUIRED_COUNTERS} == dict.fromkeys(REQUIRED_COUNTERS, 0)
    kept = set_condition({"numberReady": 3}, INVALID, reason="InvalidSpec", message="a", now=0)
    assert kept["numberReady"] == 3
