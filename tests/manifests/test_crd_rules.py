"""The CRD's x-kubernetes-validations: they compile, they fit kube-apiserver's cost limits, they say what apps/v1 says.

kube-apiserver refuses a CRD whose rules' estimated cost is above 10^7 for one rule or 10^8
for the whole schema, each rule counted as often as its enclosing lists and maps allow
(``maxItems``/``maxProperties``; unbounded means about 10^6 times). Without a Go toolchain
the exact estimator cannot run here, so these tests pin the facts the estimate rests on:
every rule sits where its count is bounded, every string a rule reads below the spec is
bounded, and a generous per-rule ceiling times those counts stays within the budget.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from dsctl_sim.validation.crschema import CustomSchema
from tests.manifests.conftest import CRD_FILE, load_yaml

STATIC_CRD_COST_LIMIT = 100_000_000
STATIC_RULE_COST_LIMIT = 10_000_000
# Ceilings on one evaluation under cel-go's estimator (a string traversal costs 0.1 per
# character, a regex 0.25 per character of the pattern, multiplied):
# - a repeated rule with a regex reads at most a 317-character key against a 100-character
#   pattern: ceil(317 * 0.1) * ceil(100 * 0.25) = 800, plus a few dozen for field access;
# - a repeated rule without one compares operators of at most 16 characters or sizes: < 100;
# - a rule at the root with a regex over maxSurge/maxUnavailable (unbounded, so about 3 MiB):
#   two matches of a 16-character pattern, 2 * 314,573 * 4 = 2.5 million;
# - the selector rule at the root iterates at most 256 labels and 64 requirements of 256
#   values of 63 characters: 64 * 256 * 7 = 115,000 plus the label loop, < 1 million.
PER_ITEM_REGEX_CEILING = 1_000
PER_ITEM_CEILING = 100
ROOT_REGEX_CEILING = 3_000_000
ROOT_CEILING = 1_000_000


def ceiling(rule: str, count: int) -> int:
    """An upper bound of one evaluation's estimated cost (see above)."""
    regex = ".matches(" in rule
    if count == 1:
        return ROOT_REGEX_CEILING if regex else ROOT_CEILING
    return PER_ITEM_REGEX_CEILING if regex else PER_ITEM_CEILING


@functools.cache
def schema() -> dict[str, Any]:
    """The committed CRD's openAPIV3Schema (parsed once: the YAML is large)."""
    crd = load_yaml(CRD_FILE)
    openapi: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return openapi


def rule_nodes(node: Mapping[str, Any], path: str = "", cardinality: int | None = 1
               ) -> Iterator[tuple[str, Mapping[str, Any], int | None]]:
    """(path, node, how many times the node can occur) for every node that carries rules."""
    if node.get("x-kubernetes-validations"):
        yield path, node, cardinality
    for name, sub in (node.get("properties") or {}).items():
        yield from rule_nodes(sub, f"{path}.{name}", cardinality)
    if isinstance(node.get("additionalProperties"), Mapping):
        bound = node.get("maxProperties")
        count = None if cardinality is None or bound is None else cardinality * bound
        yield from rule_nodes(node["additionalProperties"], f"{path}{{}}", count)
    if isinstance(node.get("items"), Mapping):
        bound = node.get("maxItems")
        count = None if cardinality is None or bound is None else cardinality * bound
        yield from rule_nodes(node["items"], f"{path}[]", count)


def test_every_rule_compiles() -> None:
    """The simulator compiles every rule of the committed CRD (a rule that does not compile is refused)."""
    CustomSchema(schema())
    assert sum(len(n["x-kubernetes-validations"]) for _, n, _ in rule_nodes(schema())) >= 20


def test_every_rule_is_evaluated_a_bounded_number_of_times() -> None:
    """Each rule's enclosing lists and maps carry maxItems/maxProperties, so its count is bounded."""
    unbounded = [path for path, _, count in rule_nodes(schema()) if count is None]
    assert unbounded == []


def test_strings_read_by_repeated_rules_are_bounded() -> None:
    """Below the spec's root, every string field a rule reads (and every string node with rules) has maxLength."""
    missing = []
    for path, node, count in rule_nodes(schema()):
        if count == 1:
            continue
        if node.get("type") == "string":
            if "maxLength" not in node:
                missing.append(path)
            continue
        props = node.get("properties") or {}
        for rule in node["x-kubernetes-validations"]:
            for name in re.findall(r"self\.(\w+)", rule["rule"]):
                if props.get(name, {}).get("type") == "string" and "maxLength" not in props[name]:
                    missing.append(f"{path}.{name}")
    assert missing == []


def test_total_estimated_cost_fits_the_crd_budget() -> None:
    """Per-rule ceilings times the bounded counts stay within kube-apiserver's 10^8 for the schema."""
    total = 0
    for _, node, count in rule_nodes(schema()):
        assert count is not None
        for rule in node["x-kubernetes-validations"]:
            assert ceiling(rule["rule"], count) <= STATIC_RULE_COST_LIMIT
            total += ceiling(rule["rule"], count) * count
    assert total < STATIC_CRD_COST_LIMIT / 2, total


@pytest.mark.parametrize(
    ("path", "bounds"),
    [
        pytest.param(".spec.template.metadata.labels{}", {"maxLength": 63}, id="label-value"),
        pytest.param(".spec.selector.matchLabels{}", {"maxLength": 63}, id="selector-value"),
        pytest.param(".spec.template.spec.nodeSelector{}", {"maxLength": 63}, id="node-selector-value"),
        pytest.param(".spec.updateStrategy.type", {"enum": ["OnDelete", "RollingUpdate"]}, id="strategy-type"),
    ],
)
def test_schema_bounds_follow_apps_v1(path: str, bounds: dict[str, Any]) -> None:
    """The bounds the schema adds are limits apps/v1 already enforces, not new ones."""
    node: Mapping[str, Any] = schema()
    for part in re.findall(r"[^.{}]+|\{\}", path):
        node = node["additionalProperties"] if part == "{}" else node["properties"][part]
    assert {k: node.get(k) for k in bounds} == bounds
