"""The update section of a plan: which pods change revision and how, the waves, what is held
back, and how long it should take.

Every judgement is the controller's: the revision hash from ``history.plan_history`` (inside
the first sync), image-only or not from ``inplace.image_only_changes``, the budgets from
``update.updated_desired_node_counts``, the held nodes from the rolling-update planner's frozen
set as the view attributes it (``dsctl.view.cells.holds``) and from what the last sync left out
of the rolling update (``SyncPlan.skipped``: skipped as unhealthy; the node table's departing
nodes), the waves from the dry run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsctl.daemonset.access import min_ready_seconds, template
from dsctl.daemonset.extensions import InvalidControl, RolloutControls, rollout_controls
from dsctl.daemonset.inplace import image_only_changes
from dsctl.daemonset.template import HASH_LABEL, is_pod_updated, template_generation
from dsctl.daemonset.update import InvalidRollout, update_strategy_type, updated_desired_node_counts
from dsctl.plan.dryrun import DryRun
from dsctl.view.cells import Hold, holds
from dsctl_api.objects import deletion_timestamp, labels, meta, name
from dsctl_api.pods import pod_ready_condition
from dsctl_api.timefmt import parse_rfc3339

__all__ = ["Startup", "observed_startup", "update_section"]

Obj = Mapping[str, Any]

ASSUMPTION = ("each wave takes one pod start-up plus minReadySeconds; pod termination, image pulls slower "
              "than those observed, and the controller's own latency are not counted")


@dataclass(frozen=True, slots=True)
class Startup:
    """How long a pod takes from creation to Ready, and where that figure comes from."""

    seconds: float | None
    source: str


def observed_startup(pods: Iterable[Obj], *, override: float | None) -> Startup:
    """``--pod-startup`` when given, else the median creation-to-Ready time of the Ready ``pods``."""
    if override is not None:
        return Startup(override, "--pod-startup")
    samples: list[float] = []
    for pod in pods:
        condition = pod_ready_condition(pod)
        if condition is None or condition.get("status") != "True" or deletion_timestamp(pod):
            continue
        try:
            ready = parse_rfc3339(str(condition.get("lastTransitionTime") or ""))
            created = parse_rfc3339(str(meta(pod).get("creationTimestamp") or ""))
        except ValueError:
            continue
        if ready >= created:
            samples.append(ready - created)
    if not samples:
        return Startup(None, "no Ready pod of this DaemonSet to measure; pass --pod-startup SECONDS")
    return Startup(statistics.median(samples), f"median creation-to-Ready time of {len(samples)} live pods")


def _controls(ds: Obj) -> RolloutControls | InvalidControl:
    try:
        return rollout_controls(ds)
    except InvalidControl as exc:
        return exc


def _revision_changes(ds: Obj, pods: Iterable[Obj], old_templates: Mapping[str, Obj], *, hash: str,
                      controls: RolloutControls | InvalidControl, strategy: str) -> list[dict[str, Any]]:
    """Per old revision on live pods: how many pods, and whether an image-only change carries them."""
    generation = template_generation(ds)
    counts: dict[str, int] = {}
    for pod in pods:
        if deletion_timestamp(pod) or is_pod_updated(pod, hash, generation):
            continue
        old = str(labels(pod).get(HASH_LABEL) or "")
        counts[old] = counts.get(old, 0) + 1
    in_place = isinstance(controls, RolloutControls) and controls.in_place
    current = dict(template(ds))
    found: list[dict[str, Any]] = []
    for old, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        old_template = old_templates.get(old)
        changes = image_only_changes(old_template, current) if old_template is not None else None
        if strategy == "OnDelete":
            method = "on-delete"
        elif changes is not None and in_place:
            method = "in-place"
        else:
            method = "recreate"
        found.append({
            "hash": old, "pods": count, "imageOnly": changes is not None,
            "images": [{"container": c.container, "old": c.old, "new": c.new} for c in changes or ()],
            "revisionKnown": old_template is not None, "method": method,
        })
    return found


def _held(run: DryRun, ds: Obj, controls: RolloutControls | InvalidControl, *, strategy: str, hash: str,
          node_labels: Mapping[str, Mapping[str, str]]) -> dict[str, list[str]]:
    final = run.final
    old = sorted(n for n, o in final.outcomes.items() if o.old)
    if not old:
        return {}
    effective = controls if isinstance(controls, RolloutControls) else RolloutControls(paused=True)
    rolling = strategy == "RollingUpdate"
    # The planner's own answer: the nodes its last sync skipped as unhealthy and the departing
    # ones, both left out of the rolling update (dsctl.daemonset.syncplan).
    reasons = holds(controls=effective, rolling=rolling, pods_by_node=final.pods_by_node(),
                    nodes_should_run=final.should_run(), hash=hash, generation=template_generation(ds),
                    node_labels=node_labels, skipped_unhealthy=run.last.skipped if rolling else ())
    grouped: dict[str, list[str]] = {}
    for node in old:
        hold = reasons.get(node)
        if strategy == "OnDelete":
            key = "onDelete"
        elif node in final.departing:
            key = "departing"
        elif hold is None or hold is Hold.NONE:
            key = "beyondSimulation" if run.truncated else "notUpdated"
        else:
            key = {Hold.PARTITION: "partition", Hold.SELECTOR: "selector", Hold.PAUSED: "paused",
                   Hold.UNHEALTHY: "unhealthy"}[hold]
        grouped.setdefault(key, []).append(node)
    return grouped


def _strategy(ds: Obj, controls: RolloutControls | InvalidControl, should_run: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"minReadySeconds": min_ready_seconds(ds)}
    try:
        out["type"] = update_strategy_type(ds)
        limits = updated_desired_node_counts(ds, should_run)
        out.update(maxUnavailable=limits.max_unavailable, maxSurge=limits.max_surge, desired=limits.desired)
    except InvalidRollout as exc:
        out["invalid"] = str(exc)
    if isinstance(controls, InvalidControl):
        out["invalidControl"] = str(controls)
    else:
        out.update(partition=controls.partition, paused=controls.paused,
                   selector=str(controls.selector) if controls.selector is not None else None,
                   rollingUpdateType=controls.rolling_update_type)
    return out


def update_section(run: DryRun, ds: Obj, *, before: Sequence[Obj], old_templates: Mapping[str, Obj],
                   startup: Startup, node_labels: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The ``update`` object of one DaemonSet's plan; ``before`` are the pods it holds now."""
    history = run.first.history
    assert history is not None and run.first.table is not None and run.first.status is not None
    hash = history.hash
    controls = _controls(ds)
    strategy = _strategy(ds, controls, run.final.should_run())
    kind = str(strategy.get("type") or "RollingUpdate")
    revisions = _revision_changes(ds, before, old_templates, hash=hash, controls=controls, strategy=kind)
    min_ready = min_ready_seconds(ds)
    per_wave = None if startup.seconds is None else round(startup.seconds + min_ready, 3)
    waves = [{"wave": w.number, "nodes": list(w.nodes), "inPlace": w.in_place} for w in run.waves]
    held = _held(run, ds, controls, strategy=kind, hash=hash, node_labels=node_labels)
    counted = max(len(waves), 1 if run.first.pods.creates else 0)
    assumption = ASSUMPTION
    beyond = len(held.get("beyondSimulation", ()))
    if beyond and waves:
        # Past --max-waves the rollout goes on at the simulated waves' mean size: an estimate,
        # said as one.
        mean = sum(len(w.nodes) for w in run.waves) / len(run.waves)
        counted += math.ceil(beyond / mean)
        assumption += f"; the {beyond} nodes past the simulated waves are counted at their mean size"
    total = None if per_wave is None else round(per_wave * counted, 3)
    hold = run.last.status.hold if run.last.status is not None else None
    return {
        "revision": {"hash": hash, "name": name(history.current), "number": history.revision,
                     "new": history.create is not None, "collisionCount": run.collision_count},
        "strategy": strategy,
        "changing": {"count": sum(r["pods"] for r in revisions), "revisions": revisions},
        "unavailableNow": run.first.status.counters.number_unavailable,
        "waves": waves,
        "held": held,
        "holdMessage": hold.why if hold is not None else None,
        "simulation": {"syncs": run.syncs, "settled": run.settled, "truncated": run.truncated},
        "duration": {"seconds": total, "waves": counted, "perWaveSeconds": per_wave,
                     "podStartupSeconds": startup.seconds, "startupSource": startup.source,
                     "minReadySeconds": min_ready, "assumption": assumption},
    }
