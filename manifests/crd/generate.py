"""Generate ``daemonsets.dsctl.io.yaml``: dsctl's own DaemonSet kind, with apps/v1's schema.

In a cluster that runs kube-controller-manager, two controllers acting on one apps/v1
DaemonSet would fight, so dsctl can serve the same object shape under ``dsctl.io/v1``.
This script owns turning the apps/v1 DaemonSet JSON schema into a CRD schema; run it again
after raising ``K8S_VERSION`` and commit the output. ``--check`` exits 1 when the committed
file is stale, for CI.

The source is the JSON Schema that the ``kubernetes-validate`` package ships for every
Kubernetes minor release. apiextensions.k8s.io/v1 only takes *structural* schemas, so the
conversion:

- inlines every ``$ref`` (the DaemonSet closure has no cycles; a cycle raises);
- collapses ``type: [T, "null"]`` to ``type: T`` (the apiserver prunes nulls of
  non-nullable fields, which is what built-in types do with them too);
- turns IntOrString and Quantity (``oneOf`` string/number) into
  ``x-kubernetes-int-or-string`` with the ``anyOf`` integer/string pair the apiserver
  allows beside it. A float quantity such as ``cpu: 0.5`` is therefore rejected in CRD
  mode; write ``"500m"``;
- drops ``additionalProperties: false`` (structural schemas prune unknown fields instead)
  and keywords CRDs do not know (strategic-merge-patch hints, unions, GVK lists);
- marks objects that have neither properties nor a value schema (managedFields' FieldsV1)
  with ``x-kubernetes-preserve-unknown-fields``;
- gives list-map keys that are neither required nor defaulted the default the built-in
  API applies (a container port's ``protocol`` is ``TCP``), because apiextensions demands
  one of the two;
- keeps the root ``metadata`` as a bare object, the only form the apiserver accepts there,
  while the pod template's ObjectMeta is inlined in full so its labels are not pruned;
- shortens every description to its first sentence. With full texts the CRD is about
  330 KB of JSON, and client-side ``kubectl apply`` stores the whole object in an
  annotation limited to 256 KiB. ``kubectl explain daemonsets.apps`` keeps the long texts.

Then ``add_validations`` puts on the schema what apps/v1 checks in Go and a schema cannot
say by shape: ``x-kubernetes-validations`` CEL rules (``RULES``) with apps/v1's messages, and
the bounds (``BOUNDS``) that keep their estimated cost within kube-apiserver's limits.

Any keyword not listed in ``_KEEP`` or ``_DROP`` raises, so a new schema feature in a later
Kubernetes release is noticed here rather than rejected by a cluster.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "BOUNDS",
    "GROUP",
    "K8S_VERSION",
    "RULES",
    "add_validations",
    "build_crd",
    "first_sentence",
    "load_definitions",
    "main",
    "readiness_gate",
    "render",
    "schema_node",
    "structural_schema",
]

K8S_VERSION = "1.36.0"
GROUP = "dsctl.io"
VERSION = "v1"
OUTPUT = Path(__file__).with_name(f"daemonsets.{GROUP}.yaml")

_DEFS_PREFIX = "io.k8s."
_ROOT = "io.k8s.api.apps.v1.DaemonSet"
_INT_OR_STRING = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
}
# Keywords copied as they are (after their sub-schemas are converted).
_KEEP = {
    "description", "type", "format", "enum", "required", "items", "properties",
    "additionalProperties", "default",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
}
# Keywords with no meaning in a CRD schema.
_DROP = {
    "$ref", "$schema", "$id",
    "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
    "x-kubernetes-unions", "x-kubernetes-group-version-kind",
}
# Defaults the built-in API applies to list-map keys that its schema leaves optional.
_LIST_MAP_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.LocalObjectReference", "name"): "",
}

_SENTENCE_END = re.compile(r"\.\s+(?=[A-Z])")

Schema = dict[str, Any]


class SchemaConversionError(ValueError):
    """The source schema uses something this converter does not know how to express."""


def load_definitions(version: str = K8S_VERSION) -> dict[str, Schema]:
    """The ``$defs`` table of the non-strict schema set for one Kubernetes version."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{version}-local"
    text = (root / "_definitions.json").read_text(encoding="utf-8")
    defs: dict[str, Schema] = json.loads(text)["$defs"]
    return defs


