"""What ``dsctl sim`` prints about nodes: one line per change, summarized when many change at once.

A cluster of 100 nodes joining at start would otherwise print 100 lines before the first
DaemonSet line. Names sort naturally (``node-2`` before ``node-10``), as people count them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["SUMMARY_ABOVE", "natural_key", "node_lines"]

SUMMARY_ABOVE = 24
"""More nodes than this with the same change in one look are one summary line."""

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, str], ...]:
    """Sort key that orders the numbers inside a name by value: node-2 < node-10."""
    return tuple((int(part), "") if part.isdigit() else (-1, part) for part in _DIGITS.split(name) if part)


def _lines(change: str, names: Iterable[str]) -> list[str]:
    ordered = sorted(names, key=natural_key)
    if len(ordered) > SUMMARY_ABOVE:
        return [f"node   {len(ordered)} nodes {change}: {ordered[0]} … {ordered[-1]}"]
    return [f"node   {name:<24} {change}" for name in ordered]


def node_lines(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """The lines for the change from ``before`` to ``after`` (node name to Ready state)."""
    changes: dict[str, list[str]] = {}
    for name in after.keys() - before.keys():
        changes.setdefault(f"joined ({after[name]})", []).append(name)
    for name in before.keys() - after.keys():
        changes.setdefault("left", []).append(name)
    for name in after.keys() & before.keys():
        if after[name] != before[name]:
            changes.setdefault(f"{before[name]} -> {after[name]}", []).append(name)
    order = sorted(changes, key=lambda c: (not c.startswith("joined"), c == "left", c))
    return [line for change in order for line in _lines(change, changes[change])]
