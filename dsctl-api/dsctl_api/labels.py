"""Label selectors: the ``?labelSelector=`` string syntax and the ``metav1.LabelSelector`` object.

Both forms compile to one ``Selector`` value, a conjunction of requirements, so the simulator's
list filter and the controller's DaemonSet selector share a single matching rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Requirement",
    "Selector",
    "SelectorError",
    "parse_selector",
    "selector_from_label_selector",
]

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


class SelectorError(ValueError):
    """A selector that cannot be parsed or compiled; the message names the bad part."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a selector. ``op`` is one of ``in notin exists ! gt lt`` (``=`` is ``in``)."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this single requirement."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op == "in":
            return present and labels[self.key] in self.values
        if self.op == "notin":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.op == "gt" else have < want

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return f"!{self.key}"
        if self.op == "in" and len(self.values) == 1:
            return f"{self.key}={self.values[0]}"
        if self.op == "notin" and len(self.values) == 1:
            return f"{self.key}!={self.values[0]}"
        if self.op in ("gt", "lt"):
            return f"{self.key} {self.op} {self.values[0]}"
        return f"{self.key} {self.op} ({','.join(self.values)})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements. The empty selector matches everything.

    ``nothing`` marks the selector that matches no object at all, which is what a nil
    ``metav1.LabelSelector`` means to a controller.
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True when the selector has no requirements and so selects every object."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected."""
        if self.nothing:
            return False
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _check_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if not name or len(name) > 63 or not _NAME.match(name) or len(prefix) > 253:
        raise SelectorError(f"invalid label key {key!r}")
    return key


def _tokenize(text: str) -> list[str]:
    tokens = re.findall(r"!=|==|=|!|\(|\)|,|[^\s!=(),]+", text)
    return [t for t in tokens if t.strip()]


def parse_selector(text: str) -> Selector:
    """Parse the string form used by ``labelSelector=`` query parameters and kubectl ``-l``."""
    tokens = _tokenize(text or "")
    requirements: list[Requirement] = []
    i = 0

    def take() -> str:
        nonlocal i
        if i >= len(tokens):
            raise SelectorError(f"unexpected end of selector {text!r}")
        i += 1
        return tokens[i - 1]

    while i < len(tokens):
        token = take()
        if token == "!":
            requirements.append(Requirement(_check_key(take()), "!"))
        else:
            key = _check_key(token)
            nxt = tokens[i] if i < len(tokens) else ","
            if nxt == ",":
                requirements.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                take()
                value = "" if i >= len(tokens) or tokens[i] == "," else take()
                requirements.append(Requirement(key, "notin" if nxt == "!=" else "in", (value,)))
            elif nxt.lower() in ("in", "notin"):
                op = take().lower()
                if take() != "(":
                    raise SelectorError(f"expected '(' after {op} in {text!r}")
                values: list[str] = []
                while (tok := take()) != ")":
                    if tok != ",":
                        values.append(tok)
                requirements.append(Requirement(key, op, tuple(values)))
            elif nxt.lower() in ("gt", "lt"):
                op = take().lower()
                requirements.append(Requirement(key, op, (take(),)))
            else:
                raise SelectorError(f"unexpected {nxt!r} in selector {text!r}")
        if i < len(tokens):
            if tokens[i] != ",":
                raise SelectorError(f"expected ',' but found {tokens[i]!r} in {text!r}")
            i += 1
    return Selector(tuple(requirements))


_OBJECT_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def selector_from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Compile a ``metav1.LabelSelector`` dict.

    ``None`` selects nothing; ``{}`` selects everything.
    """
    if selector is None:
        return Selector(nothing=True)
    if not isinstance(selector, Mapping):
        raise SelectorError("selector must be an object")
    requirements: list[Requirement] = []
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be a map of strings")
    for key, value in sorted(match_labels.items()):
        requirements.append(Requirement(_check_key(str(key)), "in", (str(value),)))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, Iterable):
        raise SelectorError("matchExpressions must be a list")
    for expr in expressions:
        if not isinstance(expr, Mapping):
            raise SelectorError("matchExpressions entries must be objects")
        op = _OBJECT_OPS.get(str(expr.get("operator")))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        values = tuple(str(v) for v in (expr.get("values") or []))
        if op in ("in", "notin") and not values:
            raise SelectorError(f"values must be non-empty for operator {expr.get('operator')}")
        if op in ("exists", "!") and values:
            raise SelectorError(f"values must be empty for operator {expr.get('operator')}")
        requirements.append(Requirement(_check_key(str(expr.get("key", ""))), op, values))
    return Selector(tuple(requirements))