def _ref_name(ref: str) -> str:
    name = ref.rsplit("/", 1)[-1]
    if not name.startswith(_DEFS_PREFIX):
        raise SchemaConversionError(f"unexpected $ref {ref!r}")
    return name


def _single_type(value: Any, *, where: str) -> str:
    types = [value] if isinstance(value, str) else [t for t in value if t != "null"]
    if len(types) != 1:
        raise SchemaConversionError(f"{where}: cannot express type {value!r}")
    return str(types[0])


def structural_schema(
    schema: Mapping[str, Any], defs: Mapping[str, Schema], *, where: str = "", stack: tuple[str, ...] = ()
) -> Schema:
    """Convert one node (and everything below it) into apiextensions v1 structural form."""
    node: dict[str, Any] = dict(schema)
    def_name = ""
    if "$ref" in node:
        def_name = _ref_name(node["$ref"])
        if def_name in stack:
            raise SchemaConversionError(f"{where}: recursive reference to {def_name}")
        # Keywords next to the $ref (usually a field-specific description) win over the target's.
        node = {**defs[def_name], **{k: v for k, v in node.items() if k != "$ref"}}
        stack = (*stack, def_name)
    if def_name in _INT_OR_STRING:
        out: Schema = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
        if "description" in node:
            out = {"description": first_sentence(node["description"]), **out}
        return out
    unknown = set(node) - _KEEP - _DROP
    if unknown:
        raise SchemaConversionError(f"{where}: unsupported keywords {sorted(unknown)}")
    out = {}
    for key in sorted(node, key=_key_order):
        value = node[key]
        if key in _DROP:
            continue
        if key == "type":
            out["type"] = _single_type(value, where=where)
        elif key == "properties":
            out["properties"] = {
                name: structural_schema(sub, defs, where=f"{where}.{name}", stack=stack)
                for name, sub in sorted(value.items())
            }
        elif key == "items":
            out["items"] = structural_schema(value, defs, where=f"{where}[]", stack=stack)
        elif key == "additionalProperties":
            if isinstance(value, Mapping):
                sub = structural_schema(value, defs, where=f"{where}{{}}", stack=stack)
                out["additionalProperties"] = sub
        elif key == "description":
            out["description"] = first_sentence(value)
        else:
            out[key] = copy.deepcopy(value)
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    if out.get("x-kubernetes-list-type") == "map":
        _default_list_map_keys(out, node, where=where)
    return out


def first_sentence(text: str) -> str:
    """The text up to the first full stop that ends a sentence (the next word is capitalised)."""
    match = _SENTENCE_END.search(text)
    return text[: match.start() + 1] if match else text.strip()


def _key_order(key: str) -> tuple[int, str]:
    # Description first, then the type, then everything else alphabetically: easy to read.
    return ({"description": 0, "type": 1}.get(key, 2), key)


def _default_list_map_keys(out: Schema, source: Mapping[str, Any], *, where: str) -> None:
    items = out.get("items", {})
    item_ref = source.get("items", {}).get("$ref", "")
    item_def = _ref_name(item_ref) if item_ref else ""
    required = set(items.get("required", ()))
    for key in out.get("x-kubernetes-list-map-keys", ()):
        prop = items.get("properties", {}).get(key)
        if prop is None:
            raise SchemaConversionError(f"{where}: list-map key {key!r} is not a property of the items")
        if key in required or "default" in prop:
            continue
        if (item_def, key) not in _LIST_MAP_KEY_DEFAULTS:
            raise SchemaConversionError(f"{where}: list-map key {key!r} needs a default ({item_def})")
        prop["default"] = _LIST_MAP_KEY_DEFAULTS[(item_def, key)]


