"""Custom resources against their CRD schema: types, bounds and x-kubernetes-validations, in apiextensions' words."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl_sim.validation.crschema import CustomSchema, RuleError
from simapi import Api

Obj = dict[str, Any]


def schema(spec: Obj) -> Obj:
    """A root schema whose ``spec`` is ``spec``."""
    return {"type": "object", "properties": {"spec": spec, "status": {"type": "object",
                                                                      "x-kubernetes-preserve-unknown-fields": True}}}


SIZE_RULES: Obj = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer"},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "name": {"type": "string", "maxLength": 5},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
        "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {
            "type": "string", "x-kubernetes-validations": [{"rule": "self != 'bad'", "message": "no bad values"}]}},
        "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "burst": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "x-kubernetes-validations": [
        {"rule": "self.size <= 10", "message": "size must be at most 10", "fieldPath": ".size"},
        {"rule": "!has(self.name) || self.name != 'root'", "reason": "FieldValueForbidden", "message": "no root"},
        {"rule": "!has(self.mode) || self.mode != 'b' || has(self.tags)", "reason": "FieldValueRequired",
         "fieldPath": ".tags", "message": "mode b needs tags"},
        {"rule": "size(self.tags) > 0"},
    ],
}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"size": 1, "tags": ["x"]}, [], id="valid"),
        pytest.param({"tags": ["x"]},
                     [("spec.size", "Required value"),
                      ("spec", 'Invalid value: "object": no such key: size evaluating rule: size must be at most 10')],
                     id="required-and-eval-error"),
        pytest.param({"size": 11, "tags": ["x"]},
                     [("spec.size", 'Invalid value: "object": size must be at most 10')], id="rule-with-field-path"),
        pytest.param({"size": 1, "tags": ["x"], "name": "root"}, [("spec", "Forbidden: no root")], id="forbidden"),
        pytest.param({"size": 1, "mode": "b"},
                     [("spec.tags", "Required value: mode b needs tags"),
                      ("spec", 'Invalid value: "object": no such key: tags evaluating rule: size(self.tags) > 0')],
                     id="required-reason"),
        pytest.param({"size": 1, "tags": []}, [("spec", 'Invalid value: "object": failed rule: size(self.tags) > 0')],
                     id="default-message"),
        pytest.param({"size": "1", "tags": ["x"]},
                     [("spec.size", 'Invalid value: "string": spec.size in body must be of type integer: "string"'),
                      ("spec", "Invalid value: \"object\": 'no such overload': call arguments did not match a "
                               "supported operator, function or macro signature for rule: size must be at most 10")],
                     id="wrong-type"),
        pytest.param({"size": 1, "tags": ["x"], "mode": "c"},
                     [("spec.mode", 'Unsupported value: "c": supported values: "a", "b"')], id="enum"),
        pytest.param({"size": 1, "tags": ["x"], "name": "toolong"},
                     [("spec.name", "Too long: may not be longer than 5")], id="max-length"),
        pytest.param({"size": 1, "tags": ["x", "y", "z"]},
                     [("spec.tags", "Too many: 3: must have at most 2 items")], id="max-items"),
        pytest.param({"size": 1, "tags": ["x"], "labels": {"a": "bad"}},
                     [("spec.labels[a]", 'Invalid value: "string": no bad values')], id="rule-on-map-value"),
        pytest.param({"size": 1, "tags": ["x"], "labels": {"a": "x", "b": "y"}},
                     [("spec.labels", "Too many: 2: must have at most 1 items")], id="max-properties"),
        pytest.param({"size": 1, "tags": ["x"], "port": True},
                     [("spec.port", 'Invalid value: "boolean": spec.port in body must be of type '
                                    'integer-or-string: "boolean"')], id="int-or-string"),
        pytest.param({"size": 1, "tags": ["x"], "burst": 0},
                     [("spec.burst", "Invalid value: 0: spec.burst in body should be greater than or equal to 1")],
                     id="minimum"),
        pytest.param({"size": 1, "tags": ["x"], "burst": 6},
                     [("spec.burst", "Invalid value: 6: spec.burst in body should be less than or equal to 5")],
                     id="maximum"),
    ],
)
def test_schema_and_rules(spec: Obj, expected: list[tuple[str, str]]) -> None:
    """Each problem is one cause with apiextensions' field path and message: schema errors, then rule errors."""
    causes = CustomSchema(schema(SIZE_RULES)).validate({"metadata": {"name": "x"}, "spec": spec}, None)
    got = [(c["field"], c["message"]) for c in causes]
    assert len(got) == len(expected), got
    for (field, message), (got_field, got_message) in zip(expected, got, strict=True):
        assert (got_field, got_message[: len(message)]) == (field, message), got


def test_unchanged_values_are_ratcheted_on_update() -> None:
    """An update that leaves an invalid value alone passes; changing it to another invalid value fails."""
    validator = CustomSchema(schema(SIZE_RULES))
    stored = {"metadata": {"name": "x"}, "spec": {"size": 50, "tags": ["x"]}, "status": {}}
    status_write = {**stored, "status": {"ready": True}}
    assert validator.validate(status_write, stored) == []
    worse = {**stored, "spec": {"size": 60, "tags": ["x"]}}
    assert [c["field"] for c in validator.validate(worse, stored)] == ["spec.size"]
    assert [c["field"] for c in validator.validate(stored, None)] == ["spec.size"]


