"""Node affinity, taints, int-or-percent, time and pod helpers."""

from typing import Any

import pytest

from dsctl_api.fields import FieldSelectorError, parse_field_selector
from dsctl_api.intstr import IntStrError, scaled_value
from dsctl_api.nodeaffinity import required_node_affinity_matches
from dsctl_api.pods import is_pod_available, is_pod_ready
from dsctl_api.taints import find_untolerated, tolerates
from dsctl_api.timefmt import format_micro, format_rfc3339, parse_rfc3339

NODE = {"metadata": {"name": "node-1", "labels": {"zone": "a", "cpus": "8", "gpu": "yes", "mem": "6_4",
                                                  "huge": "99999999999999999999"}}}


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, True, id="no-constraints"),
        pytest.param({"nodeSelector": {"zone": "a"}}, True, id="node-selector-match"),
        pytest.param({"nodeSelector": {"zone": "b"}}, False, id="node-selector-miss"),
        pytest.param(_affinity(_expr("zone", "In", "a", "b")), True, id="in"),
        pytest.param(_affinity(_expr("zone", "NotIn", "a")), False, id="notin"),
        pytest.param(_affinity(_expr("gpu", "Exists")), True, id="exists"),
        pytest.param(_affinity(_expr("gpu", "DoesNotExist")), False, id="does-not-exist"),
        pytest.param(_affinity(_expr("cpus", "Gt", "4")), True, id="gt"),
        pytest.param(_affinity(_expr("cpus", "Lt", "4")), False, id="lt"),
        pytest.param(_affinity(_expr("cpus", "Gt", "x")), False, id="gt-malformed-term-skipped"),
        pytest.param(_affinity(_expr("cpus", "Lt", "1_0")), False, id="lt-underscore-value-unparsable"),
        pytest.param(_affinity(_expr("cpus", "Lt", "1_0"), _expr("zone", "In", "a")), True,
                     id="unparsable-term-skipped-others-still-count"),
        pytest.param(_affinity(_expr("cpus", "Lt", "99999999999999999999")), False, id="lt-value-beyond-int64"),
        pytest.param(_affinity(_expr("cpus", "Lt", " 9")), False, id="lt-value-with-space"),
        pytest.param(_affinity(_expr("cpus", "Gt", "+7")), True, id="gt-value-with-plus-sign"),
        pytest.param(_affinity(_expr("cpus", "Gt", "-07")), True, id="gt-negative-leading-zero"),
        pytest.param(_affinity(_expr("mem", "Gt", "1")), False, id="gt-underscore-label-never-matches"),
        pytest.param(_affinity(_expr("huge", "Gt", "1")), False, id="gt-label-beyond-int64-never-matches"),
        pytest.param(_affinity(_expr("zone", "In", "b"), _expr("gpu", "Exists")), True, id="terms-ored"),
        pytest.param(_affinity({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                 "values": ["node-1"]}]}), True, id="match-fields"),
        pytest.param(_affinity({"matchFields": [{"key": "metadata.name", "operator": "In",
                                                 "values": ["node-2"]}]}), False, id="match-fields-other"),
        pytest.param(_affinity({}), False, id="empty-term-matches-nothing"),
        pytest.param({"nodeSelector": {"zone": "a"}, **_affinity(_expr("zone", "In", "b"))},
                     False, id="selector-and-affinity-both-required"),
    ],
)
def test_required_node_affinity(spec: dict[str, Any], expected: bool) -> None:
    """nodeSelector AND any required term, with every operator."""
    assert required_node_affinity_matches(spec, NODE) is expected


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param({"operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, True, id="wildcard"),
        pytest.param({"key": "k", "operator": "Exists"}, {"key": "k", "effect": "NoExecute"}, True,
                     id="key-exists-any-effect"),
        pytest.param({"key": "k", "value": "v", "effect": "NoSchedule"},
                     {"key": "k", "value": "v", "effect": "NoSchedule"}, True, id="equal-default-operator"),
        pytest.param({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False,
                     id="equal-other-value"),
        pytest.param({"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                     {"key": "k", "effect": "NoExecute"}, False, id="effect-mismatch"),
        pytest.param({"value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False,
                     id="empty-key-needs-exists"),
    ],
)
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], expected: bool) -> None:
    """Toleration matching follows the core/v1 rules."""
    assert tolerates(toleration, taint) is expected


def test_find_untolerated_filters_by_effect() -> None:
    """PreferNoSchedule taints are never reported when only hard effects are asked for."""
    taints = [{"key": "soft", "effect": "PreferNoSchedule"}, {"key": "hard", "effect": "NoExecute"}]
    assert find_untolerated(taints, [], ["NoSchedule"]) is None
    assert find_untolerated(taints, [], ["NoSchedule", "NoExecute"]) == taints[1]
    assert find_untolerated(taints, [{"key": "hard", "operator": "Exists"}], ["NoExecute"]) is None


@pytest.mark.parametrize(
    ("value", "total", "up", "expected"),
    [
        pytest.param(3, 10, True, 3, id="int"),
        pytest.param("10%", 50, True, 5, id="exact-percent"),
        pytest.param("10%", 55, True, 6, id="round-up"),
        pytest.param("10%", 55, False, 5, id="round-down"),
        pytest.param(None, 10, True, 0, id="none-is-zero"),
        pytest.param("0%", 10, True, 0, id="zero-percent"),
    ],
)
def test_scaled_value(value: int | str | None, total: int, up: bool, expected: int) -> None:
    """Percentages scale against the total with the requested rounding."""
    assert scaled_value(value, total, round_up=up) == expected


@pytest.mark.parametrize("value", [
    pytest.param("abc", id="word"), pytest.param(-1, id="negative"),
    pytest.param("-5%", id="negative-percent"), pytest.param("5", id="bare-string"),
    pytest.param(True, id="bool"),
])
def test_scaled_value_rejects(value: Any) -> None:
    """Malformed int-or-percent values raise IntStrError."""
    with pytest.raises(IntStrError):
        scaled_value(value, 10, round_up=True)


def test_time_round_trip_is_utc() -> None:
    """Formatting is UTC and parsing accepts Z, offsets and fractions."""
    assert format_rfc3339(0) == "1970-01-01T00:00:00Z"
    assert format_micro(1.5) == "1970-01-01T00:00:01.500000Z"
    assert parse_rfc3339("1970-01-01T01:00:00+01:00") == 0.0
    assert parse_rfc3339(format_micro(1234.25)) == 1234.25


def test_field_selector() -> None:
    """Field selectors support =, == and != and expose exact terms for index lookups."""
    selector = parse_field_selector("spec.nodeName=node-1,status.phase!=Failed")
    assert selector.exact("spec.nodeName") == "node-1"
    fields = {"spec.nodeName": "node-1", "status.phase": "Running"}
    assert selector.matches(fields.get)
    assert not selector.matches({"spec.nodeName": "node-1", "status.phase": "Failed"}.get)
    with pytest.raises(FieldSelectorError):
        parse_field_selector("nonsense")


def _pod(ready: str, since: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}]}}


def test_pod_availability_needs_min_ready_seconds() -> None:
    """A pod is available only once Ready for strictly longer than minReadySeconds."""
    since = parse_rfc3339("2026-01-01T00:00:00Z")
    pod = _pod("True")
    assert is_pod_ready(pod)
    assert is_pod_available(pod, 0, since)
    assert not is_pod_available(pod, 10, since + 10)
    assert is_pod_available(pod, 10, since + 10.5)
    assert not is_pod_available(_pod("False"), 0, since)
