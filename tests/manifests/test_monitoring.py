"""The observability pack (manifests/monitoring): alert rules checked and unit-tested with
promtool, every alert with a runbook section, the dashboard equal to its generator's output,
every metric the rules and the dashboard name exported by the real controller, and the metrics
reference (docs/reference/metrics.md, generated offline by tools/docgen.py) naming exactly the
families the live controller serves.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.manifests.conftest import MANIFESTS, REPO, Build, Obj, find, load_yaml
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess
from tools import docgen

MONITORING = MANIFESTS / "monitoring"
RULE_FILE = MONITORING / "prometheusrule.yaml"
RULE_TESTS = MONITORING / "rules_test.yaml"
DASHBOARD_JSON = MONITORING / "dashboard.json"
RUNBOOK = REPO / "docs" / "runbook.md"
# Series Prometheus itself adds to every scrape, not the controller.
SCRAPE_SERIES = {"up"}
# Metrics a rule may name ahead of the controller; the live check below fails once the
# controller exports one, so this stays empty unless a rule runs ahead again.
NOT_YET_EXPORTED: set[str] = set()
_NO_PROMTOOL = "promtool not on PATH: install Debian's prometheus package (make test runs .ci/ensure-promtool)"


def rules() -> list[dict[str, Any]]:
    """Every alerting rule of the PrometheusRule, in file order."""
    spec = load_yaml(RULE_FILE)["spec"]
    return [rule for group in spec["groups"] for rule in group["rules"]]


def alert_names() -> list[str]:
    """The alert names, in file order."""
    return [rule["alert"] for rule in rules()]


@pytest.fixture(scope="module")
def rule_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the rule groups as a plain Prometheus rule file, beside the unit tests."""
    if shutil.which("promtool") is None:
        pytest.skip(_NO_PROMTOOL)
    directory = tmp_path_factory.mktemp("rules")
    (directory / "rules.yaml").write_text(yaml.safe_dump(load_yaml(RULE_FILE)["spec"]), encoding="utf-8")
    shutil.copy(RULE_TESTS, directory / "rules_test.yaml")
    return directory


def _promtool(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool is not None
    return subprocess.run([promtool, *args], cwd=directory, capture_output=True, text=True, timeout=120, check=False)


def test_promtool_check_rules(rule_dir: Path) -> None:
    """promtool accepts every rule: valid PromQL, durations and templates."""
    result = _promtool(rule_dir, "check", "rules", "rules.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules())} rules found" in result.stdout


def test_promtool_unit_tests_pass(rule_dir: Path) -> None:
    """promtool test rules: every expected alert fires with its labels and annotations, and no other."""
    result = _promtool(rule_dir, "test", "rules", "rules_test.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("alert", alert_names())
def test_every_alert_is_tested_firing_and_silent(alert: str) -> None:
    """Each alert has a unit test where it fires and an evaluation where it must stay silent."""
    evaluations = [case for test in load_yaml(RULE_TESTS)["tests"] for case in test.get("alert_rule_test", [])
                   if case["alertname"] == alert]
    assert any(case.get("exp_alerts") for case in evaluations), f"{alert} is never seen firing"
    assert any(not case.get("exp_alerts") for case in evaluations), f"{alert} is never checked silent"


def runbook_anchors() -> set[str]:
    """The anchors GitHub derives from docs/runbook.md's headings."""
    anchors = set()
    for line in RUNBOOK.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", title)))
    return anchors


@pytest.mark.parametrize("rule", rules(), ids=alert_names())
def test_every_alert_has_a_runbook_section_severity_and_summary(rule: dict[str, Any]) -> None:
    """runbook_url is docs/runbook.md#<a section that exists>; severity and summary are set."""
    path, _, anchor = rule["annotations"]["runbook_url"].partition("#")
    assert path == "docs/runbook.md"
    assert anchor in runbook_anchors(), f"{anchor} is not a section of docs/runbook.md"
    assert rule["labels"]["severity"] in ("warning", "critical")
    assert rule["annotations"]["summary"]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dsctl_dashboard", MONITORING / "dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dashboard_json_is_the_generator_output() -> None:
    """The committed dashboard.json equals what dashboard.py renders (run it after editing)."""
    assert DASHBOARD_JSON.read_text(encoding="utf-8") == _generator().render()


def test_dashboard_has_the_promised_panels() -> None:
    """Status counters, rollout progress, sync, work queue, API by code, informer lag and leader panels."""
    titles = [panel["title"] for panel in json.loads(DASHBOARD_JSON.read_text(encoding="utf-8"))["panels"]]
    for wanted in ("Desired, current, ready, updated, available", "Rollout progress (updated / desired)",
                   "Sync rate by result", "Sync latency", "Work queue depth and adds", "Work queue latency (p99)",
                   "API requests by code", "Informer lag (seconds since last event)", "Leader",
                   "Gated and timed-out nodes", "Readiness gate duration"):
        assert wanted in titles


def _overlay(tmp_path: Path) -> Path:
    base = os.path.relpath(MANIFESTS, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{base}]\ncomponents: [{base}/components/servicemonitor, {base}/monitoring]\n",
        encoding="utf-8",
    )
    return tmp_path


def test_component_adds_the_rules_and_the_dashboard(build: Build, tmp_path: Path) -> None:
    """The component renders the PrometheusRule and a Grafana-sidecar ConfigMap holding dashboard.json."""
    objects = build(_overlay(tmp_path))
    rule: Obj = find(objects, "PrometheusRule", "dsctl")
    assert rule["metadata"]["namespace"] == "dsctl-system"
    assert rule["spec"] == load_yaml(RULE_FILE)["spec"]
    configmap: Obj = find(objects, "ConfigMap", "dsctl-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["data"]["dsctl.json"] == DASHBOARD_JSON.read_text(encoding="utf-8")
    monitor: Obj = find(objects, "ServiceMonitor", "dsctl")
    assert monitor["spec"]["endpoints"][0]["honorLabels"] is True


# -- metric names against a live controller --------------------------------------------------

_FUNCTIONS_AND_KEYWORDS = {
    "sum", "max", "min", "avg", "count", "rate", "irate", "increase", "changes", "deriv", "absent", "time",
    "histogram_quantile", "label_values", "by", "without", "on", "ignoring", "group_left", "group_right",
    "and", "or", "unless", "bool", "offset", "le", "inf", "nan",
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or Grafana label_values query) selects."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range selectors
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r",\s*[a-z_]+\s*\)", ")", text)  # label_values(..., label)
    text = re.sub(r"\$\w+", " ", text)
    names = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text)) - _FUNCTIONS_AND_KEYWORDS
    return {name for name in names if not re.fullmatch(r"\d.*", name)}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param('sum by (code) (rate(rest_client_requests_total{job="$job"}[$__rate_interval]))',
                     {"rest_client_requests_total"}, id="rate-by"),
        pytest.param("histogram_quantile(0.99, sum by (le, verb) (rate(x_seconds_bucket{job=\"j\"}[5m])))",
                     {"x_seconds_bucket"}, id="quantile"),
        pytest.param('max by (namespace, name) (a{j="x"}) < on (namespace) max by (namespace, name) (b)',
                     {"a", "b"}, id="binary-on"),
        pytest.param('label_values(dsctl_x{job="$job", namespace=~"$namespace"}, name)', {"dsctl_x"},
                     id="label-values"),
        pytest.param('absent(up{job="dsctl-metrics"} == 1)', {"up"}, id="absent"),
        pytest.param("time() - informer_last_event_timestamp_seconds > 600",
                     {"informer_last_event_timestamp_seconds"}, id="time"),
    ],
)
def test_metric_names(expr: str, expected: set[str]) -> None:
    """The PromQL name extraction the live check relies on."""
    assert metric_names(expr) == expected


