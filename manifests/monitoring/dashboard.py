"""Generate the dsctl Grafana dashboard (``dashboard.json`` beside this file).

The dashboard is code, built with grafana-foundation-sdk, so every query is reviewed as a
line of Python and the JSON in git is reproducible::

    python manifests/monitoring/dashboard.py           # rewrite dashboard.json
    python manifests/monitoring/dashboard.py --check   # exit 1 when dashboard.json is stale

Every query selects ``job="$job"`` (default ``dsctl-metrics``, the Service the ServiceMonitor
scrapes): the workqueue, REST client, informer and leader-election families have the same
names in kube-controller-manager and most operators. The per-DaemonSet gauges carry the
DaemonSet's own ``namespace`` label (the ServiceMonitor sets ``honorLabels``), and both
replicas may export them, so panels take ``max by (namespace, name)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders.dashboard import (
    CustomVariable,
    Dashboard,
    DatasourceVariable,
    QueryVariable,
    Row,
)
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

OUTPUT = Path(__file__).with_name("dashboard.json")
UID = "dsctl-overview"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
JOB = 'job="$job"'
DS = f'{JOB}, namespace=~"$namespace", name=~"$daemonset"'
RATE = "[$__rate_interval]"


def status(counter: str) -> str:
    """One per-DaemonSet status gauge, deduplicated across replicas."""
    return f"max by (namespace, name) (dsctl_daemonset_status_{counter}{{{DS}}})"


def query(expr: str, legend: str, ref: str) -> Dataquery:
    """A range query against the dashboard's Prometheus data source."""
    return Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)


def timeseries(title: str, unit: str, *queries: Dataquery, width: int = 12, description: str = "") -> Timeseries:
    """A time-series panel of ``width`` grid columns (24 is the full row)."""
    panel = Timeseries().title(title).unit(unit).span(width).height(8).datasource(DATASOURCE)
    if description:
        panel = panel.description(description)
    for target in queries:
        panel = panel.with_target(target)
    return panel


def quantile(q: float, histogram: str, *, by: str = "le") -> str:
    """``histogram_quantile`` of a histogram's buckets over the rate interval."""
    return f"histogram_quantile({q}, sum by ({by}) (rate({histogram}_bucket{{{JOB}}}{RATE})))"


