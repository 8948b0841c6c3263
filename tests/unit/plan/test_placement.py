"""Placement in a plan: the nodes that gain, lose or keep the pod, grouped by the planner's verdict."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.builders import node, rolling
from tests.unit.plan.fleet import daemonset, nodes, plan_for, rolled_out

GPU = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}


def _placement(plan: dict[str, Any]) -> dict[str, list[tuple[str, list[str]]]]:
    """``{change: [(reason, nodes)]}``."""
    placement = plan["daemonsets"][0]["placement"]
    return {change: [(g["reason"], g["nodes"]) for g in placement[change]["groups"]] for change in placement}


def _zones() -> list[dict[str, Any]]:
    return [node(f"node-{i}", labels={"zone": "a" if i < 3 else "b"}) for i in range(6)]


def _tainted() -> list[dict[str, Any]]:
    return [node(f"node-{i}", taints=[{"key": "gpu", "effect": "NoSchedule"}] if i < 2 else None)
            for i in range(4)]


@pytest.mark.parametrize(
    ("live", "new", "cluster_nodes", "expected"),
    [
        pytest.param(
            daemonset("agent", node_selector={"zone": "a"}), daemonset("agent", node_selector={"zone": "b"}),
            _zones(),
            {"gain": [("nodeSelector", ["node-3", "node-4", "node-5"])],
             "lose": [("nodeSelector", ["node-0", "node-1", "node-2"])], "keep": []},
            id="node-selector-moves",
        ),
        pytest.param(
            daemonset("agent", node_selector={"zone": "a"}), daemonset("agent"), _zones(),
            {"gain": [("nodeSelector", ["node-3", "node-4", "node-5"])], "lose": [],
             "keep": [("", ["node-0", "node-1", "node-2"])]},
            id="node-selector-dropped",
        ),
        pytest.param(
            daemonset("agent"), daemonset("agent", tolerations=[GPU]), _tainted(),
            {"gain": [("taint gpu:NoSchedule", ["node-0", "node-1"])], "lose": [],
             "keep": [("", ["node-2", "node-3"])]},
            id="toleration-added",
        ),
        pytest.param(
            daemonset("agent", tolerations=[GPU]), daemonset("agent"), _tainted(),
            {"gain": [], "lose": [("taint gpu:NoSchedule", ["node-0", "node-1"])],
             "keep": [("", ["node-2", "node-3"])]},
            id="toleration-removed-the-rolling-update-drops-them",
        ),
        pytest.param(
            daemonset("agent", tolerations=[GPU]), daemonset("agent", tolerations=[GPU], node_selector={"zone": "x"}),
            _tainted(),
            {"gain": [], "lose": [("nodeSelector", ["node-0", "node-1", "node-2", "node-3"])], "keep": []},
            id="selector-matches-nothing",
        ),
    ],
)
def test_placement_groups_by_verdict(live: dict[str, Any], new: dict[str, Any], cluster_nodes: list[dict[str, Any]],
                                     expected: dict[str, list[tuple[str, list[str]]]]) -> None:
    """Gains by the live spec's verdict, losses and keeps by the new spec's."""
    for ds in (live, new):
        ds["spec"]["updateStrategy"] = rolling(max_unavailable=2)
    assert _placement(plan_for(new, rolled_out(live, cluster_nodes))) == expected


def test_a_new_daemonset_gains_every_eligible_node() -> None:
    """No live object: every eligible node gains, as a new DaemonSet; the rest are not mentioned."""
    from dsctl.plan.snapshot import ClusterSnapshot

    cluster = ClusterSnapshot(nodes=_zones(), pods=[], revisions=[], live=None)
    plan = plan_for(daemonset("agent", node_selector={"zone": "a"}), cluster)
    assert _placement(plan) == {"gain": [("new", ["node-0", "node-1", "node-2"])], "lose": [], "keep": []}
    entry = plan["daemonsets"][0]
    assert entry["action"] == "create"
    assert entry["update"]["revision"]["number"] == 1


def test_a_node_that_lost_its_pod_gains_one_back() -> None:
    """An eligible node without a pod now gains one, as 'missing'."""
    ds = daemonset("agent")
    cluster = rolled_out(ds, nodes(3))
    cluster.pods.pop(1)
    plan = plan_for(ds, cluster)
    assert _placement(plan)["gain"] == [("missing", ["node-01"])]
    assert plan["changes"] is True
    assert plan["daemonsets"][0]["action"] == "none"


def test_group_text_names_the_rule() -> None:
    """Each group says its reason in words; a gain says what kept the node off until now."""
    live, new = daemonset("agent", node_selector={"zone": "a"}), daemonset("agent", node_selector={"zone": "b"})
    placement = plan_for(new, rolled_out(live, _zones()))["daemonsets"][0]["placement"]
    assert placement["gain"]["groups"][0]["text"] == "was excluded: nodeSelector does not match the node's labels"
    assert placement["lose"]["groups"][0]["text"] == "nodeSelector does not match the node's labels"
