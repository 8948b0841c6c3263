"""The changes the handlers note for incremental planning: every event a plan depends on names its node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dsctl.controller.handlers import Handlers

from .handlerkit import Cluster, ds, node, owner_ref, pod

AGENT = ds("agent")


def owned(node_name: str, **kwargs: Any) -> dict[str, Any]:
    """A pod of ``agent`` on ``node_name``."""
    return pod("p", owner=owner_ref(AGENT), labels={"app": "agent"}, node_name=node_name, **kwargs)


LOGS = ds("logs")
Event = Callable[[Handlers], None]


@pytest.mark.parametrize(
    ("event", "agent", "logs"),
    [
        pytest.param(lambda h: h.on_node_add(node("n5")), {"n5"}, {"n5"}, id="node-joins"),
        pytest.param(lambda h: h.on_node_delete(node("n5")), {"n5"}, {"n5"}, id="node-leaves"),
        pytest.param(lambda h: h.on_node_update(node("n5"), node("n5", labels={"x": "y"}, rv="2")), {"n5"}, {"n5"},
                     id="node-relabelled"),
        pytest.param(lambda h: h.on_node_update(node("n5"), node("n5", rv="2", heartbeat="2026-12-01T00:01:00Z")),
                     set(), set(), id="heartbeat-changes-nothing"),
        pytest.param(lambda h: h.on_pod_add(pod("p", owner=owner_ref(AGENT), labels={"app": "agent"},
                                                node_name="n2")), {"n2"}, set(), id="owned-pod-appears"),
        pytest.param(lambda h: h.on_pod_delete(pod("p", owner=owner_ref(AGENT), labels={"app": "agent"},
                                                   node_name="n2")), {"n2"}, set(), id="owned-pod-goes"),
        pytest.param(lambda h: h.on_pod_update(owned("n2"),
                                               owned("n2", rv="2", ready=True)),
                     {"n2"}, set(), id="owned-pod-ready"),
        pytest.param(lambda h: h.on_pod_add(pod("p", labels={"app": "logs"}, node_name="n3")), set(), {"n3"},
                     id="adoptable-orphan-appears"),
        pytest.param(lambda h: h.on_pod_delete(pod("p", labels={"app": "logs"}, node_name="n3")), set(), {"n3"},
                     id="adoptable-orphan-goes"),
        pytest.param(lambda h: h.on_pod_update(pod("p", labels={"app": "logs"}, node_name="n3"),
                                               pod("p", labels={"app": "agent"}, node_name="n3", rv="2")),
                     {"n3"}, {"n3"}, id="orphan-relabelled-between-daemonsets"),
        pytest.param(lambda h: h.on_pod_update(owned("n4"),
                                               pod("p", labels={"app": "agent"}, node_name="n4", rv="2")),
                     {"n4"}, set(), id="released-by-owner"),
    ],
)
def test_changes_noted(event: Event, agent: set[str], logs: set[str]) -> None:
    """Each event names the nodes to re-plan, for exactly the DaemonSets whose plan it touches."""
    cluster = Cluster(daemonsets=[AGENT, LOGS])
    for key in ("default/agent", "default/logs"):
        cluster.changes.take(key)
    event(cluster.handlers())
    assert cluster.changes.take("default/agent") == frozenset(agent)
    assert cluster.changes.take("default/logs") == frozenset(logs)


def test_a_resync_asks_for_a_full_recount() -> None:
    """The informer's periodic resync (the same object twice) makes the next plan a full one."""
    cluster = Cluster(daemonsets=[AGENT])
    cluster.changes.take("default/agent")
    cluster.handlers().on_ds_update(AGENT, AGENT)
    assert cluster.changes.take("default/agent") is None
