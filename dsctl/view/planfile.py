"""Reading a saved ``dsctl plan -o json`` for the grid's overlay of planned waves.

The view needs one thing from a plan: for each DaemonSet and node, the wave in which the
rolling update is planned to update that node. ``plan-overlay.schema.json`` (beside this module,
shipped in the package) is the documented contract; ``parse_plan`` checks the same rules by
hand, so the view needs no JSON Schema library at run time, and also checks what a schema cannot
say (a node in two waves of one DaemonSet, a DaemonSet listed twice). Everything else in a plan
is ignored, so the plan's own schema may grow freely around this part (ADR 0129).

Bad input is one ``PlanError`` naming the file and the JSON path of the first problem.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_NAME", "PlanError", "PlanOverlay", "load_plan", "parse_plan", "schema"]

SCHEMA_NAME = "plan-overlay.schema.json"


class PlanError(ValueError):
    """A plan file the view cannot use; the message names the file and the JSON path."""


@dataclass(frozen=True, slots=True)
class PlanOverlay:
    """Planned waves: ``waves[namespace/name][node] = wave`` (1 is the first wave)."""

    source: str
    waves: Mapping[str, Mapping[str, int]]

    @property
    def max_wave(self) -> int:
        """The last wave of any DaemonSet; 0 when the plan updates nothing."""
        return max((w for nodes in self.waves.values() for w in nodes.values()), default=0)


def schema() -> dict[str, Any]:
    """The JSON Schema of the overlay, as shipped in the package."""
    text = resources.files("dsctl.view").joinpath(SCHEMA_NAME).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _fail(source: str, path: str, message: str) -> PlanError:
    return PlanError(f"--plan {source}: {path}: {message}")


def _text(source: str, path: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(source, path, f"must be a non-empty string, not {json.dumps(value)}")
    return value


def parse_plan(doc: Any, *, source: str) -> PlanOverlay:
    """The overlay in a decoded plan document; raises ``PlanError`` for the first problem."""
    if not isinstance(doc, Mapping):
        raise _fail(source, "$", "must be a JSON object (the output of 'dsctl plan -o json')")
    daemonsets = doc.get("daemonsets")
    if not isinstance(daemonsets, list):
        raise _fail(source, "$.daemonsets", "must be a list of DaemonSets")
    waves: dict[str, dict[str, int]] = {}
    for i, entry in enumerate(daemonsets):
        at = f"$.daemonsets[{i}]"
        if not isinstance(entry, Mapping):
            raise _fail(source, at, "must be an object")
        ns = _text(source, at + ".namespace", entry.get("namespace"))
        key = f"{ns}/{_text(source, at + '.name', entry.get('name'))}"
        if key in waves:
            raise _fail(source, at, f"DaemonSet {key} is listed twice")
        nodes: dict[str, int] = {}
        waves[key] = nodes
        update = entry.get("update")
        if update is None:
            continue
        if not isinstance(update, Mapping):
            raise _fail(source, at + ".update", "must be an object")
        planned = update.get("waves", [])
        if not isinstance(planned, list):
            raise _fail(source, at + ".update.waves", "must be a list")
        for j, wave in enumerate(planned):
            wat = f"{at}.update.waves[{j}]"
            if not isinstance(wave, Mapping):
                raise _fail(source, wat, "must be an object with 'wave' and 'nodes'")
            number = wave.get("wave")
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise _fail(source, wat + ".wave", f"must be an integer from 1, not {json.dumps(number)}")
            members = wave.get("nodes")
            if not isinstance(members, list):
                raise _fail(source, wat + ".nodes", "must be a list of node names")
            for k, node in enumerate(members):
                node_name = _text(source, f"{wat}.nodes[{k}]", node)
                if node_name in nodes:
                    raise _fail(source, f"{wat}.nodes[{k}]",
                                f"node {node_name} is already in wave {nodes[node_name]} of {key}")
                nodes[node_name] = number
    return PlanOverlay(source=source, waves=waves)


def load_plan(path: Path) -> PlanOverlay:
    """Read and parse a plan file; raises ``PlanError`` (unreadable, not JSON, or invalid)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"--plan {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanError(f"--plan {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                        "save a plan with 'dsctl plan -f FILE -o json > plan.json'") from None
    return parse_plan(doc, source=path.name)