# --- validation: what apps/v1's Go validation refuses, as schema bounds and CEL rules -----------
#
# kube-apiserver validates a DaemonSet in Go; a custom resource only by its schema. The rules
# below (``x-kubernetes-validations``) mirror ``ValidateDaemonSetSpec``: the update strategy,
# the selector and its match with the template labels, containers, node affinity and label
# values. Messages are apps/v1's own. Paths name schema nodes: ``.`` for properties, ``[]``
# for list items, ``{}`` for map values.
#
# The apiserver estimates each rule's worst-case cost when the CRD is written and refuses
# one above 10^7, or a schema whose rules add up above 10^8, each rule counted as often as
# the enclosing lists and maps allow. Strings, lists and maps a rule reads are therefore
# bounded (``BOUNDS``): label values and qualified names by their apps/v1 limits (63 and
# 253 + 1 + 63 characters), operators by 16, label maps and selector lists by limits far
# above any real DaemonSet. ``tests/manifests/test_crd_rules.py`` checks those bounds and a
# conservative total (ADR 0022 has the figures). The int-or-percent syntax of
# maxSurge/maxUnavailable (negative, not a percentage, over 100%) is left to the
# controller's own validation: an int-or-string cannot carry maxLength, and each regex over
# an unbounded string is estimated at about 1.3 million.

LABEL_VALUE_REGEX = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    f"and must start and end with an alphanumeric character (regex used for validation is '{LABEL_VALUE_REGEX}')"
)
QUALIFIED_NAME_REGEX = (
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
)
MAX_LABELS = 256
MAX_SELECTOR_REQUIREMENTS = 64
MAX_SELECTOR_VALUES = 256
MAX_NODE_SELECTOR_TERMS = 64
MAX_OPERATOR = 16  # the longest operator, DoesNotExist, has 12 characters

_LABEL_VALUE_RULE = {"rule": f"self.matches('^{LABEL_VALUE_REGEX}$')", "message": LABEL_VALUE_MESSAGE}
_LABEL_VALUE_BOUNDS = {"maxLength": 63}

# Template labels that the selector must match, with absent labels read as none.
_TPL = "has(self.template.metadata) && has(self.template.metadata.labels)"
_SELECTOR_MATCHES = (
    "!has(self.selector) || !has(self.template) || ("
    "(!has(self.selector.matchLabels) || self.selector.matchLabels.all(k, "
    f"{_TPL} && k in self.template.metadata.labels"
    " && self.template.metadata.labels[k] == self.selector.matchLabels[k]))"
    " && (!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, "
    f"e.operator == 'In' ? ({_TPL} && e.key in self.template.metadata.labels && has(e.values)"
    " && self.template.metadata.labels[e.key] in e.values)"
    f" : e.operator == 'NotIn' ? !({_TPL} && e.key in self.template.metadata.labels && has(e.values)"
    " && self.template.metadata.labels[e.key] in e.values)"
    f" : e.operator == 'Exists' ? ({_TPL} && e.key in self.template.metadata.labels)"
    f" : !({_TPL} && e.key in self.template.metadata.labels))))"
)


def _nonzero(field: str) -> str:
    # getIntOrPercentValue != 0: an int, or a string whose digits (before an optional '%') are not all 0.
    return f"(type(self.{field}) == int ? self.{field} != 0 : self.{field}.matches('^0*[1-9][0-9]*%?$'))"


