"""The plan for people: a few aligned lines per section, node names shortened unless asked.

Reads only the plan document, so the table and ``-o json`` cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["NAMES_SHOWN", "render_table"]

NAMES_SHOWN = 5
"""Node names shown per group without ``--show-nodes``."""

_CHANGE_WORDS = {"gain": "gain a pod", "lose": "lose their pod", "keep": "keep their pod",
                 "withheld": "get no pod"}
_HELD_WORDS = {
    "partition": "held by partition",
    "selector": "held by the rollout selector",
    "paused": "held: the rollout is paused",
    "unhealthy": "skipped as unhealthy (unhealthyNodePolicy Skip)",
    "departing": "left out: the node is departing",
    "onDelete": "wait to be deleted (OnDelete)",
    "notUpdated": "left on their old revision by the rolling update",
    "beyondSimulation": "beyond the simulated waves (raise --max-waves)",
}


def _names(nodes: Sequence[str], *, all_names: bool) -> str:
    if all_names or len(nodes) <= NAMES_SHOWN:
        return ", ".join(nodes)
    return ", ".join(nodes[:NAMES_SHOWN]) + f", ... ({len(nodes) - NAMES_SHOWN} more)"


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def _placement(lines: list[str], placement: Mapping[str, Any], *, all_names: bool) -> None:
    changes = [c for c in _CHANGE_WORDS if c in placement]
    counts = ", ".join(f"{placement[c]['count']} {_CHANGE_WORDS[c]}" for c in changes
                       if c != "withheld" or placement[c]["count"])
    lines.append(f"Placement: {counts}")
    for change in changes:
        for group in placement[change]["groups"]:
            lines.append(f"  {change:<8} {group['count']:>6}  {group['text']}")
            if change != "keep" or all_names or group["reason"]:
                lines.append(f"  {'':<8} {'':>6}  {_names(group['nodes'], all_names=all_names)}")


def _update(lines: list[str], update: Mapping[str, Any], *, all_names: bool) -> None:
    revision, strategy, changing = update["revision"], update["strategy"], update["changing"]
    made = "new" if revision["new"] else "existing"
    lines.append(f"Update: to revision {revision['name']} ({made}, number {revision['number']}, hash "
                 f"{revision['hash']}); {changing['count']} pod(s) on another revision now")
    for old in changing["revisions"]:
        if old["imageOnly"]:
            images = "; ".join(f"{i['container']}: {i['old']} -> {i['new']}" for i in old["images"])
            what = f"image-only ({images})"
        else:
            what = "not image-only" if old["revisionKnown"] else "revision not found: what its pods run is unknown"
        lines.append(f"  from {old['hash'] or '(no hash)'}: {old['pods']} pod(s), {what}; {old['method']}")
    if "invalid" in strategy:
        lines.append(f"  strategy: {strategy['invalid']}")
    elif strategy.get("type") == "OnDelete":
        lines.append("  strategy OnDelete: a pod changes revision only when it is deleted")
    else:
        surge = strategy.get("maxSurge", 0)
        budget = (f"maxSurge {surge}" if surge else f"maxUnavailable {strategy.get('maxUnavailable')}")
        now = f"; {update['unavailableNow']} unavailable now" if update["changing"]["count"] else ""
        lines.append(f"  budget: {budget} of {strategy.get('desired')} nodes, minReadySeconds "
                     f"{strategy['minReadySeconds']}{now}")
    waves = update["waves"]
    if waves:
        sizes = sorted({len(w["nodes"]) for w in waves})
        size = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"
        lines.append(f"  waves: {len(waves)}, {size} node(s) each, in this order:")
        shown = waves if all_names or len(waves) <= NAMES_SHOWN else waves[:NAMES_SHOWN]
        for wave in shown:
            patched = f" ({wave['inPlace']} in place)" if wave["inPlace"] else ""
            lines.append(f"    {wave['wave']:>4}: {_names(wave['nodes'], all_names=all_names)}{patched}")
        if len(shown) < len(waves):
            lines.append(f"    ... {len(waves) - len(shown)} more wave(s) (--show-nodes lists them)")
    for key, nodes in update["held"].items():
        lines.append(f"  {len(nodes)} node(s) {_HELD_WORDS.get(key, key)}: {_names(nodes, all_names=all_names)}")
    if update.get("holdMessage"):
        lines.append(f"  the rollout {update['holdMessage']}")
    duration = update["duration"]
    if duration["seconds"] is not None:
        lines.append(f"  estimated duration: {_seconds(duration['seconds'])} ({duration['waves']} wave(s) x "
                     f"{duration['perWaveSeconds']} s: start-up {duration['podStartupSeconds']:.1f} s, "
                     f"{duration['startupSource']}, + minReadySeconds {duration['minReadySeconds']})")
        lines.append(f"    assuming {duration['assumption']}")
    else:
        lines.append(f"  estimated duration: unknown ({duration['startupSource']})")
    if update["simulation"]["truncated"]:
        lines.append(f"  only the first {len(waves)} waves were simulated (--max-waves)")


def render_table(doc: Mapping[str, Any], *, all_names: bool = False) -> str:
    """The plan as text for a terminal."""
    lines: list[str] = []
    for entry in doc["daemonsets"]:
        action = {"create": "create", "update": "update", "none": "no change to the object"}[entry["action"]]
        changed = f" ({', '.join(entry['changedFields'])})" if entry["changedFields"] else ""
        lines.append(f"DaemonSet {entry['namespace']}/{entry['name']} ({entry['resource']}): {action}{changed}")
        lines.append("")
        _placement(lines, entry["placement"], all_names=all_names)
        lines.append("")
        _update(lines, entry["update"], all_names=all_names)
        lines.append("")
        if entry["risks"]:
            lines.append("Risks:")
            lines.extend(f"  ! {risk['message']}" for risk in entry["risks"])
        else:
            lines.append("Risks: none found")
        lines.append("")
    lines.append("Changes: yes (exit code 2)" if doc["changes"] else "Changes: none (exit code 0)")
    return "\n".join(lines) + "\n"
