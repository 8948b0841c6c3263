"""Reading the planned waves of a saved plan: the documented schema and the checks beyond it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dsctl.view.planfile import PlanError, load_plan, parse_plan, schema

VALID: dict[str, Any] = {
    "kind": "DaemonSetPlan",
    "exitCode": 2,
    "daemonsets": [
        {"namespace": "kube-system", "name": "agent", "placement": {"gain": []},
         "update": {"inPlace": False, "waves": [{"wave": 1, "nodes": ["node-0", "node-1"], "etaSeconds": 12},
                                                {"wave": 3, "nodes": ["node-2"]}]}},
        {"namespace": "default", "name": "unchanged"},
    ],
}


def test_valid_plan() -> None:
    """Waves map each node of each DaemonSet to its wave; other fields are ignored."""
    overlay = parse_plan(VALID, source="plan.json")
    assert overlay.waves == {"kube-system/agent": {"node-0": 1, "node-1": 1, "node-2": 3}, "default/unchanged": {}}
    assert overlay.max_wave == 3


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    doc: Any = json.loads(json.dumps(VALID))
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return dict(doc)


INVALID = [
    pytest.param([], "$: must be a JSON object", True, id="not-an-object"),
    pytest.param({"daemonsets": {}}, "$.daemonsets: must be a list", True, id="daemonsets-not-a-list"),
    pytest.param(_with(["daemonsets", 0, "name"], ""), "$.daemonsets[0].name: must be a non-empty string", True,
                 id="empty-name"),
    pytest.param(_with(["daemonsets", 1, "namespace"], 3), "$.daemonsets[1].namespace", True, id="namespace-number"),
    pytest.param(_with(["daemonsets", 0, "update", "waves", 0, "wave"], 0),
                 "$.daemonsets[0].update.waves[0].wave: must be an integer from 1, not 0", True, id="wave-zero"),
    pytest.param(_with(["daemonsets", 0, "update", "waves", 0, "wave"], True), ".wave: must be an integer", True,
                 id="wave-bool"),
    pytest.param(_with(["daemonsets", 0, "update", "waves", 1, "nodes"], "node-2"), ".nodes: must be a list", True,
                 id="nodes-not-a-list"),
    pytest.param(_with(["daemonsets", 0, "update", "waves", 1, "nodes"], ["node-0"]),
                 "node node-0 is already in wave 1 of kube-system/agent", False, id="node-in-two-waves"),
    pytest.param(_with(["daemonsets", 1], {"namespace": "kube-system", "name": "agent"}),
                 "DaemonSet kube-system/agent is listed twice", False, id="daemonset-twice"),
]


@pytest.mark.parametrize(("doc", "message", "schema_refuses"), INVALID)
def test_invalid_plan(doc: Any, message: str, schema_refuses: bool) -> None:
    """Bad input is one error naming the file and the JSON path; the schema refuses what it can express."""
    with pytest.raises(PlanError) as caught:
        parse_plan(doc, source="plan.json")
    assert str(caught.value).startswith("--plan plan.json: $")
    assert message in str(caught.value)
    refused = not jsonschema.Draft202012Validator(schema()).is_valid(doc)
    assert refused is schema_refuses


def test_schema_accepts_the_valid_plan() -> None:
    """The shipped schema is a valid JSON Schema and accepts what the parser accepts."""
    jsonschema.Draft202012Validator.check_schema(schema())
    jsonschema.validate(VALID, schema(), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(("content", "message"), [
    pytest.param(None, "cannot read it", id="missing"),
    pytest.param("{not json", "not JSON (line 1, column 2", id="not-json"),
])
def test_load_errors(tmp_path: Path, content: str | None, message: str) -> None:
    """An unreadable or non-JSON file is one clear line."""
    path = tmp_path / "plan.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(PlanError, match=re.escape(message)):
        load_plan(path)


def test_load(tmp_path: Path) -> None:
    """A saved plan loads with its file name as the source shown on the page."""
    path = tmp_path / "rollout.json"
    path.write_text(json.dumps(VALID))
    assert load_plan(path).source == "rollout.json"