def _values_rules() -> list[dict[str, Any]]:
    """``values`` against ``operator``, as label and node selector requirements both check them."""
    return [
        {
            "rule": "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
            "fieldPath": ".values",
            "reason": "FieldValueRequired",
            "message": "must be specified when `operator` is 'In' or 'NotIn'",
        },
        {
            "rule": "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
            "fieldPath": ".values",
            "reason": "FieldValueForbidden",
            "message": "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        },
    ]


def _node_selector_requirement_rules() -> list[dict[str, Any]]:
    return [
        {
            "rule": "self.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']",
            "fieldPath": ".operator",
            "message": "not a valid selector operator",
        },
        *_values_rules(),
        {
            "rule": "!(self.operator in ['Gt', 'Lt']) || (has(self.values) && size(self.values) == 1)",
            "fieldPath": ".values",
            "reason": "FieldValueRequired",
            "message": "must be specified single value when `operator` is 'Lt' or 'Gt'",
        },
        _qualified_key_rule(),
    ]


def _qualified_key_rule() -> dict[str, Any]:
    return {
        "rule": f"self.key.matches('^{QUALIFIED_NAME_REGEX}$')",
        "fieldPath": ".key",
        "message": "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), "
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    }


def _node_field_requirement_rules() -> list[dict[str, Any]]:
    return [
        {"rule": "self.key == 'metadata.name'", "fieldPath": ".key", "message": "not a valid field selector key"},
        {
            "rule": "self.operator in ['In', 'NotIn']",
            "fieldPath": ".operator",
            "message": "not a valid selector operator",
        },
        {
            "rule": "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) == 1)",
            "fieldPath": ".values",
            "reason": "FieldValueRequired",
            "message": "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
        },
    ]


_AFFINITY = "spec.template.spec.affinity.nodeAffinity"
_REQUIRED_TERMS = f"{_AFFINITY}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
_PREFERRED = f"{_AFFINITY}.preferredDuringSchedulingIgnoredDuringExecution"

RULES: dict[str, list[dict[str, Any]]] = {
    "spec": [
        {
            "rule": _SELECTOR_MATCHES,
            "fieldPath": ".template.metadata.labels",
            "message": "`selector` does not match template `labels`",
        },
        {
            # dsctl's maxDisruptions: an int >= 0, or a percentage up to 100 %.
            "rule": "!has(self.maxDisruptions) || (type(self.maxDisruptions) == int ? self.maxDisruptions >= 0"
            " : self.maxDisruptions.matches('^(100|[1-9]?[0-9])%$'))",
            "fieldPath": ".maxDisruptions",
            "message": "must be an integer >= 0 or a percentage from 0% to 100%",
        },
    ],
    "spec.selector": [
        {
            "rule": "(has(self.matchLabels) && size(self.matchLabels) > 0)"
            " || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",
            "message": "empty selector is invalid for daemonset",
        },
    ],
    "spec.selector.matchLabels{}": [_LABEL_VALUE_RULE],
    "spec.selector.matchExpressions[]": [
        {
            "rule": "self.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist']",
            "fieldPath": ".operator",
            "message": "not a valid selector operator",
        },
        *_values_rules(),
        _qualified_key_rule(),
    ],
    "spec.selector.matchExpressions[].values[]": [_LABEL_VALUE_RULE],
    "spec.updateStrategy.rollingUpdate": [
        {
            # An absent maxUnavailable is 1, as apps/v1 defaults it.
            "rule": f"!(!has(self.maxUnavailable) || {_nonzero('maxUnavailable')})"
            f" || !(has(self.maxSurge) && {_nonzero('maxSurge')})",
            "fieldPath": ".maxSurge",
            "message": "may not be set when maxUnavailable is non-zero",
        },
        {
            "rule": f"(!has(self.maxUnavailable) || {_nonzero('maxUnavailable')})"
            f" || (has(self.maxSurge) && {_nonzero('maxSurge')})",
            "fieldPath": ".maxUnavailable",
            "reason": "FieldValueRequired",
            "message": "cannot be 0 when maxSurge is 0",
        },
        {
            # OpenKruise's rule for its in-place type: a patched pod has no surge neighbour.
            "rule": f"!has(self.rollingUpdateType) || self.rollingUpdateType != 'InPlaceIfPossible'"
            f" || !(has(self.maxSurge) && {_nonzero('maxSurge')})",
            "fieldPath": ".maxSurge",
            "reason": "FieldValueRequired",
            "message": "must be 0 for rollingUpdateType InPlaceIfPossible",
        },
    ],
    "spec.template.metadata.labels{}": [_LABEL_VALUE_RULE],
    "spec.template.spec": [
        {
            "rule": "!has(self.containers) || size(self.containers) > 0",
            "fieldPath": ".containers",
            "reason": "FieldValueRequired",
            "message": "a pod needs at least one container",
        },
    ],
    "spec.template.spec.nodeSelector{}": [_LABEL_VALUE_RULE],
    f"{_AFFINITY}.requiredDuringSchedulingIgnoredDuringExecution": [
        {
            "rule": "!has(self.nodeSelectorTerms) || size(self.nodeSelectorTerms) > 0",
            "fieldPath": ".nodeSelectorTerms",
            "reason": "FieldValueRequired",
            "message": "must have at least one node selector term",
        },
    ],
    f"{_REQUIRED_TERMS}[].matchExpressions[]": _node_selector_requirement_rules(),
    f"{_REQUIRED_TERMS}[].matchFields[]": _node_field_requirement_rules(),
    f"{_PREFERRED}[].preference.matchExpressions[]": _node_selector_requirement_rules(),
    f"{_PREFERRED}[].preference.matchFields[]": _node_field_requirement_rules(),
}

# Schema bounds: the ones apps/v1 implies (label values, qualified names), and the ones that
# keep the rules' estimated cost within the apiserver's limits.
BOUNDS: dict[str, dict[str, Any]] = {
    "spec.selector.matchLabels": {"maxProperties": MAX_LABELS},
    "spec.selector.matchLabels{}": _LABEL_VALUE_BOUNDS,
    "spec.selector.matchExpressions": {"maxItems": MAX_SELECTOR_REQUIREMENTS},
    "spec.selector.matchExpressions[].key": {"maxLength": 317},
    "spec.selector.matchExpressions[].operator": {"maxLength": MAX_OPERATOR},
    "spec.selector.matchExpressions[].values": {"maxItems": MAX_SELECTOR_VALUES},
    "spec.selector.matchExpressions[].values[]": _LABEL_VALUE_BOUNDS,
    "spec.template.metadata.labels": {"maxProperties": MAX_LABELS},
    "spec.template.metadata.labels{}": _LABEL_VALUE_BOUNDS,
    "spec.template.spec.nodeSelector": {"maxProperties": MAX_LABELS},
    "spec.template.spec.nodeSelector{}": _LABEL_VALUE_BOUNDS,
    "spec.updateStrategy.type": {"enum": ["OnDelete", "RollingUpdate"]},
    _REQUIRED_TERMS: {"maxItems": MAX_NODE_SELECTOR_TERMS},
    f"{_REQUIRED_TERMS}[].matchExpressions": {"maxItems": MAX_SELECTOR_REQUIREMENTS},
    f"{_REQUIRED_TERMS}[].matchExpressions[].key": {"maxLength": 317},
    f"{_REQUIRED_TERMS}[].matchExpressions[].operator": {"maxLength": MAX_OPERATOR},
    f"{_REQUIRED_TERMS}[].matchFields[].key": {"maxLength": 317},
    f"{_REQUIRED_TERMS}[].matchFields[].operator": {"maxLength": MAX_OPERATOR},
    f"{_REQUIRED_TERMS}[].matchFields": {"maxItems": MAX_SELECTOR_REQUIREMENTS},
    _PREFERRED: {"maxItems": MAX_NODE_SELECTOR_TERMS},
    f"{_PREFERRED}[].preference.matchExpressions": {"maxItems": MAX_SELECTOR_REQUIREMENTS},
    f"{_PREFERRED}[].preference.matchExpressions[].key": {"maxLength": 317},
    f"{_PREFERRED}[].preference.matchExpressions[].operator": {"maxLength": MAX_OPERATOR},
    f"{_PREFERRED}[].preference.matchFields[].key": {"maxLength": 317},
    f"{_PREFERRED}[].preference.matchFields[].operator": {"maxLength": MAX_OPERATOR},
    f"{_PREFERRED}[].preference.matchFields": {"maxItems": MAX_SELECTOR_REQUIREMENTS},
}


def schema_node(root: Schema, path: str) -> Schema:
    """The node of ``root`` (the CRD's ``openAPIV3Schema``) that ``path`` names (``spec.a[].b{}``)."""
    node = root
    for part in re.findall(r"[^.\[\]{}]+|\[\]|\{\}", path):
        if part == "[]":
            node = node["items"]
        elif part == "{}":
            node = node["additionalProperties"]
        else:
            node = node["properties"][part]
    return node


def add_validations(root: Schema) -> Schema:
    """``root`` with ``BOUNDS`` and ``RULES`` applied (``KeyError`` names a path that moved)."""
    out = copy.deepcopy(root)
    for path, bounds in BOUNDS.items():
        schema_node(out, path).update(copy.deepcopy(bounds))
    for path, rules in RULES.items():
        schema_node(out, path)["x-kubernetes-validations"] = copy.deepcopy(rules)
    return out


# The columns `kubectl get daemonsets.apps` prints, then the `-o wide` ones (priority 1).
_PRINTER_COLUMNS: tuple[tuple[str, str, str, str, int], ...] = (
    ("Desired", "integer", ".status.desiredNumberScheduled", "Nodes that should run the pod.", 0),
    ("Current", "integer", ".status.currentNumberScheduled", "Nodes running at least one pod.", 0),
    ("Ready", "integer", ".status.numberReady", "Nodes whose daemon pod is Ready.", 0),
    ("Up-to-date", "integer", ".status.updatedNumberScheduled", "Nodes running the current template.", 0),
    ("Available", "integer", ".status.numberAvailable", "Nodes whose daemon pod is available.", 0),
    ("Node Selector", "string", ".spec.template.spec.nodeSelector", "The template's node selector.", 0),
    ("Age", "date", ".metadata.creationTimestamp", "Time since creation.", 0),
    ("Containers", "string", ".spec.template.spec.containers[*].name", "Container names.", 1),
    ("Images", "string", ".spec.template.spec.containers[*].image", "Container images.", 1),
    ("Selector", "string", ".spec.selector", "The pod label selector.", 1),
)


def _printer_columns() -> list[dict[str, Any]]:
    columns = []
    for name, kind, path, description, priority in _PRINTER_COLUMNS:
        col: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path, "description": description}
        if priority:
            col["priority"] = priority
        columns.append(col)
    return columns


