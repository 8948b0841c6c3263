"""``dsctl.daemonset.reasons``: every Event reason and condition the controller writes is declared there.

The code is read (its syntax tree) for every call that emits an Event or a condition; a bare
string in the reason's place fails, so a reason cannot be added without being declared and
explained in ``EVENT_REASONS`` or ``CONDITIONS``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dsctl.controller.writes import WRITES, Write
from dsctl.daemonset import reasons
from dsctl.daemonset.reasons import CONDITIONS, EVENT_REASONS, REPLICA_FAILURE, REVISION_OUT_OF_RANGE

PACKAGE = Path(reasons.__file__).resolve().parents[1]

# Call name -> positions (and keywords) that carry an Event reason or a condition type or reason.
EMITTERS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "Event": ((1,), ("reason",)),
    "record": ((2,), ("reason",)),
    "ConditionWrite": ((0, 1), ("type", "reason")),
    "set_condition": ((1,), ("reason",)),
    "without_condition": ((1,), ()),
    "Write": ((3, 4), ("event_reason", "condition_reason")),
    "_condition": ((1,), ("reason",)),
}


def _bare_reasons(path: Path) -> list[str]:
    """``file:line name`` for every emitter called with a string literal as a reason."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in EMITTERS:
            continue
        positions, keywords = EMITTERS[name]
        args = [node.args[i] for i in positions if i < len(node.args)]
        args += [k.value for k in node.keywords if k.arg in keywords]
        for arg in args:
            if isinstance(arg, ast.JoinedStr) or (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name}")
    return found


def test_no_event_or_condition_is_written_with_a_bare_string() -> None:
    """Every emitter in dsctl/ names its reason through a constant of ``reasons``."""
    sources = [p for p in PACKAGE.rglob("*.py") if p.name != "reasons.py"]
    assert sources
    assert [hit for path in sorted(sources) for hit in _bare_reasons(path)] == []


def test_every_declared_name_is_explained() -> None:
    """Each constant of the module appears in ``EVENT_REASONS`` or ``CONDITIONS``, with a meaning."""
    declared = {value for name, value in vars(reasons).items()
                if name.isupper() and not name.startswith("_") and isinstance(value, str)}
    explained = {e.reason for e in EVENT_REASONS} | {c.type for c in CONDITIONS} | {c.reason for c in CONDITIONS}
    assert declared == explained
    assert all(e.meaning for e in EVENT_REASONS) and all(c.meaning for c in CONDITIONS)


def test_each_reason_is_listed_once() -> None:
    """No Event reason, and no (type, status, reason) of a condition, is listed twice."""
    events = [e.reason for e in EVENT_REASONS]
    conditions = [(c.type, c.status, c.reason) for c in CONDITIONS]
    assert len(events) == len(set(events)) and len(conditions) == len(set(conditions))


@pytest.mark.parametrize("write", [pytest.param(w, id=f"{w.verb}-{w.resource}") for w in WRITES])
def test_each_failed_write_speaks_in_declared_reasons(write: Write) -> None:
    """A failed write's Event reason is an Event of the registry, its condition a ``ReplicaFailure`` reason."""
    events = {e.reason for e in EVENT_REASONS}
    failures = {c.reason for c in CONDITIONS if c.type == REPLICA_FAILURE}
    assert write.event_reason is None or write.event_reason in events
    assert write.condition_reason is None or write.condition_reason in failures


def test_replica_failure_reasons_come_from_writes() -> None:
    """Every ``ReplicaFailure`` reason listed is one a write can raise (or the revision overflow)."""
    failures = {c.reason for c in CONDITIONS if c.type == REPLICA_FAILURE}
    assert failures == {w.condition_reason for w in WRITES if w.condition_reason} | {REVISION_OUT_OF_RANGE}
