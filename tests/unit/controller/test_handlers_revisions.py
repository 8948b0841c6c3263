"""ControllerRevision events: owners resync when their history changes, orphans wake their selectors."""

from __future__ import annotations

from typing import Any

import pytest

from .handlerkit import Cluster, ds, owner_ref, revision

AGENT = ds("agent")
LOGS = ds("logs")
A, L = "default/agent", "default/logs"

OWNED = revision("agent-abc", owner=owner_ref(AGENT), labels={"app": "agent"}, rv="4")
ORPHAN = revision("agent-def", labels={"app": "agent"}, rv="4")


@pytest.mark.parametrize(("added", "calls"), [
    pytest.param(OWNED, [], id="owned-were-made-by-us"),
    pytest.param(ORPHAN, [("add", A)], id="orphan-may-be-adopted"),
    pytest.param(revision("x", labels={"app": "nobody"}), [], id="orphan-matching-none"),
    pytest.param(revision("agent-abc", owner=owner_ref(AGENT), deleting=True), [("add", A)],
                 id="added-while-deleting-counts-as-delete"),
])
def test_revision_add(added: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """Only an orphan (or a revision already going away) reaches a DaemonSet on add."""
    cluster = Cluster(daemonsets=[AGENT, LOGS])
    cluster.handlers().on_revision_add(added)
    assert cluster.queue.calls == calls


@pytest.mark.parametrize(("old", "new", "calls"), [
    pytest.param(OWNED, OWNED, [], id="resync-same-version"),
    pytest.param(OWNED, revision("agent-abc", owner=owner_ref(AGENT), labels={"app": "agent"}, rv="5"),
                 [("add", A), ("add", A)], id="owned-change-seen-through-old-and-new"),
    pytest.param(OWNED, revision("agent-abc", owner=owner_ref(LOGS), rv="5"), [("add", A), ("add", L)],
                 id="owner-changes"),
    pytest.param(OWNED, revision("agent-abc", labels={"app": "logs"}, rv="5"), [("add", A), ("add", L)],
                 id="released-and-relabelled"),
    pytest.param(ORPHAN, revision("agent-def", labels={"app": "logs"}, rv="5"), [("add", L)],
                 id="orphan-relabelled"),
])
def test_revision_update(old: dict[str, Any], new: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """Both the old and the new owner resync, and an orphan wakes what now selects it."""
    cluster = Cluster(daemonsets=[AGENT, LOGS])
    cluster.handlers().on_revision_update(old, new)
    assert cluster.queue.calls == calls


@pytest.mark.parametrize(("gone", "calls"), [
    pytest.param(OWNED, [("add", A)], id="owned-may-have-been-current"),
    pytest.param(ORPHAN, [], id="orphan"),
])
def test_revision_delete(gone: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """A vanished owned revision resyncs its owner; an orphan's deletion concerns nobody."""
    cluster = Cluster(daemonsets=[AGENT, LOGS])
    cluster.handlers().on_revision_delete(gone)
    assert cluster.queue.calls == calls
