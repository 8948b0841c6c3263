"""Pod events: owners observe expectations and sync, orphans wake the DaemonSets that select them."""

from __future__ import annotations

from typing import Any

import pytest

from .handlerkit import Cluster, ds, owner_ref, pod

AGENT = ds("agent")
LOGS = ds("logs")
WIDE = ds("wide", selector={"tier": "node"})
EMPTY = ds("empty", selector={})
OTHER_NS = ds("agent", namespace="other", uid="uid-other-agent")
SLOW = ds("slow", min_ready=10)
CLUSTER = [AGENT, LOGS, WIDE, EMPTY, OTHER_NS, SLOW]

A = "default/agent"
L = "default/logs"
W = "default/wide"
S = "default/slow"


def _cluster() -> Cluster:
    cluster = Cluster(daemonsets=list(CLUSTER))
    for key in (A, L, W, S):
        cluster.expectations.set(key, adds=1, dels=1)
    return cluster


def _pending(cluster: Cluster, key: str) -> tuple[int, int]:
    record = cluster.expectations.get(key)
    assert record is not None
    return record.adds, record.dels


@pytest.mark.parametrize(("new", "calls", "observed"), [
    pytest.param(pod("p", owner=owner_ref(AGENT)), [("add", A)], {A: (0, 1)}, id="owned"),
    pytest.param(pod("p", owner={**owner_ref(AGENT), "uid": "uid-old"}), [], {A: (1, 1)},
                 id="owner-uid-stale"),
    pytest.param(pod("p", owner=owner_ref(ds("gone"))), [], {}, id="owner-not-cached"),
    pytest.param(pod("p", owner=owner_ref(AGENT, kind="ReplicaSet"), labels={"app": "agent"}), [], {A: (1, 1)},
                 id="other-kind-controls-it"),
    pytest.param(pod("p", labels={"app": "agent"}), [("add", A)], {A: (1, 1)}, id="orphan-matching-one"),
    pytest.param(pod("p", labels={"app": "agent", "tier": "node"}), [("add", A), ("add", W)], {A: (1, 1)},
                 id="orphan-matching-several"),
    pytest.param(pod("p", labels={"app": "nobody"}), [], {}, id="orphan-matching-none"),
    pytest.param(pod("p"), [], {}, id="orphan-without-labels-never-matches-empty-selector"),
    pytest.param(pod("p", labels={"app": "agent"}, namespace="elsewhere"), [], {}, id="orphan-in-other-namespace"),
    pytest.param(pod("p", owner=owner_ref(AGENT), deleting=True), [("add", A)], {A: (1, 0)},
                 id="added-while-deleting-counts-as-delete"),
])
def test_pod_add(new: dict[str, Any], calls: list[tuple[Any, ...]], observed: dict[str, tuple[int, int]]) -> None:
    """An owned pod lowers its owner's expected creates; an orphan wakes every DaemonSet selecting it."""
    cluster = _cluster()
    cluster.handlers().on_pod_add(new)
    assert cluster.queue.calls == calls
    for key, pending in observed.items():
        assert _pending(cluster, key) == pending


OWNED = pod("p", owner=owner_ref(AGENT), labels={"app": "agent"}, rv="5")
ORPHAN = pod("p", labels={"app": "nobody"}, rv="5")


