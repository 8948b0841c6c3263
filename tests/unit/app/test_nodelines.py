"""``dsctl sim``'s node lines: natural order, and one summary line when many nodes change at once."""

from __future__ import annotations

import pytest

from dsctl.app.nodelines import SUMMARY_ABOVE, natural_key, node_lines


def _nodes(count: int, state: str = "Ready") -> dict[str, str]:
    return {f"node-{i}": state for i in range(count)}


def test_names_sort_by_their_numbers() -> None:
    """node-2 comes before node-10, and a zone prefix sorts before the number within it."""
    names = ["node-10", "node-2", "node-1", "zone-b-3", "zone-a-12", "zone-a-9", "node-0"]
    assert sorted(names, key=natural_key) == ["node-0", "node-1", "node-2", "node-10", "zone-a-9", "zone-a-12",
                                              "zone-b-3"]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param({}, _nodes(3), [f"node   {'node-0':<24} joined (Ready)", f"node   {'node-1':<24} joined (Ready)",
                                     f"node   {'node-2':<24} joined (Ready)"], id="few-joins-one-line-each"),
        pytest.param({}, _nodes(12), [f"node   {f'node-{i}':<24} joined (Ready)" for i in range(12)],
                     id="natural-order-node-2-before-node-10"),
        pytest.param({}, _nodes(100), ["node   100 nodes joined (Ready): node-0 … node-99"],
                     id="hundred-joins-summarized"),
        pytest.param({}, _nodes(SUMMARY_ABOVE), [f"node   {f'node-{i}':<24} joined (Ready)"
                                                 for i in range(SUMMARY_ABOVE)], id="at-the-threshold-listed"),
        pytest.param(_nodes(40), _nodes(40, "NotReady"), ["node   40 nodes Ready -> NotReady: node-0 … node-39"],
                     id="mass-readiness-change-summarized"),
        pytest.param(_nodes(40), {}, ["node   40 nodes left: node-0 … node-39"], id="mass-leave-summarized"),
        pytest.param(_nodes(2), {"node-1": "NotReady", "node-7": "Ready"},
                     [f"node   {'node-7':<24} joined (Ready)", f"node   {'node-1':<24} Ready -> NotReady",
                      f"node   {'node-0':<24} left"], id="joins-then-changes-then-leaves"),
        pytest.param(_nodes(3), _nodes(3), [], id="nothing-changed"),
    ],
)
def test_node_lines(before: dict[str, str], after: dict[str, str], expected: list[str]) -> None:
    """Each change is a line per node in natural order, or one summary line above the threshold."""
    assert node_lines(before, after) == expected
