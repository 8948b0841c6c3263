"""``x-kubernetes-validations``: CEL rules of a CRD schema, evaluated like apiextensions-apiserver.

A CRD schema node may carry rules (``rule``, ``message``, ``messageExpression``, ``reason``,
``fieldPath``, ``optionalOldSelf``). kube-apiserver evaluates each rule at its node with
``self`` bound to the node's value (and ``oldSelf`` to the stored value on update, for
transition rules), only where the value is present and not null. A rule that is false
becomes one cause, whose shape is what kubectl users see:

- the field is the node's path, plus the rule's ``fieldPath`` when set;
- the message is ``message``, or ``failed rule: <rule>`` without one; ``messageExpression``
  wins when it evaluates to a non-empty single-line string;
- the reason picks the error type: ``Invalid value: "object": <message>`` by default (the
  value shown is the node's schema type, never the data), ``Forbidden: <message>``,
  ``Required value: <message>``, or ``Duplicate value: "<type>"``;
- a rule that fails to evaluate (a missing key, an index out of bounds) gives
  ``Invalid value: "<type>": <error> evaluating rule: <message or rule>``.

On update, errors of a rule that does not use ``oldSelf`` are dropped when the value at the
rule's node is unchanged (validation ratcheting, on by default since Kubernetes 1.33), so a
stored object keeps accepting status writes after its CRD's rules tighten.

Evaluation uses the ``cel`` module of the ``common-expression-language`` distribution (the
Rust cel interpreter); regular expressions are RE2-like, like cel-go's. Neither static type
checking nor cost accounting is done here: the CRD's rules are checked against the
apiserver's estimated-cost limits by ``tests/manifests``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cel
import structlog

from dsctl_sim.validation.causes import Causes

__all__ = ["CelRule", "RuleError", "compile_rules", "evaluate_rules"]

log = structlog.get_logger(__name__)

_REASONS = ("FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate")


class RuleError(ValueError):
    """A rule that does not compile, or a rule definition apiextensions would refuse."""


@dataclass(frozen=True, slots=True)
class CelRule:
    """One compiled ``x-kubernetes-validations`` entry."""

    source: str
    program: Any
    message: str
    message_program: Any
    reason: str
    field_path: str
    uses_old_self: bool
    optional_old_self: bool

    @property
    def error_text(self) -> str:
        """How kube-apiserver names the rule in errors: its message, else its source."""
        return self.message or self.source


def _normalize_field_path(path: str) -> str:
    # ``.spec.x`` and ``['spec'].x`` both name a child of the rule's node; the cause joins it.
    out = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == ".":
            j = i + 1
            while j < len(path) and path[j] not in ".[":
                j += 1
            out.append(path[i + 1 : j])
            i = j
        elif ch == "[" and path[i + 1 : i + 2] == "'":
            end = path.index("']", i)
            out.append(path[i + 2 : end])
            i = end + 2
        else:
            raise RuleError(f"fieldPath {path!r} must be a JSON path of fields and map keys")
    return ".".join(out)


def compile_rules(entries: Any) -> tuple[CelRule, ...]:
    """Compile a node's ``x-kubernetes-validations`` list; ``RuleError`` names what is wrong."""
    if not isinstance(entries, list):
        raise RuleError("x-kubernetes-validations must be a list")
    rules = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("rule"), str):
            raise RuleError("each x-kubernetes-validations entry needs a rule")
        source = entry["rule"].strip()
        reason = entry.get("reason") or "FieldValueInvalid"
        if reason not in _REASONS:
            raise RuleError(f"reason {reason!r} is not one of {', '.join(_REASONS)}")
        try:
            program = cel.compile(source)
            message_expr = entry.get("messageExpression")
            message_program = cel.compile(message_expr) if message_expr else None
        except ValueError as err:
            raise RuleError(f"rule {source!r} does not compile: {err}") from err
        rules.append(
            CelRule(
                source=source,
                program=program,
                message=str(entry.get("message") or "").strip(),
                message_program=message_program,
                reason=reason,
                field_path=_normalize_field_path(str(entry.get("fieldPath") or "")),
                uses_old_self="oldSelf" in program.variables(),
                optional_old_self=bool(entry.get("optionalOldSelf")),
            )
        )
    return tuple(rules)


def _eval_error_detail(err: Exception, rule: CelRule) -> str:
    # apiextensions' wording for a rule that fails to evaluate, with cel-go's error texts.
    if isinstance(err, KeyError):
        return f"no such key: {err.args[0] if err.args else ''} evaluating rule: {rule.error_text}"
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    if text.lower().startswith("no such overload"):
        # An int-or-string (typed dyn) bypasses type checking, so this surfaces at run time.
        return ("'no such overload': call arguments did not match a supported operator, function or macro "
                f"signature for rule: {rule.error_text}")
    return f"{text} evaluating rule: {rule.error_text}"


def _message(rule: CelRule, variables: dict[str, Any]) -> str:
    if rule.message_program is not None:
        try:
            text = rule.message_program.execute(dict(variables))
        except Exception:
            text = None
        if isinstance(text, str) and text.strip() and "\n" not in text.strip():
            return text.strip()
    return rule.message or f"failed rule: {rule.source}"


def evaluate_rules(
    causes: Causes,
    rules: tuple[CelRule, ...],
    *,
    path: str,
    type_name: str,
    value: Any,
    old: Any,
    ratchet: bool,
) -> None:
    """Evaluate ``rules`` at one node and append a cause per failed rule.

    ``old`` is the correlated stored value (None on create or where none correlates);
    ``ratchet`` says that the node, or its nearest correlatable ancestor, is unchanged, so
    errors of rules that ignore ``oldSelf`` are dropped.
    """
    for rule in rules:
        variables: dict[str, Any] = {"self": value}
        if rule.uses_old_self:
            if rule.optional_old_self:
                variables["oldSelf"] = cel.OptionalValue.none() if old is None else cel.OptionalValue.of(old)
            elif old is None:
                continue  # transition rules run only against a stored value
            else:
                variables["oldSelf"] = old
        try:
            result = rule.program.execute(dict(variables))
        except Exception as err:
            if not (ratchet and not rule.uses_old_self):
                causes.invalid(path, type_name, _eval_error_detail(err, rule))
            continue
        if result is True:
            continue
        if ratchet and not rule.uses_old_self:
            log.debug("sim_cel_ratcheted", path=path, rule=rule.source)
            continue
        field = ".".join(p for p in (path, rule.field_path) if p)
        detail = _message(rule, variables)
        if rule.reason == "FieldValueForbidden":
            causes.forbidden(field, detail)
        elif rule.reason == "FieldValueRequired":
            causes.required(field, detail)
        elif rule.reason == "FieldValueDuplicate":
            causes.duplicate(field, type_name)
        else:
            causes.invalid(field, type_name, detail)
