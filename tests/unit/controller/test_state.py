"""``RuntimeState``: every per-DaemonSet holder is cleared by the one ``forget``, enumerated from the owner.

The fillers below are the one hand-written list, and the first test checks it against the
fields ``RuntimeState`` declares: a holder added without a filler fails here, and a holder
whose ``forget`` misses what its ``holds`` sees fails the next test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

import pytest
from prometheus_client import CollectorRegistry

from dsctl.controller.state import NodeHolder, RuntimeState
from dsctl.controller.writes import Failure
from dsctl.daemonset.backoffview import backoff_key
from dsctl.daemonset.nodetable import NodeTable
from dsctl.daemonset.readinessgate import GateMemory
from dsctl.daemonset.status import Status
from tests.unit.daemonset.objects import make_ds, make_node

KEY, UID = "default/foo", "uid-foo"
OTHER, OTHER_UID = "default/bar", "uid-bar"

Fill = Callable[[RuntimeState, str, str], object]


def _ds(key: str, uid: str) -> dict[str, object]:
    ds = make_ds()
    ds["metadata"].update(namespace=key.partition("/")[0], name=key.partition("/")[2], uid=uid)
    return ds


def _node(name: str) -> dict[str, object]:
    node = make_node(name)
    node["metadata"]["resourceVersion"] = "1"
    return node


def _plans(state: RuntimeState, key: str, uid: str) -> None:
    state.plans.keep(key, NodeTable(), full=True, now=0.0)
    state.plans.fit(key, _ds(key, uid))(_node(f"node-of-{key}"))


def _status(state: RuntimeState, key: str, uid: str) -> None:
    state.status.wrote(key, replaced="1", written={"metadata": {"resourceVersion": "2"}})
    state.status.note_gone(key, uid)
    state.status.progressed(key, 1.0)


def _gauges(state: RuntimeState, key: str, uid: str) -> None:
    state.gauges.observe_status(key, Status(desired_number_scheduled=1))
    state.gauges.observe_stuck(key, stuck=False)


FILLERS: dict[str, Fill] = {
    "expectations": lambda s, key, uid: s.expectations.set(key, adds=1, dels=1),
    "pending_patches": lambda s, key, uid: s.pending_patches.expect(key, pod=f"{key}-pod", pod_uid="p",
                                                                     resource_version="7"),
    "backoff": lambda s, key, uid: s.backoff.next(backoff_key(_ds(key, uid), "n1"), now=0.0),
    "changes": lambda s, key, uid: s.changes.take(key),
    "plans": _plans,
    "join_order": lambda s, key, uid: s.join_order.node_wanted(f"node-of-{key}", [(key, 9), ("default/low", 0)],
                                                                now=0.0),
    "status": _status,
    "failures": lambda s, key, uid: s.failures.note(key, Failure("FailedCreate", "refused")),
    "gauges": _gauges,
    "gate": lambda s, key, uid: s.gate.rules(key, _ds(key, uid)),
}
"""How to put something for one DaemonSet into each holder, by field name."""

NODE_FILLERS: dict[str, Callable[[RuntimeState, str], object]] = {
    "plans": lambda s, node: s.plans.fit(KEY, _ds(KEY, UID))(_node(node)),
    "join_order": lambda s, node: s.join_order.node_wanted(node, [(KEY, 9), (OTHER, 0)], now=0.0),
    "gate": lambda s, node: s.gate.keep(node, GateMemory(since=0.0, timed_out=True)),
}
"""How to put something about one node into each holder that keeps per-node entries."""


def _state() -> RuntimeState:
    return RuntimeState.create(clock=lambda: 0.0, registry=CollectorRegistry())


def _holders() -> list[str]:
    return [f.name for f in fields(RuntimeState)]


def test_every_holder_has_a_filler() -> None:
    """The fillers cover exactly the holders ``RuntimeState`` declares (add one with each new holder)."""
    assert set(FILLERS) == set(_holders())
    state = _state()
    assert set(NODE_FILLERS) == {f.name for f in fields(state) if isinstance(getattr(state, f.name), NodeHolder)}


@pytest.mark.parametrize("holder", _holders())
def test_forget_empties_each_holder_and_only_for_that_daemonset(holder: str) -> None:
    """Filled for two DaemonSets, each holder holds both; ``forget`` of one leaves nothing of it, all of the other."""
    state = _state()
    FILLERS[holder](state, KEY, UID)
    FILLERS[holder](state, OTHER, OTHER_UID)
    target = getattr(state, holder)
    assert target.holds(KEY, UID) and target.holds(OTHER, OTHER_UID)
    state.forget(KEY, UID)
    assert not target.holds(KEY, UID)
    assert target.holds(OTHER, OTHER_UID)


def test_forget_empties_everything_at_once() -> None:
    """Every holder filled, one ``forget``: the owner holds nothing of that DaemonSet."""
    state = _state()
    for fill in FILLERS.values():
        fill(state, KEY, UID)
    assert state.holds(KEY, UID)
    state.forget(KEY, UID)
    assert not state.holds(KEY, UID)


@pytest.mark.parametrize("holder", sorted(NODE_FILLERS))
def test_forget_node_empties_each_node_holder(holder: str) -> None:
    """``forget_node`` drops what a holder keeps about that node, and nothing about another."""
    state = _state()
    NODE_FILLERS[holder](state, "n1")
    NODE_FILLERS[holder](state, "n2")
    target = getattr(state, holder)
    state.forget_node("n1")
    assert not target.holds_node("n1") and target.holds_node("n2")


@pytest.mark.parametrize(
    ("seen", "kept"),
    [
        pytest.param(UID, True, id="same-object-keeps"),
        pytest.param("uid-recreated", False, id="recreated-under-the-name-forgets"),
        pytest.param(None, False, id="gone-from-the-cache-forgets"),
    ],
)
def test_observe_forgets_state_of_another_object(seen: str | None, kept: bool) -> None:
    """A sync tells the owner what the cache holds for its key; state of any other object under it goes."""
    state = _state()
    state.observe(KEY, UID)
    for fill in FILLERS.values():
        fill(state, KEY, UID)
    state.observe(KEY, seen)
    assert state.holds(KEY, UID) is kept


def test_observe_forgets_uid_keyed_state_of_a_daemonset_it_never_saw_go() -> None:
    """Deleted between two syncs: the next sync forgets the backoff, which is keyed by the old UID."""
    state = _state()
    state.observe(KEY, UID)
    FILLERS["backoff"](state, KEY, UID)
    state.observe(KEY, None)
    assert not state.backoff.holds(KEY, UID)


def test_a_field_that_is_not_a_holder_is_refused() -> None:
    """State added to the owner without ``forget`` and ``holds`` fails at construction, not in production."""

    @dataclass(eq=False)
    class Extended(RuntimeState):
        extra: dict[str, int] = field(default_factory=dict)

    base = _state()
    with pytest.raises(TypeError, match="dict keeps per-DaemonSet state but is not a Holder"):
        Extended(**{f.name: getattr(base, f.name) for f in fields(RuntimeState)})
