"""``EXTENSION_FIELDS``: the one table of dsctl's fields beyond apps/v1, and the readers built on it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dsctl.daemonset.extensions import (
    ANNOTATION_PREFIX,
    EXTENSION_FIELDS,
    NO_CONTROLS,
    ExtensionField,
    InvalidControl,
    burst_replicas,
    max_disruptions,
    node_readiness_gate,
    progress_deadline_seconds,
    rollout_controls,
)
from tests.unit.daemonset.objects import make_ds

_CONTROLS = {"partition": "partition", "paused": "paused", "selector": "selector",
             "rollingUpdateType": "rolling_update_type", "unhealthyNodePolicy": "unhealthy_node_policy",
             "unhealthyNodeSeconds": "unhealthy_node_seconds"}


def test_table_names_each_field_once() -> None:
    """Field names, CRD paths and annotations are unique, and every line of the table is filled in."""
    for attr in ("name", "crd_path", "annotation"):
        values = [getattr(f, attr) for f in EXTENSION_FIELDS]
        assert len(values) == len(set(values)), attr
    for field in EXTENSION_FIELDS:
        assert field.value_type and field.doc and field.crd_path.startswith("spec.")
        assert field.annotation.startswith(ANNOTATION_PREFIX)


@pytest.mark.parametrize("field", [pytest.param(f, id=f.name) for f in EXTENSION_FIELDS])
def test_default_is_what_the_readers_return(field: ExtensionField) -> None:
    """A DaemonSet that sets nothing reads as each field's declared default."""
    bare = make_ds()
    read: Any
    if field.name in _CONTROLS:
        read = getattr(rollout_controls(bare), _CONTROLS[field.name])
        assert getattr(NO_CONTROLS, _CONTROLS[field.name]) == read
    elif field.name == "progressDeadlineSeconds":
        read = progress_deadline_seconds(bare)
    elif field.name == "maxDisruptions":
        read = max_disruptions(bare, desired=10)
    elif field.name == "nodeReadinessGate":
        read = node_readiness_gate(bare)
    else:
        read = burst_replicas(bare)
    assert read == field.default


@pytest.mark.parametrize("field", [pytest.param(f, id=f.name) for f in EXTENSION_FIELDS])
def test_crd_path_is_the_camel_case_api_field(field: ExtensionField) -> None:
    """CRD fields keep the API's camelCase: only annotations follow the annotation convention."""
    assert re.fullmatch(r"[a-z][A-Za-z]*", field.name)
    assert field.crd_path.endswith("." + field.name)


def _rolling_with(**fields: Any) -> dict[str, Any]:
    ds = make_ds()
    ds["spec"]["updateStrategy"]["rollingUpdate"].update(fields)
    return ds


@pytest.mark.parametrize(
    ("ds", "policy", "seconds"),
    [
        pytest.param(make_ds(annotations={"dsctl.io/unhealthy-node-policy": "Skip"}), "Skip", 60, id="annotation-skip"),
        pytest.param(make_ds(annotations={"dsctl.io/unhealthy-node-policy": "Skip",
                                          "dsctl.io/unhealthy-node-seconds": " 5 "}), "Skip", 5,
                     id="annotation-seconds"),
        pytest.param(_rolling_with(unhealthyNodePolicy="Skip", unhealthyNodeSeconds=0), "Skip", 0, id="crd-fields"),
        pytest.param(make_ds(annotations={"dsctl.io/unhealthy-node-policy": ""}), "Count", 60, id="empty-is-count"),
    ],
)
def test_unhealthy_node_policy_is_read(ds: dict[str, Any], policy: str, seconds: int) -> None:
    """unhealthyNodePolicy and unhealthyNodeSeconds are read from the CRD fields or the annotations."""
    controls = rollout_controls(ds)
    assert (controls.unhealthy_node_policy, controls.unhealthy_node_seconds) == (policy, seconds)
    assert controls.skips_unhealthy is (policy == "Skip")
    assert not controls.holds_back


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        pytest.param({"dsctl.io/unhealthy-node-policy": "skip"}, "dsctl.io/unhealthy-node-policy", id="unknown-policy"),
        pytest.param({"dsctl.io/unhealthy-node-seconds": "1m"}, "dsctl.io/unhealthy-node-seconds",
                     id="unparsable-duration"),
        pytest.param({"dsctl.io/unhealthy-node-seconds": "-5"}, "dsctl.io/unhealthy-node-seconds", id="negative"),
    ],
)
def test_unreadable_unhealthy_settings_name_their_annotation(annotations: dict[str, str], field: str) -> None:
    """A bad policy or duration raises InvalidControl naming the annotation, never anything else."""
    with pytest.raises(InvalidControl) as info:
        rollout_controls(make_ds(annotations=annotations))
    assert info.value.field == f"metadata.annotations[{field}]"


@pytest.mark.parametrize(
    ("value", "desired", "expected"),
    [
        pytest.param("1", 10, 1, id="integer-annotation"),
        pytest.param(2, 10, 2, id="integer-field"),
        pytest.param("10%", 15, 2, id="percent-rounds-up"),
        pytest.param("0%", 15, 0, id="zero-percent"),
        pytest.param("100%", 7, 7, id="all"),
        pytest.param("0", 7, 0, id="zero"),
    ],
)
def test_max_disruptions_is_an_integer_or_a_percentage_of_desired(value: Any, desired: int, expected: int) -> None:
    """maxDisruptions: an integer, or a percentage of the desired pods rounded up."""
    if isinstance(value, int):
        ds = make_ds()
        ds["spec"]["maxDisruptions"] = value
    else:
        ds = make_ds(annotations={"dsctl.io/max-disruptions": value})
    assert max_disruptions(ds, desired=desired) == expected


@pytest.mark.parametrize("value", [pytest.param(v, id=v) for v in ("-1", "101%", "1.5", "ten", "%", "-5%")])
def test_unreadable_max_disruptions_raises(value: str) -> None:
    """A negative, over-100 % or unparsable budget raises InvalidControl."""
    with pytest.raises(InvalidControl):
        max_disruptions(make_ds(annotations={"dsctl.io/max-disruptions": value}), desired=10)
