"""The table's sorted key lists: always the stored keys in order, released by lists, not writes."""

from __future__ import annotations

import sys

from dsctl_sim.registry import Registry
from dsctl_sim.table import Table


def _pods() -> Table:
    return Table(Registry().by_key("pods"), history_size=10)


def _put(table: Table, namespace: str, name: str) -> None:
    table.put(namespace, name, table.new_doc({"metadata": {"name": name, "namespace": namespace},
                                              "spec": {"nodeName": "n1"}}), None)


def test_sorted_keys_follow_creates_and_deletes() -> None:
    """Between lists, creates and deletes in any namespace show in the next list, in order."""
    table = _pods()
    for ns, name in (("b", "p2"), ("a", "p9"), ("b", "p1")):
        _put(table, ns, name)
    assert table.sorted_keys(None) == [("a", "p9"), ("b", "p1"), ("b", "p2")]
    assert table.sorted_keys("b") == [("b", "p1"), ("b", "p2")]
    _put(table, "b", "p0")
    table.remove("a", "p9")
    assert table.sorted_keys(None) == [("b", "p0"), ("b", "p1"), ("b", "p2")]
    assert table.sorted_keys("b") == [("b", "p0"), ("b", "p1"), ("b", "p2")]
    assert table.sorted_keys("a") == []


def test_a_write_leaves_the_stale_list_to_the_next_list() -> None:
    """A create does not drop the table's reference to the list it made stale; the next list does."""
    table = _pods()
    _put(table, "a", "p1")
    listed = table.sorted_keys(None)
    held = sys.getrefcount(listed)
    _put(table, "a", "p2")
    assert sys.getrefcount(listed) == held, "the write released it"
    assert table.sorted_keys(None) == [("a", "p1"), ("a", "p2")]
    assert sys.getrefcount(listed) == held - 1