def _bump(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``obj`` at the next resourceVersion, with ``changes`` given as ``pod`` keyword arguments."""
    meta = obj["metadata"]
    owner = (meta.get("ownerReferences") or [None])[0]
    ready = obj["status"]["conditions"][0]["status"] == "True"
    args: dict[str, Any] = {"owner": owner, "labels": meta["labels"], "ready": ready,
                            "rv": str(int(meta["resourceVersion"]) + 1), "ip": obj["status"].get("podIP"),
                            "deleting": "deletionTimestamp" in meta}
    args.update(changes)
    return pod(meta["name"], **args)


@pytest.mark.parametrize(("old", "new", "calls"), [
    pytest.param(OWNED, OWNED, [], id="resync-same-version"),
    pytest.param(OWNED, _bump(OWNED, ip="10.0.0.7"), [], id="status-only-change-dropped"),
    pytest.param(OWNED, _bump(OWNED, labels={"app": "agent", "x": "y"}), [("add", A)], id="owned-label-change"),
    pytest.param(OWNED, _bump(OWNED, owner=owner_ref(LOGS)), [("add", A), ("add", L)],
                 id="controller-ref-moves-to-another-daemonset"),
    pytest.param(OWNED, _bump(OWNED, owner=None), [("add", A), ("add", A)],
                 id="released-still-matching-wakes-owner-then-matchers"),
    pytest.param(OWNED, _bump(OWNED, owner=None, labels={"app": "logs"}), [("add", A), ("add", L)],
                 id="released-with-new-labels"),
    pytest.param(ORPHAN, _bump(ORPHAN, labels={"app": "logs"}), [("add", L)], id="orphan-relabelled-to-match"),
    pytest.param(ORPHAN, _bump(ORPHAN, labels={"app": "nobody", "tier": "node"}), [("add", W)],
                 id="orphan-gains-second-selector-label"),
    pytest.param(ORPHAN, _bump(ORPHAN, labels={"app": "none-either"}), [], id="orphan-relabelled-matching-none"),
    pytest.param(ORPHAN, _bump(ORPHAN, owner=owner_ref(LOGS)), [("add", L)], id="orphan-adopted"),
    pytest.param(OWNED, _bump(OWNED, ready=True), [("add", A)], id="ready-without-min-ready-seconds"),
    pytest.param(_bump(OWNED, ready=True), _bump(OWNED, rv="9", ready=False), [("add", A)], id="unready-no-requeue"),
])
def test_pod_update(old: dict[str, Any], new: dict[str, Any], calls: list[tuple[Any, ...]]) -> None:
    """Owner changes reach old and new owners; planning-invisible changes and resyncs reach nobody."""
    cluster = _cluster()
    cluster.handlers().on_pod_update(old, new)
    assert cluster.queue.calls == calls


def test_ready_transition_requeues_after_min_ready_seconds() -> None:
    """A pod turning Ready syncs its owner now and again just after minReadySeconds, when it becomes available."""
    cluster = _cluster()
    old = pod("p", owner=owner_ref(SLOW), labels={"app": "slow"}, rv="5")
    cluster.handlers().on_pod_update(old, _bump(old, ready=True))
    assert cluster.queue.calls == [("add", S), ("add_after", S, 11.0)]


def test_update_to_deleting_observes_the_deletion_once() -> None:
    """The update that sets deletionTimestamp counts as the delete; the final delete event does not count again."""
    cluster = _cluster()
    handlers = cluster.handlers()
    deleting = _bump(OWNED, deleting=True)
    handlers.on_pod_update(OWNED, deleting)
    assert _pending(cluster, A) == (1, 0)
    handlers.on_pod_update(deleting, _bump(deleting, ip="10.0.0.9"))
    assert _pending(cluster, A) == (1, 0)
    assert cluster.queue.calls == [("add", A)]


@pytest.mark.parametrize(("gone", "calls", "pending"), [
    pytest.param(OWNED, [("add", A)], (1, 0), id="owned"),
    pytest.param(ORPHAN, [], (1, 1), id="orphan-is-nobodys-business"),
    pytest.param(pod("p", owner=owner_ref(AGENT), rv="3"), [("add", A)], (1, 0),
                 id="missed-deletion-last-known-state"),
    pytest.param(pod("p", owner={**owner_ref(AGENT), "uid": "uid-replaced"}, rv="3"), [], (1, 1),
                 id="missed-deletion-of-a-replaced-owner"),
])
def test_pod_delete(gone: dict[str, Any], calls: list[tuple[Any, ...]], pending: tuple[int, int]) -> None:
    """A delete (live, or found missing at a re-list with its last cached state) lowers the owner's expected deletes."""
    cluster = _cluster()
    cluster.handlers().on_pod_delete(gone)
    assert cluster.queue.calls == calls
    assert _pending(cluster, A) == pending


def test_observations_without_expectations_only_enqueue() -> None:
    """A pod event for a DaemonSet with no expectations record enqueues it and creates no record."""
    cluster = Cluster(daemonsets=[AGENT])
    handlers = cluster.handlers()
    handlers.on_pod_add(OWNED)
    handlers.on_pod_delete(OWNED)
    assert cluster.queue.keys == [A, A]
    assert cluster.expectations.get(A) is None
