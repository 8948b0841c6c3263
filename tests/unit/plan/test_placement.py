"""Placement in a plan: the nodes that gain, lose or keep the pod, grouped by the planner's verdict."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl_api.timefmt import format_rfc3339
from tests.support.builders import node, rolling
from tests.unit.plan.fleet import NOW, daemonset, nodes, plan_for, rolled_out, waves

GPU = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}


def _placement(plan: dict[str, Any]) -> dict[str, list[tuple[str, list[str]]]]:
    """``{change: [(reason, nodes)]}``; ``withheld`` only when some node is."""
    placement = plan["daemonsets"][0]["placement"]
    found = {change: [(g["reason"], g["nodes"]) for g in placement[change]["groups"]] for change in placement}
    if not found["withheld"]:
        del found["withheld"]
    return found


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


EVERYTHING = {"operator": "Exists"}
READINESS = {"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}


def _departing_fleet() -> list[dict[str, Any]]:
    """node-00 healthy; node-01 to node-04 each departing by one signal."""
    fleet = nodes(5)
    fleet[1]["spec"]["taints"] = [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000",
                                   "effect": "NoSchedule"}]
    fleet[2]["metadata"]["deletionTimestamp"] = format_rfc3339(NOW - 5)
    fleet[3]["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                         "message": "node is shutting down",
                                         "lastTransitionTime": format_rfc3339(NOW - 5)}]
    fleet[4]["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    return fleet


def test_departing_nodes_keep_their_pod_and_get_none() -> None:
    """A DaemonSet tolerating every taint: departing nodes keep a running pod to the end, grouped by
    signal, and one without a pod is withheld, as the controller's node table says."""
    ds = daemonset("agent", tolerations=[EVERYTHING])
    cluster = rolled_out(ds, _departing_fleet())
    cluster.pods[:] = [p for p in cluster.pods if p["spec"]["nodeName"] != "node-04"]
    changed = daemonset("agent", tolerations=[EVERYTHING], image="registry.example/agent:2")
    plan = plan_for(changed, cluster)
    assert _placement(plan) == {
        "gain": [], "lose": [],
        "keep": [("", ["node-00"]), ("departing ClusterAutoscalerScaleDown", ["node-01"]),
                 ("departing NodeDeleting", ["node-02"]), ("departing NodeShutdown", ["node-03"])],
        "withheld": [("departing KarpenterDisruption", ["node-04"])],
    }
    groups = plan["daemonsets"][0]["placement"]
    assert groups["withheld"]["groups"][0]["text"] == ("gets no pod although eligible: the node is departing: "
                                                       "Karpenter is disrupting it (karpenter.sh/disrupted)")
    held = plan["daemonsets"][0]["update"]["held"]
    assert held["departing"] == ["node-01", "node-02", "node-03"]
    assert waves(plan) == [["node-00"]]


def _skip(image: str = "registry.example/agent:1") -> dict[str, Any]:
    ds = daemonset("agent", image=image)
    ds["metadata"]["annotations"] = {"dsctl.io/unhealthy-node-policy": "Skip",
                                     "dsctl.io/unhealthy-node-seconds": "60"}
    return ds


@pytest.mark.parametrize(
    ("dead_for", "kept", "held"),
    [
        pytest.param(300.0, [("", ["node-00", "node-02"]), ("unhealthy", ["node-01"])], {"unhealthy": ["node-01"]},
                     id="past-the-threshold"),
        pytest.param(10.0, [("", ["node-00", "node-01", "node-02"])], {}, id="under-the-threshold"),
    ],
)
def test_nodes_skipped_as_unhealthy(dead_for: float, kept: list[tuple[str, list[str]]],
                                    held: dict[str, list[str]]) -> None:
    """Skip: a node not Ready past unhealthyNodeSeconds keeps its old pod, grouped as unhealthy, and
    the update section lists it as skipped: the planner's own Skip result."""
    fleet = nodes(3)
    fleet[1]["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                         "lastTransitionTime": format_rfc3339(NOW - dead_for)}]
    cluster = rolled_out(_skip(), fleet, not_ready=("node-01",))
    plan = plan_for(_skip("registry.example/agent:2"), cluster)
    assert _placement(plan) == {"gain": [], "lose": [], "keep": kept}
    assert plan["daemonsets"][0]["update"]["held"] == held


@pytest.mark.parametrize(
    ("taint", "gained"),
    [
        pytest.param("dsctl.io/agents-not-ready", ["node-00", "node-01", "node-02"], id="default-tolerated"),
        pytest.param("", ["node-00", "node-02"], id="no-gate"),
        pytest.param("example.com/other", ["node-00", "node-02"], id="another-taint"),
    ],
)
def test_a_node_carrying_the_readiness_taint_gets_the_pod(taint: str, gained: list[str]) -> None:
    """Every pod the controller makes tolerates --readiness-taint: a joining node that carries it gains
    the pod; without a gate (or with another taint configured) it is excluded by the taint."""
    from dsctl.daemonset.readinessgate import parse_readiness_taint
    from dsctl.plan.snapshot import ClusterSnapshot

    fleet = nodes(3)
    fleet[1]["spec"]["taints"] = [READINESS]
    cluster = ClusterSnapshot(nodes=fleet, pods=[], revisions=[], live=None)
    plan = plan_for(daemonset("agent"), cluster, readiness_taint=parse_readiness_taint(taint))
    assert _placement(plan)["gain"] == [("new", gained)]
