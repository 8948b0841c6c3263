"""``ChangeLog`` (the nodes a DaemonSet's next sync re-plans) and ``PlanMemory`` (its last table, verdicts)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dsctl.controller.planmemory import ChangeLog, PlanMemory
from dsctl.daemonset.nodetable import NodeTable
from tests.unit.daemonset.objects import make_ds, make_node

Step = Callable[[ChangeLog], None]


@pytest.mark.parametrize(
    ("steps", "taken"),
    [
        pytest.param([], None, id="never-synced-plans-everything"),
        pytest.param([lambda c: c.take("a")], frozenset(), id="nothing-changed"),
        pytest.param([lambda c: c.take("a"), lambda c: c.node_changed("n1")], frozenset({"n1"}),
                     id="node-change-reaches-every-daemonset"),
        pytest.param([lambda c: c.take("a"), lambda c: c.pod_changed("a", "n2"), lambda c: c.pod_changed("b", "n3")],
                     frozenset({"n2"}), id="pod-change-reaches-its-owner-only"),
        pytest.param([lambda c: c.take("a"), lambda c: c.pod_changed("a", None)], frozenset(),
                     id="pod-without-target-node"),
        pytest.param([lambda c: c.take("a"), lambda c: c.node_changed("n1"), lambda c: c.everything("a")], None,
                     id="resync-plans-everything"),
        pytest.param([lambda c: c.take("a"), lambda c: c.forget("a", "uid-a"), lambda c: c.node_changed("n1")], None,
                     id="forgotten-starts-over"),
        pytest.param([lambda c: c.take("a"), lambda c: c.node_changed("n1"), lambda c: c.take("a")], frozenset(),
                     id="take-empties"),
    ],
)
def test_take(steps: list[Step], taken: frozenset[str] | None) -> None:
    """What ``take("a")`` returns after the steps."""
    changes = ChangeLog()
    for step in steps:
        step(changes)
    assert changes.take("a") == taken


def test_changes_after_take_belong_to_the_next_sync() -> None:
    """A change noted while a sync runs is in the next sync's set, not lost."""
    changes = ChangeLog()
    changes.take("a")
    assert changes.take("a") == frozenset()
    changes.node_changed("n9")
    assert changes.take("a") == frozenset({"n9"})


def test_plan_memory_keeps_when_the_table_was_last_planned_in_full() -> None:
    """An incremental plan keeps the time of the last full one: that time says when the recount is due."""
    memory = PlanMemory()
    table = NodeTable()
    memory.keep("a", table, full=True, now=10.0)
    memory.keep("a", table, full=False, now=20.0)
    assert memory.table("a") == (table, 10.0)
    memory.keep("a", table, full=True, now=30.0)
    assert memory.table("a") == (table, 30.0)
    memory.keep("a", None, full=True, now=40.0)
    assert memory.table("a") is None


def test_verdicts_are_reused_per_object_and_generation_and_dropped_with_their_node() -> None:
    """The verdict cache follows the DaemonSet's UID and generation, and forgets a deleted node."""
    memory = PlanMemory()
    ds = make_ds()
    node = make_node("n1")
    node["metadata"]["resourceVersion"] = "1"
    fit = memory.fit("default/foo", ds)
    assert fit(node).should_run
    assert memory.fit("default/foo", ds) == fit
    assert memory.holds_node("n1")
    memory.forget_node("n1")
    assert not memory.holds_node("n1")
    replaced = make_ds()
    replaced["metadata"]["uid"] = "another"
    assert memory.fit("default/foo", replaced) != fit