_LABEL_SELECTOR = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"


def rollout_controls(defs: Mapping[str, Schema]) -> Schema:
    """dsctl's fields beyond apps/v1 under ``rollingUpdate``; see ``dsctl.daemonset.extensions``.

    Without them a real apiserver prunes the fields from every write (structural schema).
    """
    selector = structural_schema(defs[_LABEL_SELECTOR], defs, where="rollingUpdate.selector")
    selector["description"] = (
        "dsctl: only pods on nodes whose labels match are updated (a canary); unset updates every node.")
    return {
        "partition": {
            "description": "dsctl: keep this many pods on their old revision. Nodes are updated in name order, "
            "so the pods kept are on the last nodes by name. Default 0.",
            "type": "integer", "format": "int32", "minimum": 0,
        },
        "paused": {
            "description": "dsctl: when true, no pod is deleted or updated for the new revision; new nodes "
            "still get pods of the current revision.",
            "type": "boolean",
        },
        "selector": selector,
        "rollingUpdateType": {
            "description": "dsctl: Standard (the default) replaces pods; InPlaceIfPossible patches a change of "
            "container images only into the running pods (same name, UID and node) and replaces them for any "
            "other change. InPlaceIfPossible requires maxSurge 0.",
            "type": "string", "enum": ["Standard", "InPlaceIfPossible"],
        },
        "unhealthyNodePolicy": {
            "description": "dsctl: Count (the default, upstream's) counts the pods of nodes that are not Ready "
            "against maxUnavailable; Skip leaves a node whose Ready condition has not been True for "
            "unhealthyNodeSeconds out of the rolling update until it recovers.",
            "type": "string", "enum": ["Count", "Skip"],
        },
        "unhealthyNodeSeconds": {
            "description": "dsctl: seconds a node's Ready condition is not True before Skip leaves it out. "
            "Default 60.",
            "type": "integer", "format": "int32", "minimum": 0,
        },
    }


