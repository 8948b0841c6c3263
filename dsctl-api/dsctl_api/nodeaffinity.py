"""Does a pod's ``nodeSelector`` and required node affinity admit a node?

This is the scheduler's required-affinity rule, used both by the simulated scheduler (to bind)
and by the controller (to decide eligibility). Terms are ORed; inside a term every expression
and field requirement must hold. A term that cannot be parsed is skipped, as upstream does,
rather than failing the whole affinity. ``Gt``/``Lt`` values and the labels they compare are
integers exactly as Go's ``strconv.ParseInt(v, 10, 64)`` reads them (``dsctl_api.strconv``).

The controller runs this for every node on every sync, so plain dicts (what JSON decodes to)
are recognised with ``type(x) is dict`` before the much slower ``Mapping`` ABC check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from dsctl_api.strconv import parse_int64

__all__ = ["node_selector_term_matches", "required_node_affinity_matches", "required_terms"]


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = node.get("metadata")
    labels = meta.get("labels") if _is_map(meta) else None
    return labels if _is_map(labels) else {}


def _node_name(node: Mapping[str, Any]) -> str:
    meta = node.get("metadata")
    name = meta.get("name") if _is_map(meta) else None
    return name if isinstance(name, str) else ""


def _requirement_matches(expr: Any, value_of: Mapping[str, Any]) -> bool | None:
    """True/False for a well-formed expression, None when it is malformed."""
    if not isinstance(expr, Mapping):
        return None
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if not isinstance(key, str) or not isinstance(values, list):
        return None
    present = key in value_of
    have = value_of.get(key)
    if op == "In":
        return bool(values) and present and have in values
    if op == "NotIn":
        return bool(values) and (not present or have not in values)
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            return None
        # Both sides are parsed as Go's ParseInt(v, 10, 64), as labels.Requirement does: a
        # value it refuses makes the requirement unparsable, a label it refuses never matches.
        want = parse_int64(values[0])
        if want is None:
            return None
        if not present:
            return False
        got = parse_int64(have)
        if got is None:
            return False
        return got > want if op == "Gt" else got < want
    return None


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether one ``NodeSelectorTerm`` admits the node. An empty term admits nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not isinstance(expressions, list) or not isinstance(fields, list):
        return False
    if not expressions and not fields:
        return False
    labels = _labels(node)
    for expr in expressions:
        if _requirement_matches(expr, labels) is not True:
            return False
    field_values = {"metadata.name": _node_name(node)}
    for expr in fields:
        if not isinstance(expr, Mapping) or expr.get("key") != "metadata.name":
            return False
        if expr.get("operator") not in ("In", "NotIn"):
            return False
        if _requirement_matches(expr, field_values) is not True:
            return False
    return True


def required_terms(pod_spec: Mapping[str, Any]) -> list[Any] | None:
    """The required node-selector terms of a pod spec, or None when it has no required affinity."""
    affinity = pod_spec.get("affinity")
    if not isinstance(affinity, Mapping):
        return None
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, Mapping):
        return None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None
    terms = required.get("nodeSelectorTerms")
    return terms if isinstance(terms, list) else []


def required_node_affinity_matches(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``nodeSelector`` AND (any required affinity term), as the scheduler's filter applies them."""
    selector = pod_spec.get("nodeSelector") or {}
    if not _is_map(selector):
        return False
    labels = _labels(node)
    for key, value in selector.items():
        if labels.get(key) != value:
            return False
    terms = required_terms(pod_spec)
    if terms is None:
        return True
    return any(isinstance(t, Mapping) and node_selector_term_matches(t, node) for t in terms)
