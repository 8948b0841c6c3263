"""The sorted ``creating`` nodes of a node table, updated by what leaves and what joins."""

from __future__ import annotations

import pytest

from dsctl.daemonset.nodetable import _resorted

NODES = ("a", "b", "c", "d", "e")


@pytest.mark.parametrize(("leaving", "joining", "expected"), [
    pytest.param(set(), set(), NODES, id="nothing-changes"),
    pytest.param({"a"}, set(), ("b", "c", "d", "e"), id="first-leaves"),
    pytest.param({"e"}, set(), ("a", "b", "c", "d"), id="last-leaves"),
    pytest.param({"b", "d"}, set(), ("a", "c", "e"), id="two-leave"),
    pytest.param(set(NODES), set(), (), id="all-leave"),
    pytest.param({"bb", "zz", "0"}, set(), NODES, id="leaving-nodes-not-there"),
    pytest.param({"c", "cc"}, {"ab", "f"}, ("a", "ab", "b", "d", "e", "f"), id="leave-and-join"),
    pytest.param(set(), {"0"}, ("0", *NODES), id="one-joins-first"),
])
def test_creating_less_leaving_plus_joining_stays_sorted(
    leaving: set[str], joining: set[str], expected: tuple[str, ...],
) -> None:
    """Exactly the nodes that stay and the ones that join, in name order, whatever leaves."""
    assert _resorted(NODES, leaving, joining) == expected


def test_a_large_table_loses_a_burst_exactly() -> None:
    """A burst leaving 100,000 creating nodes leaves the others, in order."""
    nodes = tuple(sorted(f"node-{i}" for i in range(100_000)))
    leaving = set(nodes[::400])
    assert _resorted(nodes, leaving, set()) == tuple(n for n in nodes if n not in leaving)
