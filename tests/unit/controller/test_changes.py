"""``ChangeLog``: which nodes a DaemonSet's next sync must re-plan, and when it must plan them all."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dsctl.controller.changes import ChangeLog

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
        pytest.param([lambda c: c.take("a"), lambda c: c.forget("a"), lambda c: c.node_changed("n1")], None,
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
