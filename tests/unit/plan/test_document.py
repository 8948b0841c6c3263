"""The plan document: valid against its shipped JSON Schema, readable by 'dsctl view --plan', and
shown to people as a table with the same facts."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from dsctl.plan import schema
from dsctl.plan.render import render_table
from dsctl.plan.snapshot import ClusterSnapshot
from dsctl.view.planfile import parse_plan
from dsctl.view.planfile import schema as overlay_schema
from dsctl_api.timefmt import format_rfc3339
from tests.support.builders import node, rolling
from tests.unit.plan.fleet import NOW, daemonset, nodes, plan_for, rolled_out

V2 = "registry.example/agent:2.0"


def _cases() -> list[Any]:
    strategy = rolling(max_unavailable=3)
    live = daemonset("agent", strategy=strategy)
    cluster = rolled_out(live, nodes(10))
    partitioned = daemonset("agent", image=V2, strategy=strategy)
    partitioned["metadata"]["annotations"] = {"dsctl.io/partition": "2"}
    tolerant = daemonset("agent", image="agent:latest", strategy=rolling(max_unavailable=5),
                         tolerations=[{"operator": "Exists"}])
    return [
        pytest.param(daemonset("agent", image=V2, strategy=strategy), cluster, id="image-change"),
        pytest.param(partitioned, cluster, id="partition"),
        pytest.param(live, cluster, id="no-change"),
        pytest.param(tolerant, ClusterSnapshot(nodes=[node("a"), node("b")], pods=[], revisions=[], live=None),
                     id="new-with-risks"),
        pytest.param(daemonset("agent", image=V2, strategy={"type": "OnDelete"}),
                     rolled_out(daemonset("agent", strategy={"type": "OnDelete"}), nodes(3)), id="on-delete"),
        pytest.param(*_lifecycle(), id="node-lifecycle"),
    ]


def _lifecycle() -> tuple[dict[str, Any], ClusterSnapshot]:
    """Departing and unhealthy nodes, a budget removed and the unhealthy-node policy changed."""
    everything = [{"operator": "Exists"}]
    live = daemonset("agent", tolerations=everything)
    live["metadata"]["annotations"] = {"dsctl.io/max-disruptions": "1"}
    fleet = nodes(4)
    fleet[1]["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    fleet[2]["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                         "lastTransitionTime": format_rfc3339(NOW - 600)}]
    fleet[3]["metadata"]["deletionTimestamp"] = format_rfc3339(NOW - 5)
    cluster = rolled_out(live, fleet, not_ready=("node-02",))
    cluster.pods[:] = [p for p in cluster.pods if p["spec"]["nodeName"] != "node-03"]
    new = daemonset("agent", image=V2, tolerations=everything)
    new["metadata"]["annotations"] = {"dsctl.io/unhealthy-node-policy": "Skip"}
    return new, cluster


@pytest.mark.parametrize(("ds", "cluster"), _cases())
def test_plan_is_valid_against_both_schemas(ds: dict[str, Any], cluster: ClusterSnapshot) -> None:
    """Every plan validates against plan.schema.json and against the view's overlay schema."""
    plan = plan_for(ds, cluster)
    jsonschema.validate(plan, schema(), format_checker=jsonschema.FormatChecker())
    jsonschema.validate(plan, overlay_schema())
    overlay = parse_plan(plan, source="plan.json")
    render_table(plan, all_names=True)
    update = plan["daemonsets"][0]["update"]
    assert overlay.waves["default/agent"] == {n: w["wave"] for w in update["waves"] for n in w["nodes"]}


def test_the_schema_is_a_valid_schema() -> None:
    """plan.schema.json is itself valid JSON Schema (2020-12)."""
    jsonschema.Draft202012Validator.check_schema(schema())


def test_the_schema_refuses_an_undocumented_field() -> None:
    """A field the schema does not document fails validation: output and schema cannot drift apart."""
    plan = plan_for(daemonset("agent"), rolled_out(daemonset("agent"), nodes(2)))
    plan["daemonsets"][0]["update"]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(plan, schema())


def test_table_shows_a_few_names_unless_asked() -> None:
    """Groups and waves show five names and a count; --show-nodes shows them all."""
    strategy = rolling(max_unavailable=8)
    plan = plan_for(daemonset("agent", image=V2, strategy=strategy),
                    rolled_out(daemonset("agent", strategy=strategy), nodes(10)))
    short = render_table(plan)
    assert "node-00, node-01, node-02, node-03, node-04, ... (3 more)" in short
    assert "node-07" in render_table(plan, all_names=True)
    assert "Changes: yes (exit code 2)" in short
    assert "maxUnavailable 8 of 10 nodes" in short
    assert "! maxUnavailable lets 8 of 10 nodes (80 %)" in short
