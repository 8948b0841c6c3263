"""Which pod of a node is kept: bound first, then oldest, then by name; and per-node grouping."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.podsort import group_by_node, oldest, sort_pods

from .objects import T0, make_pod


def _names(pods: list[Any]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(
            [make_pod("n", name="b", created=T0 + 1), make_pod("n", name="a", created=T0 + 2)],
            ["b", "a"],
            id="older-first",
        ),
        pytest.param(
            [make_pod("n", name="b", created=T0), make_pod("n", name="a", created=T0)],
            ["a", "b"],
            id="same-second-by-name",
        ),
        pytest.param(
            [
                make_pod("n", name="old-unbound", created=T0, bound=False),
                make_pod("n", name="new", created=T0 + 9),
            ],
            ["new", "old-unbound"],
            id="bound-before-older-unbound",
        ),
        pytest.param(
            [
                make_pod("n", name="x", created=T0),
                {"metadata": {"name": "no-time"}, "spec": {"nodeName": "n"}},
            ],
            ["no-time", "x"],
            id="missing-timestamp-sorts-first",
        ),
    ],
)
def test_sort_order(pods: list[Any], expected: list[str]) -> None:
    """The first pod in order is the one every planner keeps."""
    assert _names(sort_pods(pods)) == expected
    first = oldest(pods)
    assert first is not None and first["metadata"]["name"] == expected[0]


def test_oldest_of_nothing() -> None:
    """An empty node has no oldest pod."""
    assert oldest([]) is None


def test_group_by_node() -> None:
    """Pods group under their target node; terminal pods being deleted and pinless pods drop out."""
    kept = [
        make_pod("n1", name="bound"),
        make_pod("n2", name="pinned", bound=False),
        make_pod("n1", name="failed", phase="Failed"),
        make_pod("n1", name="terminating", deleting=True),
    ]
    dropped = [
        make_pod("n1", name="failed-deleted", phase="Failed", deleting=True),
        make_pod("n2", name="succeeded-deleted", phase="Succeeded", deleting=True),
    ]
    pinless = {"metadata": {"name": "nowhere"}, "spec": {}}
    groups = group_by_node([*kept, *dropped, pinless, "junk"])
    assert {node: _names(pods) for node, pods in groups.items()} == {
        "n1": ["bound", "failed", "terminating"],
        "n2": ["pinned"],
    }
    with_terminal = group_by_node([*kept, *dropped], include_deleted_terminal=True)
    assert sorted(_names(with_terminal["n1"])) == ["bound", "failed", "failed-deleted", "terminating"]
