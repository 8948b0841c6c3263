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
    burst_replicas,
    node_readiness_gate,
    progress_deadline_seconds,
    rollout_controls,
)
from tests.unit.daemonset.objects import make_ds

_CONTROLS = {"partition": "partition", "paused": "paused", "selector": "selector",
             "rollingUpdateType": "rolling_update_type"}


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