def build() -> Dashboard:
    """The dashboard: DaemonSets and the node readiness gate first, then the controller's own health."""
    counters = [
        ("desired_number_scheduled", "desired"),
        ("current_number_scheduled", "current"),
        ("number_ready", "ready"),
        ("updated_number_scheduled", "updated"),
        ("number_available", "available"),
    ]
    per_ds = [query(status(counter), "{{namespace}}/{{name}} " + short, chr(ord("A") + i))
              for i, (counter, short) in enumerate(counters)]
    return (
        Dashboard("dsctl")
        .uid(UID)
        .tags(["dsctl", "daemonset", "kubernetes"])
        .description("DaemonSets reconciled by dsctl, and the controller's sync loop, work queue, "
                     "API traffic, informers and leader election.")
        .refresh("30s")
        .time("now-1h", "now")
        .editable()
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(CustomVariable("job").label("Job").values("dsctl-metrics"))
        .with_variable(
            QueryVariable("namespace").label("Namespace").datasource(DATASOURCE)
            .query(f"label_values(dsctl_daemonset_status_desired_number_scheduled{{{JOB}}}, namespace)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).include_all(True).multi(True).all_value(".*")
        )
        .with_variable(
            QueryVariable("daemonset").label("DaemonSet").datasource(DATASOURCE)
            .query(f'label_values(dsctl_daemonset_status_desired_number_scheduled{{{JOB}, namespace=~"$namespace"}}, '
                   "name)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).include_all(True).multi(True).all_value(".*")
        )
        .with_row(Row("DaemonSets"))
        .with_panel(timeseries("Desired, current, ready, updated, available", "short", *per_ds, width=24,
                               description="The status counters dsctl last computed for each DaemonSet."))
        .with_panel(timeseries(
            "Rollout progress (updated / desired)", "percentunit",
            query(f"{status('updated_number_scheduled')} / {status('desired_number_scheduled')}",
                  "{{namespace}}/{{name}}", "A"),
            description="1 when every node that should run the pod runs the current revision.",
        ))
        .with_panel(timeseries(
            "Unavailable and misscheduled", "short",
            query(status("number_unavailable"), "{{namespace}}/{{name}} unavailable", "A"),
            query(status("number_misscheduled"), "{{namespace}}/{{name}} misscheduled", "B"),
        ))
        .with_row(Row("Node readiness gate"))
        .with_panel(timeseries(
            "Gated and timed-out nodes", "short",
            query(f"max(dsctl_node_readiness_gated_nodes{{{JOB}}})", "carrying the readiness taint", "A"),
            query(f"max(dsctl_node_readiness_timed_out_nodes{{{JOB}}})", "past --readiness-timeout", "B"),
            description="Nodes that carry the readiness taint, and those still carrying it after "
                        "--readiness-timeout (a gating agent is not Ready there; the taint stays).",
        ))
        .with_panel(timeseries(
            "Readiness gate duration", "s",
            query(quantile(0.5, "dsctl_node_readiness_gate_duration_seconds"), "p50", "A"),
            query(quantile(0.99, "dsctl_node_readiness_gate_duration_seconds"), "p99", "B"),
            description="From a node's gate beginning to the removal of its readiness taint.",
        ))
        .with_row(Row("Sync loop"))
        .with_panel(timeseries(
            "Sync rate by result", "ops",
            query(f"sum by (result) (rate(dsctl_sync_total{{{JOB}}}{RATE}))", "{{result}}", "A"),
        ))
        .with_panel(timeseries(
            "Sync latency", "s",
            query(quantile(0.5, "dsctl_sync_duration_seconds"), "p50", "A"),
            query(quantile(0.99, "dsctl_sync_duration_seconds"), "p99", "B"),
        ))
        .with_panel(timeseries(
            "Work queue depth and adds", "short",
            query(f'sum by (name) (workqueue_depth{{{JOB}, name="daemonset"}})', "depth", "A"),
            query(f'sum by (name) (rate(workqueue_adds_total{{{JOB}, name="daemonset"}}{RATE}))', "adds/s", "B"),
            query(f'sum by (name) (rate(workqueue_retries_total{{{JOB}, name="daemonset"}}{RATE}))', "retries/s",
                  "C"),
        ))
        .with_panel(timeseries(
            "Work queue latency (p99)", "s",
            query(quantile(0.99, "workqueue_queue_duration_seconds"), "waiting in queue", "A"),
            query(quantile(0.99, "workqueue_work_duration_seconds"), "being worked on", "B"),
            query(f'max by (name) (workqueue_longest_running_processor_seconds{{{JOB}, name="daemonset"}})',
                  "longest running", "C"),
        ))
        .with_row(Row("API server and caches"))
        .with_panel(timeseries(
            "API requests by code", "reqps",
            query(f"sum by (code) (rate(rest_client_requests_total{{{JOB}}}{RATE}))", "{{code}}", "A"),
        ))
        .with_panel(timeseries(
            "API latency (p99) by verb", "s",
            query(quantile(0.99, "rest_client_request_duration_seconds", by="le, verb"), "{{verb}}", "A"),
            query(quantile(0.99, "rest_client_rate_limiter_duration_seconds", by="le, verb"),
                  "{{verb}} client throttling", "B"),
        ))
        .with_panel(timeseries(
            "Informer lag (seconds since last event)", "s",
            query(f"time() - max by (resource) (informer_last_event_timestamp_seconds{{{JOB}}})", "{{resource}}",
                  "A"),
            description="Events, bookmarks, lists and watch starts all count; the API server sends a "
                        "bookmark about once a minute, so a healthy informer stays under a few minutes.",
        ))
        .with_panel(timeseries(
            "Informer relists and watch errors", "ops",
            query(f"sum by (resource) (rate(informer_relists_total{{{JOB}}}{RATE}))", "{{resource}} relists", "A"),
            query(f"sum by (resource, reason) (rate(informer_watch_errors_total{{{JOB}}}{RATE}))",
                  "{{resource}} {{reason}}", "B"),
        ))
        .with_row(Row("Leader election"))
        .with_panel(
            Stat().title("Leader").span(12).height(5).datasource(DATASOURCE)
            .description("1 on the replica that holds the Lease; the others stand by.")
            .with_target(query(f"max by (instance) (leader_election_master_status{{{JOB}}})", "{{instance}}", "A"))
        )
        .with_panel(timeseries(
            "Replicas up", "short",
            query(f"sum(up{{{JOB}}})", "up", "A"),
            query(f"sum(leader_election_master_status{{{JOB}}})", "leaders", "B"),
        ))
    )


def render() -> str:
    """The dashboard as the JSON committed to git (sorted keys, two-space indent, final newline)."""
    model = json.loads(JSONEncoder(sort_keys=True, indent=2).encode(build().build()))
    return json.dumps(model, sort_keys=True, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write dashboard.json, or with --check report whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when dashboard.json differs from the output")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.name} is stale: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