def test_items_of_an_unchanged_list_are_ratcheted_with_it() -> None:
    """Rule errors in an atomic list's items are dropped while the list is unchanged, and reported once it changes."""
    validator = CustomSchema(schema({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.n < 5", "message": "n too big"}]}}}}))
    stored = {"spec": {"items": [{"n": 9}]}, "status": {}}
    assert validator.validate({**stored, "status": {"x": 1}}, stored) == []
    changed = {"spec": {"items": [{"n": 9}, {"n": 1}]}, "status": {}}
    assert [c["field"] for c in validator.validate(changed, stored)] == ["spec.items[0]"]


def test_transition_rules_see_the_stored_value() -> None:
    """A rule reading oldSelf runs on update only, against the stored value."""
    validator = CustomSchema(schema({"type": "object", "properties": {"size": {"type": "integer"}},
                                     "x-kubernetes-validations": [
                                         {"rule": "self.size >= oldSelf.size", "message": "size may not shrink"}]}))
    first = {"spec": {"size": 3}}
    assert validator.validate(first, None) == []
    assert validator.validate({"spec": {"size": 4}}, first) == []
    assert [c["message"] for c in validator.validate({"spec": {"size": 2}}, first)] == [
        'Invalid value: "object": size may not shrink']


def test_optional_old_self_runs_on_create_too() -> None:
    """With optionalOldSelf, a transition rule also runs on create, with oldSelf empty."""
    rule = "!oldSelf.hasValue() ? self.size == 1 : self.size >= oldSelf.value().size"
    validator = CustomSchema(schema({"type": "object", "properties": {"size": {"type": "integer"}},
                                     "x-kubernetes-validations": [
                                         {"rule": rule, "optionalOldSelf": True, "message": "never shrink"}]}))
    assert validator.validate({"spec": {"size": 1}}, None) == []
    assert len(validator.validate({"spec": {"size": 2}}, None)) == 1
    assert validator.validate({"spec": {"size": 3}}, {"spec": {"size": 2}}) == []
    assert len(validator.validate({"spec": {"size": 1}}, {"spec": {"size": 2}})) == 1


def test_root_rules_see_the_name() -> None:
    """A rule at the root reads metadata.name, as apiextensions exposes it; other metadata stays hidden."""
    validator = CustomSchema({"type": "object", "properties": {"metadata": {"type": "object"}},
                              "x-kubernetes-validations": [
                                  {"rule": "self.metadata.name.startsWith('w-')", "message": "name must start with w-"},
                                  {"rule": "!has(self.metadata.labels)", "message": "labels are hidden"}]})
    assert validator.validate({"metadata": {"name": "w-1", "labels": {"a": "b"}}}, None) == []
    assert [c["message"] for c in validator.validate({"metadata": {"name": "x"}}, None)] == [
        'Invalid value: "object": name must start with w-']


def test_message_expression_wins_over_message() -> None:
    """messageExpression's single-line result is the message; a failing one falls back to message."""
    rules = [{"rule": "self.size < 5", "message": "static", "messageExpression": "'size ' + string(self.size)"},
             {"rule": "self.size < 5", "message": "fallback", "messageExpression": "self.nope"}]
    validator = CustomSchema(schema({"type": "object", "x-kubernetes-validations": rules,
                                     "properties": {"size": {"type": "integer"}}}))
    messages = [c["message"] for c in validator.validate({"spec": {"size": 9}}, None)]
    assert messages == ['Invalid value: "object": size 9', 'Invalid value: "object": fallback']


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param([{"rule": "self.size <"}], id="syntax"),
        pytest.param([{"rule": "true", "reason": "Whatever"}], id="reason"),
        pytest.param([{"message": "no rule"}], id="no-rule"),
        pytest.param([{"rule": "true", "fieldPath": "size"}], id="field-path"),
    ],
)
def test_bad_rules_are_refused(rules: list[Obj]) -> None:
    """A rule apiextensions would refuse makes the schema fail to compile."""
    with pytest.raises(RuleError):
        CustomSchema(schema({"type": "object", "x-kubernetes-validations": rules}))


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.dsctl.io/v1/namespaces/default/widgets"


def widget_crd(rules: list[Obj]) -> Obj:
    spec_schema = {"type": "object", "properties": {"size": {"type": "integer"}}, "x-kubernetes-validations": rules}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dsctl.io"},
        "spec": {"group": "example.dsctl.io", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema(spec_schema)}}]},
    }


async def test_custom_resource_writes_are_validated_over_http(api: Api) -> None:
    """A CR that breaks its CRD's rule gets 422 Invalid with the cause; a CRD whose rule does not compile is refused."""
    status, body = await api.call("POST", CRDS, widget_crd([{"rule": "self.size <"}]))
    assert status == 422 and "compilation failed" in body["message"]
    await api.ok("POST", CRDS, widget_crd([{"rule": "self.size <= 3", "message": "too big"}]))
    status, body = await api.call("POST", WIDGETS, {"apiVersion": "example.dsctl.io/v1", "kind": "Widget",
                                                     "metadata": {"name": "w"}, "spec": {"size": 4}})
    assert status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"] == [
        {"field": "spec", "reason": "FieldValueInvalid", "message": 'Invalid value: "object": too big'}]
    assert body["message"] == 'Widget.example.dsctl.io "w" is invalid: spec: Invalid value: "object": too big'
    await api.ok("POST", WIDGETS, {"apiVersion": "example.dsctl.io/v1", "kind": "Widget",
                                   "metadata": {"name": "w"}, "spec": {"size": 3}})
