"""DaemonSet update events: every update syncs, except the echo of the controller's own status write."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.controller.expectations import Expectations
from dsctl.controller.handlers import Handlers

from .handlerkit import Cluster

KEY = "default/agent"


def _ds(rv: str, *, status: dict[str, Any] | None = None, image: str = "a:1", uid: str = "u1",
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "agent", "namespace": "default", "uid": uid, "resourceVersion": rv}
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": {"template": {"spec": {"containers": [{"image": image}]}}},
            "status": status or {}}


def _handlers(enqueued: list[str]) -> Handlers:
    return Handlers(ds_kind="DaemonSet", get_daemonset=lambda key: None, list_daemonsets=list,
                    pods_on_node=lambda node: [], expectations=Expectations(clock=lambda: 0.0),
                    enqueue=enqueued.append, enqueue_after=lambda key, delay: None)


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
    handlers = _handlers(enqueued)
    if noted is not None:
        handlers.note_status_write(KEY, {"metadata": {"resourceVersion": noted}})
    handlers.on_ds_update(OLD, new)
    assert enqueued == ([KEY] if synced else [])


def test_echo_skipped_once_then_foreign_write_syncs() -> None:
    """The record of our write is used once: a later foreign status write at another version syncs."""
    enqueued: list[str] = []
    handlers = _handlers(enqueued)
    handlers.note_status_write(KEY, {"metadata": {"resourceVersion": "11"}})
    echo = _ds("11", status={"numberReady": 4})
    handlers.on_ds_update(OLD, echo)
    handlers.on_ds_update(echo, _ds("12", status={"numberReady": 0}))
    assert enqueued == [KEY]


def test_resync_of_same_object_syncs() -> None:
    """A periodic resync (old is new) always syncs, even right after our own write."""
    enqueued: list[str] = []
    handlers = _handlers(enqueued)
    handlers.note_status_write(KEY, {"metadata": {"resourceVersion": "10"}})
    handlers.on_ds_update(OLD, OLD)
    assert enqueued == [KEY]


def test_add_syncs_and_delete_forgets_expectations() -> None:
    """A new DaemonSet is synced; a deleted one is synced too (to clean up) after its expectations are dropped."""
    cluster = Cluster()
    cluster.expectations.set(KEY, adds=3, dels=0)
    handlers = cluster.handlers()
    handlers.on_ds_add(OLD)
    handlers.on_ds_delete(OLD)
    assert cluster.queue.calls == [("add", KEY), ("add", KEY)]
    assert cluster.expectations.get(KEY) is None


def test_recreated_under_the_same_name_starts_clean() -> None:
    """A UID change drops the old object's expectations and its pending echo record before syncing the new one."""
    cluster = Cluster()
    cluster.expectations.set(KEY, adds=3, dels=0)
    handlers = cluster.handlers()
    handlers.note_status_write(KEY, {"metadata": {"resourceVersion": "11"}})
    recreated = _ds("11", uid="u2", status={"numberReady": 4})
    handlers.on_ds_update(OLD, recreated)
    handlers.on_ds_update(recreated, recreated)
    assert cluster.queue.calls == [("add", KEY), ("add", KEY)]
    assert cluster.expectations.get(KEY) is None


def test_delete_forgets_the_pending_echo() -> None:
    """After a delete, an update at the version of our last status write is not mistaken for its echo."""
    cluster = Cluster()
    handlers = cluster.handlers()
    handlers.note_status_write(KEY, {"metadata": {"resourceVersion": "11"}})
    handlers.on_ds_delete(OLD)
    handlers.on_ds_update(OLD, _ds("11", status={"numberReady": 4}))
    assert cluster.queue.keys == [KEY, KEY]


def test_status_write_without_version_is_not_remembered() -> None:
    """An answer without a resourceVersion cannot identify its echo, so the next update syncs."""
    cluster = Cluster()
    handlers = cluster.handlers()
    handlers.note_status_write(KEY, {"metadata": {}})
    handlers.on_ds_update(OLD, _ds("11", status={"numberReady": 4}))
    assert cluster.queue.keys == [KEY]