def spec_limits() -> Schema:
    """dsctl's fields beyond apps/v1 at ``spec`` level; see ``dsctl.daemonset.extensions``."""
    return {
        "burstReplicas": {
            "description": "dsctl: at most this many pod creates, and this many deletes, in flight for this "
            "DaemonSet; it can only lower the controller's --burst-replicas. Default: --burst-replicas.",
            "type": "integer", "format": "int32", "minimum": 1,
        },
        "progressDeadlineSeconds": {
            "description": "dsctl: seconds a rollout may make no progress before the Progressing condition "
            "turns False with reason ProgressDeadlineExceeded. Default 600.",
            "type": "integer", "format": "int32", "minimum": 1,
        },
        "maxDisruptions": {
            "description": "dsctl: keep a PodDisruptionBudget, owned by this DaemonSet, that lets evictions "
            "take at most this many of its pods at once: an integer, or a percentage of the desired pods "
            "(rounded up). Unset: no budget.",
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        },
    }


def readiness_gate() -> Schema:
    """The node readiness gate's field at ``spec`` level; see ``dsctl.daemonset.readinessgate``."""
    return {
        "nodeReadinessGate": {
            "description": "dsctl: when true, a node that should run this DaemonSet's pod keeps the readiness "
            "taint (dsctl run --readiness-taint) until that pod is available. Default false.",
            "type": "boolean",
        },
    }


