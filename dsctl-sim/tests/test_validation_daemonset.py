"""DaemonSet and ControllerRevision validation: each rejected case names the offending field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from dsctl_sim.validation import apply_defaults, validate

Obj = dict[str, Any]


def daemonset(**spec: Any) -> Obj:
    """A valid, defaulted DaemonSet; keyword arguments replace top-level spec fields."""
    ds: Obj = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "busybox:1.36"}]},
            },
        },
    }
    ds["spec"].update(spec)
    apply_defaults("apps/daemonsets", ds)
    return ds


def _edit(fn: Callable[[Obj], None]) -> Obj:
    ds = daemonset()
    fn(ds)
    return ds


def _tspec(ds: Obj) -> Obj:
    spec: Obj = ds["spec"]["template"]["spec"]
    return spec


def _rolling(ds: Obj, **values: Any) -> None:
    ds["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": values}


def test_valid_daemonset_has_no_causes() -> None:
    """The baseline object is valid, so every case below fails for its own reason only."""
    assert validate("apps/daemonsets", daemonset(), None) == []


@pytest.mark.parametrize(
    ("obj", "field", "reason", "text"),
    [
        pytest.param(_edit(lambda d: d["spec"].pop("selector")), "spec.selector", "FieldValueRequired", "Required",
                     id="selector-missing"),
        pytest.param(daemonset(selector={}), "spec.selector", "FieldValueInvalid", "empty selector",
                     id="selector-empty"),
        pytest.param(daemonset(selector={"matchLabels": {"app": "other"}}), "spec.template.metadata.labels",
                     "FieldValueInvalid", "`selector` does not match template `labels`", id="selector-mismatch"),
        pytest.param(daemonset(selector={"matchExpressions": [{"key": "app", "operator": "Near"}]}),
                     "spec.selector.matchExpressions[0].operator", "FieldValueInvalid", "not a valid selector operator",
                     id="selector-bad-operator"),
        pytest.param(daemonset(selector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
                     "spec.selector.matchExpressions[0].values", "FieldValueRequired", "must be specified",
                     id="selector-in-without-values"),
        pytest.param(daemonset(selector={"matchLabels": {"bad key!": "x"}}), "spec.selector.matchLabels",
                     "FieldValueInvalid", "name part", id="selector-bad-key"),
        pytest.param(_edit(lambda d: _tspec(d).update(containers=[])), "spec.template.spec.containers",
                     "FieldValueRequired", "Required", id="no-containers"),
        pytest.param(_edit(lambda d: _tspec(d)["containers"][0].pop("image")),
                     "spec.template.spec.containers[0].image", "FieldValueRequired", "Required", id="no-image"),
        pytest.param(_edit(lambda d: _tspec(d)["containers"][0].pop("name")),
                     "spec.template.spec.containers[0].name", "FieldValueRequired", "Required", id="no-name"),
        pytest.param(_edit(lambda d: _tspec(d)["containers"][0].update(name="Bad_Name")),
                     "spec.template.spec.containers[0].name", "FieldValueInvalid", "RFC 1123 label",
                     id="bad-container-name"),
        pytest.param(_edit(lambda d: _tspec(d).update(restartPolicy="Never")), "spec.template.spec.restartPolicy",
                     "FieldValueNotSupported", 'supported values: "Always"', id="restart-never"),
        pytest.param(_edit(lambda d: d["spec"].update(updateStrategy={"type": "Recreate"})),
                     "spec.updateStrategy.type", "FieldValueNotSupported", '"OnDelete", "RollingUpdate"',
                     id="strategy-unknown"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable=0, maxSurge=0)),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", "FieldValueRequired",
                     "Required value: cannot be 0 when maxSurge is 0", id="both-zero"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable="0%", maxSurge="0%")),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", "FieldValueRequired",
                     "Required value: cannot be 0 when maxSurge is 0", id="both-zero-percent"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable=1, maxSurge=1)),
                     "spec.updateStrategy.rollingUpdate.maxSurge", "FieldValueInvalid",
                     "Invalid value: 1: may not be set when maxUnavailable is non-zero", id="both-non-zero"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable="10%", maxSurge="20%")),
                     "spec.updateStrategy.rollingUpdate.maxSurge", "FieldValueInvalid",
                     "Invalid value: 20%: may not be set when maxUnavailable is non-zero", id="both-non-zero-percent"),
        pytest.param(daemonset(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}),
                     "spec.updateStrategy.rollingUpdate.maxSurge", "FieldValueInvalid",
                     "may not be set when maxUnavailable is non-zero", id="surge-with-defaulted-unavailable"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable=-1, maxSurge=0)),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", "FieldValueInvalid",
                     "greater than or equal to 0", id="negative-unavailable"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable="abc", maxSurge=0)),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", "FieldValueInvalid",
                     "Invalid value: abc: a valid percent string must be a numeric string followed by an ending '%'",
                     id="garbage-unavailable"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable=1, maxSurge="150%")),
                     "spec.updateStrategy.rollingUpdate.maxSurge", "FieldValueInvalid",
                     "must not be greater than 100%", id="surge-over-100"),
        pytest.param(_edit(lambda d: _rolling(d, maxUnavailable="-5%", maxSurge=0)),
                     "spec.updateStrategy.rollingUpdate.maxUnavailable", "FieldValueInvalid",
                     "a valid percent string", id="negative-percent"),
        pytest.param(daemonset(minReadySeconds=-1), "spec.minReadySeconds", "FieldValueInvalid",
                     "greater than or equal to 0", id="negative-min-ready"),
        pytest.param(daemonset(revisionHistoryLimit=-3), "spec.revisionHistoryLimit", "FieldValueInvalid",
                     "greater than or equal to 0", id="negative-history-limit"),
        pytest.param(_edit(lambda d: d["metadata"].update(name="Bad_Name")), "metadata.name", "FieldValueInvalid",
                     "RFC 1123 subdomain", id="bad-name"),
        pytest.param(_edit(lambda d: d["metadata"].pop("name")), "metadata.name", "FieldValueRequired",
                     "name or generateName is required", id="no-name-no-generate-name"),
        pytest.param(_edit(lambda d: _tspec(d).update(activeDeadlineSeconds=5)),
                     "spec.template.spec.activeDeadlineSeconds", "FieldValueForbidden", "not Supported",
                     id="active-deadline"),
    ],
)
def test_invalid_daemonsets(obj: Obj, field: str, reason: str, text: str) -> None:
    """Every rejection the contract lists produces a cause naming that exact field."""
    causes = validate("apps/daemonsets", obj, None)
    matching = [c for c in causes if c["field"] == field]
    assert matching, causes
    assert matching[0]["reason"] == reason
    assert text in matching[0]["message"]


def test_selector_is_immutable_but_template_is_not() -> None:
    """An update may change the template, never the selector."""
    old = daemonset()
    new = copy.deepcopy(old)
    _tspec(new)["containers"][0]["image"] = "busybox:1.37"
    assert validate("apps/daemonsets", new, old) == []
    new["spec"]["selector"] = {"matchLabels": {"app": "agent", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    causes = validate("apps/daemonsets", new, old)
    assert [(c["field"], c["message"].endswith("field is immutable")) for c in causes] == [("spec.selector", True)]


def test_generate_name_is_enough() -> None:
    """A create with only generateName is valid; its prefix may end in '-'."""
    ds = daemonset()
    ds["metadata"] = {"generateName": "agent-", "namespace": "default"}
    assert validate("apps/daemonsets", ds, None) == []


@pytest.mark.parametrize(
    ("status", "field"),
    [
        pytest.param({"numberReady": -1}, "status.numberReady", id="ready"),
        pytest.param({"desiredNumberScheduled": "3"}, "status.desiredNumberScheduled", id="not-int"),
        pytest.param({"collisionCount": -2}, "status.collisionCount", id="collisions"),
    ],
)
def test_status_writes_need_non_negative_counters(status: Obj, field: str) -> None:
    """The status subresource rejects negative or non-integer counters."""
    ds = daemonset()
    ds["status"] = status
    causes = validate("apps/daemonsets", ds, daemonset(), subresource="status")
    assert [c["field"] for c in causes] == [field]


def _revision(**fields: Any) -> Obj:
    rev: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "agent-5d8f7c", "namespace": "default"},
        "data": {"spec": {"template": {"$patch": "replace"}}},
        "revision": 1,
    }
    rev.update(fields)
    return rev


@pytest.mark.parametrize(
    ("obj", "old", "field"),
    [
        pytest.param(_revision(revision=-1), None, "revision", id="negative-revision"),
        pytest.param(_revision(data=None), None, "data", id="no-data"),
        pytest.param(_revision(data={"spec": {}}), _revision(), "data", id="data-immutable"),
    ],
)
def test_invalid_controller_revisions(obj: Obj, old: Obj | None, field: str) -> None:
    """Revisions need data and a non-negative number; data never changes."""
    assert [c["field"] for c in validate("apps/controllerrevisions", obj, old)] == [field]


def test_controller_revision_renumbering_is_allowed() -> None:
    """A rollback renumbers a revision in place: only `revision` changes, which is valid."""
    assert validate("apps/controllerrevisions", _revision(revision=7), _revision()) == []
