"""DaemonSet update events: every update syncs, except the echo of the controller's own status write."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.controller.handlers import Handlers
from dsctl.controller.state import RuntimeState

from .handlerkit import Cluster

KEY = "default/agent"


def _ds(rv: str, *, status: dict[str, Any] | None = None, image: str = "a:1", uid: str = "u1",
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "agent", "namespace": "default", "uid": uid, "resourceVersion": rv}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": {"template": {"spec": {"containers": [{"image": image}]}}},
            "status": status or {}}


def _handlers(enqueued: list[str], state: RuntimeState) -> Handlers:
    return Handlers(ds_kind="DaemonSet", get_daemonset=lambda key: None, list_daemonsets=list,
                    pods_on_node=lambda node: [], state=state,
                    enqueue=enqueued.append, enqueue_after=lambda key, delay: None)


def _wrote(state: RuntimeState, rv: str | None) -> None:
    """What the status writer notes after writing a status the server answered at ``rv``."""
    state.status.wrote(KEY, replaced="10", written={"metadata": {"resourceVersion": rv} if rv else {}})


OLD = _ds("10", status={"numberReady": 3})


@pytest.mark.parametrize(
    ("noted", "new", "synced"),
    [
        pytest.param(None, _ds("11", status={"numberReady": 0}), True, id="foreign-status-write"),
        pytest.param("11", _ds("11", status={"numberReady": 4}), False, id="own-status-echo"),
        pytest.param("12", _ds("11", status={"numberReady": 0}), True, id="status-write-other-than-ours"),
        pytest.param("11", _ds("11", status={"numberReady": 4}, image="a:2"), True, id="echo-rv-but-spec-changed"),
        pytest.param("11", _ds("11", labels={"x": "y"}, status={"numberReady": 3}), True,
                     id="echo-rv-but-metadata-changed"),
        pytest.param(None, _ds("11", image="a:2", status={"numberReady": 3}), True, id="spec-change"),
        pytest.param("11", _ds("11", status={"numberReady": 4}, uid="u2"), True, id="recreated-same-name"),
    ],
)
def test_ds_update_enqueues_unless_own_echo(noted: str | None, new: dict[str, Any], synced: bool) -> None:
    """A status written by anyone else syncs the DaemonSet, as upstream enqueues every update; our echo does not."""
    enqueued: list[str] = []
    state = RuntimeState.create(clock=lambda: 0.0)
    handlers = _handlers(enqueued, state)
    if noted is not None:
        _wrote(state, noted)
    handlers.on_ds_update(OLD, new)
    assert enqueued == ([KEY] if synced else [])


def test_echo_skipped_once_then_foreign_write_syncs() -> None:
    """The record of our write is used once: a later foreign status write at another version syncs."""
    enqueued: list[str] = []
    state = RuntimeState.create(clock=lambda: 0.0)
    handlers = _handlers(enqueued, state)
    _wrote(state, "11")
    echo = _ds("11", status={"numberReady": 4})
    handlers.on_ds_update(OLD, echo)
    handlers.on_ds_update(echo, _ds("12", status={"numberReady": 0}))
    assert enqueued == [KEY]


def test_resync_of_same_object_syncs() -> None:
    """A periodic resync (old is new) always syncs, even right after our own write."""
    enqueued: list[str] = []
    state = RuntimeState.create(clock=lambda: 0.0)
    handlers = _handlers(enqueued, state)
    _wrote(state, "10")
    handlers.on_ds_update(OLD, OLD)
    assert enqueued == [KEY]


def test_add_and_delete_only_sync() -> None:
    """A new DaemonSet is synced, and so is a deleted one; the handlers clear no state (its sync does)."""
    cluster = Cluster()
    cluster.expectations.set(KEY, adds=3, dels=0)
    handlers = cluster.handlers()
    handlers.on_ds_add(OLD)
    handlers.on_ds_delete(OLD)
    assert cluster.queue.calls == [("add", KEY), ("add", KEY)]
    assert cluster.expectations.get(KEY) is not None


def test_recreated_under_the_same_name_is_planned_from_scratch() -> None:
    """A UID change syncs the new object and plans every node; its echo check never matches the old write."""
    cluster = Cluster()
    handlers = cluster.handlers()
    cluster.changes.take(KEY)
    _wrote(cluster.state, "11")
    recreated = _ds("11", uid="u2", status={"numberReady": 4})
    handlers.on_ds_update(OLD, recreated)
    handlers.on_ds_update(recreated, recreated)
    assert cluster.queue.calls == [("add", KEY), ("add", KEY)]
    assert cluster.changes.take(KEY) is None


def test_status_write_without_version_is_not_remembered() -> None:
    """An answer without a resourceVersion cannot identify its echo, so the next update syncs."""
    cluster = Cluster()
    handlers = cluster.handlers()
    _wrote(cluster.state, None)
    handlers.on_ds_update(OLD, _ds("11", status={"numberReady": 4}))
    assert cluster.queue.keys == [KEY]