def referenced_metrics() -> dict[str, set[str]]:
    """Metric name -> where it is used (alert names, dashboard panel titles)."""
    used: dict[str, set[str]] = {}
    for rule in rules():
        for name in metric_names(rule["expr"]):
            used.setdefault(name, set()).add(rule["alert"])
    dashboard = json.loads(DASHBOARD_JSON.read_text(encoding="utf-8"))
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            for name in metric_names(target["expr"]):
                used.setdefault(name, set()).add(panel["title"])
    for variable in dashboard["templating"]["list"]:
        if variable.get("type") == "query":
            query = variable["query"]
            for name in metric_names(query if isinstance(query, str) else query.get("query", "")):
                used.setdefault(name, set()).add("variable " + variable["name"])
    return used


_SERIES_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


def exported_series(text: str) -> set[str]:
    """Every series name a /metrics page declares, with or without samples yet.

    A labelled family with no child yet (``informer_watch_errors_total`` before the first
    error) has HELP and TYPE lines but no samples; it is still a series the controller exports.
    """
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(family.name + suffix for suffix in _SERIES_SUFFIXES.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


def _family_base(name: str) -> str:
    """A family's name without the ``_total`` or ``_info`` its samples carry."""
    return re.sub(r"_(total|info)$", "", name)


_LEADER = ["--leader-elect", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", "3",
           "--leader-elect-renew-deadline", "2", "--leader-elect-retry-period", "0.5"]


async def test_every_metric_named_is_exported_by_the_controller() -> None:
    """Against a live /metrics of the real controller on the simulator, with a DaemonSet synced and a
    leader elected, every metric the rules and the dashboard name exists (bar the listed future one)."""
    async with SimProcess(nodes=2, args=["--pod-startup-seconds", "0.1"]) as sim, \
            ControllerProcess(sim.kubeconfig, args=_LEADER) as ctl:
        status, body = await sim.request("POST", "/apis/apps/v1/namespaces/default/daemonsets",
                                         json=daemonset("agent"))
        assert status == 201, body

        async def scraped() -> tuple[set[str], str] | None:
            code, text = await ctl.get("/metrics")
            names = exported_series(text) if code == 200 else set()
            ready = {"dsctl_daemonset_status_number_available", "workqueue_queue_duration_seconds_bucket",
                     "leader_election_master_status"}
            return (names, text) if ready <= names else None

        exported, text = await eventually(scraped, timeout=60, interval=0.3,
                                          message="a synced DaemonSet in /metrics")
    served = {_family_base(f.name) for f in text_string_to_metric_families(text)}
    documented = {_family_base(f.name) for f in await asyncio.to_thread(docgen.metric_families)}
    assert served == documented, f"served, not in the reference: {served - documented}; " \
                                 f"in the reference, not served: {documented - served}"
    used = referenced_metrics()
    missing = {name: sorted(where) for name, where in used.items()
               if name not in exported and name not in SCRAPE_SERIES | NOT_YET_EXPORTED}
    assert missing == {}, f"named but not exported: {missing}"
    assert set(used) >= NOT_YET_EXPORTED
    assert not (NOT_YET_EXPORTED & exported), "now exported: remove it from NOT_YET_EXPORTED"
