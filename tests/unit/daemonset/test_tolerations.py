"""Automatic daemon tolerations: which are added, and add-or-replace against the template's own."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.tolerations import add_or_update_toleration, daemon_tolerations, with_daemon_tolerations

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}


def _pairs(tolerations: list[Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in tolerations}


@pytest.mark.parametrize(
    ("host_network", "expected"),
    [
        pytest.param(
            False,
            {
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
            },
            id="pod-network",
        ),
        pytest.param(
            True,
            {
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
                ("node.kubernetes.io/network-unavailable", "NoSchedule"),
            },
            id="host-network-adds-network-unavailable",
        ),
    ],
)
def test_daemon_tolerations_set(host_network: bool, expected: set[tuple[str, str]]) -> None:
    """The automatic set is the six node-condition taints, plus network-unavailable for hostNetwork."""
    result = daemon_tolerations(host_network=host_network)
    assert _pairs(result) == expected
    assert all(t["operator"] == "Exists" and "tolerationSeconds" not in t for t in result)


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        pytest.param([], [NOT_READY], id="appended-to-empty"),
        pytest.param([dict(NOT_READY)], [NOT_READY], id="identical-kept-once"),
        pytest.param(
            [{**NOT_READY, "tolerationSeconds": 300}], [NOT_READY], id="same-identity-replaced-drops-seconds"
        ),
        pytest.param(
            [{"key": "other", "operator": "Exists"}, {**NOT_READY, "tolerationSeconds": 5}, {"key": "z"}],
            [{"key": "other", "operator": "Exists"}, NOT_READY, {"key": "z"}],
            id="replaced-in-place-others-kept",
        ),
        pytest.param(
            [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
            [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
                NOT_READY,
            ],
            id="different-effect-is-another-toleration",
        ),
        pytest.param(["garbage"], ["garbage", NOT_READY], id="non-object-entries-kept"),
    ],
)
def test_add_or_update_toleration(existing: list[Any], expected: list[Any]) -> None:
    """A toleration with the same key/operator/value/effect is replaced in place; others are kept."""
    assert add_or_update_toleration(existing, NOT_READY) == expected


def test_with_daemon_tolerations_does_not_mutate_spec() -> None:
    """The template's tolerations list is left untouched."""
    spec = {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}]}
    result = with_daemon_tolerations(spec)
    assert len(spec["tolerations"]) == 1
    assert result[0] == spec["tolerations"][0]
    assert len(result) == 7


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"tolerations": "nope"}, id="tolerations-not-a-list"),
        pytest.param({"hostNetwork": "yes"}, id="host-network-not-bool"),
        pytest.param({}, id="empty"),
    ],
)
def test_with_daemon_tolerations_tolerates_malformed_spec(spec: dict[str, Any]) -> None:
    """Malformed specs count as having no tolerations and no host network."""
    assert len(with_daemon_tolerations(spec)) == 6