def condition_extras() -> Schema:
    """dsctl's fields beyond apps/v1 in ``status.conditions[]`` (Deployment has them)."""
    return {
        "lastUpdateTime": {
            "description": "dsctl: the last time this condition was updated; for Progressing, the last "
            "progress of the rollout.",
            "type": "string", "format": "date-time",
        },
    }


def build_crd(defs: Mapping[str, Schema], *, version: str = K8S_VERSION) -> dict[str, Any]:
    """The whole CustomResourceDefinition object for ``daemonsets.dsctl.io``."""
    daemonset = defs[_ROOT]
    props = daemonset["properties"]
    api_version, kind = (first_sentence(props[name]["description"]) for name in ("apiVersion", "kind"))
    spec = structural_schema(props["spec"], defs, where="spec")
    rolling = spec["properties"]["updateStrategy"]["properties"]["rollingUpdate"]
    rolling["properties"].update(rollout_controls(defs))
    spec["properties"].update(spec_limits())
    spec["properties"].update(readiness_gate())
    status = structural_schema(props["status"], defs, where="status")
    status["properties"]["conditions"]["items"]["properties"].update(condition_extras())
    schema: Schema = {
        "description": (
            "DaemonSet managed by dsctl: the apps/v1 DaemonSet shape, served under "
            f"{GROUP}/{VERSION} so that dsctl and kube-controller-manager never act on one object."
        ),
        "type": "object",
        "properties": {
            "apiVersion": {"description": api_version, "type": "string"},
            "kind": {"description": kind, "type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"daemonsets.{GROUP}",
            "labels": {"app.kubernetes.io/name": "dsctl", "app.kubernetes.io/component": "crd"},
            "annotations": {"dsctl.io/schema-source": f"apps/v1 DaemonSet, Kubernetes {version}"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": "DaemonSet",
                "listKind": "DaemonSetList",
                "plural": "daemonsets",
                "singular": "daemonset",
                "shortNames": ["dds"],
                "categories": ["all", "dsctl"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": _printer_columns(),
                    "schema": {"openAPIV3Schema": add_validations(schema)},
                }
            ],
        },
    }


def render(crd: Mapping[str, Any]) -> str:
    """The committed YAML text: a header that names the generator, then the object."""
    header = (
        "# Generated by manifests/crd/generate.py from the apps/v1 DaemonSet schema; do not edit.\n"
        "# Re-run the script after changing K8S_VERSION there.\n"
    )
    body = yaml.safe_dump(dict(crd), sort_keys=False, width=100, allow_unicode=True)
    return header + body


def main(argv: Sequence[str] | None = None) -> int:
    """Write the CRD file, or with ``--check`` report whether the committed one is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file on disk is out of date")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the CRD")
    args = parser.parse_args(argv)
    text = render(build_crd(load_definitions()))
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
