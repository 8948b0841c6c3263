"""In-place image updates: the decision, the patch, availability, the planner, and the wait."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from dsctl.daemonset.extensions import IN_PLACE_IF_POSSIBLE, InvalidControl, RolloutControls, rollout_controls
from dsctl.daemonset.inplace import (
    IN_PLACE_ANNOTATION,
    image_only_changes,
    in_place_patch,
    in_place_pending,
    plan_pod_update,
    templates_by_hash,
)
from dsctl.daemonset.podchange import same_for_planning
from dsctl.daemonset.podplan import ImageChange, PodRef, PodUpdate
from dsctl.daemonset.status import compute_status
from dsctl.daemonset.template import HASH_LABEL
from dsctl.daemonset.update import plan_rolling_update
from dsctl.informer.projections import make_pod_projection
from dsctl_sim.patch.strategic import strategic_merge

from .objects import T0, make_ds, make_node, make_pod

OLD, NEW = "h-old", "h-new"
IN_PLACE = RolloutControls(rolling_update_type=IN_PLACE_IF_POSSIBLE)


def _template(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers, **spec}}


A1 = {"name": "a", "image": "a:1"}
A2 = {"name": "a", "image": "a:2"}
B1 = {"name": "b", "image": "b:1", "command": ["run"]}
B2 = {"name": "b", "image": "b:2", "command": ["run"]}


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(_template([A1]), _template([A2]), (ImageChange("a", "a:1", "a:2"),), id="one-image"),
    pytest.param(_template([A1, B1]), _template([A1, B2]), (ImageChange("b", "b:1", "b:2"),), id="second-of-two"),
    pytest.param(_template([A1, B1]), _template([A2, B2]),
                 (ImageChange("a", "a:1", "a:2"), ImageChange("b", "b:1", "b:2")), id="both"),
    pytest.param(_template([A1]), _template([A1]), None, id="no-change"),
    pytest.param(_template([B1]), _template([{**B2, "command": ["other"]}]), None, id="image-and-command"),
    pytest.param(_template([B1]), _template([{**B1, "command": ["other"]}]), None, id="command-only"),
    pytest.param(_template([A1, B1]), _template([B1, A1]), None, id="reordered"),
    pytest.param(_template([A1]), _template([{"name": "z", "image": "a:2"}]), None, id="renamed"),
    pytest.param(_template([A1]), _template([A2, B1]), None, id="container-added"),
    pytest.param(_template([A1], initContainers=[B1]), _template([A1], initContainers=[B2]), None,
                 id="init-image"),
    pytest.param(_template([A1], initContainers=[B1]), _template([A2], initContainers=[B1]),
                 (ImageChange("a", "a:1", "a:2"),), id="init-unchanged"),
    pytest.param(_template([A1]), {**_template([A2]), "metadata": {"labels": {"app": "y"}}}, None,
                 id="label-changed"),
    pytest.param(_template([A1], hostNetwork=True), _template([A2]), None, id="spec-field-changed"),
    pytest.param(_template([A1]), _template([{"name": "a", "image": ""}]), None, id="image-emptied"),
])
def test_image_only_changes(old: dict[str, Any], new: dict[str, Any], expected: tuple[ImageChange, ...] | None) -> None:
    """Only container image changes, containers matched by name in order, can be patched in place."""
    assert image_only_changes(old, new) == expected


def test_templates_by_hash_strips_the_patch_directive() -> None:
    """A revision's stored template is found under its hash label, without $patch."""
    revision = {"metadata": {"labels": {HASH_LABEL: OLD}},
                "data": {"spec": {"template": {**_template([A1]), "$patch": "replace"}}}}
    assert templates_by_hash([revision, {"metadata": {}}]) == {OLD: _template([A1])}


def _cached(*, restarts: int | None = 3, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    pod = make_pod("node-0", hash=OLD, ready=True, ready_since=T0 - 100)
    pod["metadata"]["resourceVersion"] = "42"
    pod["spec"]["containers"] = [copy.deepcopy(B1), copy.deepcopy(A1)]
    if annotations is not None:
        pod["metadata"]["annotations"] = annotations
    if restarts is not None:
        pod["status"]["containerStatuses"] = [{"name": "b", "restartCount": 0},
                                              {"name": "a", "restartCount": restarts}]
    return pod


def _plan_update(pod: dict[str, Any], new: dict[str, Any], *, generation: int | None = None) -> PodUpdate | None:
    return plan_pod_update(pod, PodRef.of(pod, node="node-0"), old_templates={OLD: _template([B1, A1])},
                           template=new, hash=NEW, generation=generation)


@pytest.mark.parametrize(("annotations", "restarts", "generation", "recorded"), [
    pytest.param({"keep": "me"}, 3, None, {"a": 3}, id="annotated"),
    pytest.param(None, 3, 7, {"a": 3}, id="no-annotations-generation"),
    pytest.param({}, None, None, {"a": -1}, id="no-container-status"),
])
def test_in_place_patch_moves_image_and_revision_and_records(
    annotations: dict[str, str] | None, restarts: int | None, generation: int | None, recorded: dict[str, int]
) -> None:
    """The patch sets the image by name, moves the hash (and generation) labels, records the planned restart counts."""
    pod = _cached(restarts=restarts, annotations=annotations)
    update = _plan_update(pod, _template([B1, A2]), generation=generation)
    assert update is not None
    patched = strategic_merge(pod, in_place_patch(update), kind="Pod")
    assert [c["image"] for c in patched["spec"]["containers"]] == ["b:1", "a:2"]
    assert patched["spec"]["containers"][0]["command"] == ["run"]
    assert patched["metadata"]["labels"][HASH_LABEL] == NEW
    assert patched["metadata"]["labels"].get("pod-template-generation") == (None if generation is None
                                                                               else str(generation))
    record = json.loads(patched["metadata"]["annotations"][IN_PLACE_ANNOTATION])
    assert record == {"revision": NEW, "restartCounts": recorded}
    for key, value in (annotations or {}).items():
        assert patched["metadata"]["annotations"][key] == value


def test_in_place_patch_is_pinned_to_the_planned_pod_version() -> None:
    """The patch carries the pod's UID and the resourceVersion it was planned on, as preconditions."""
    pod = _cached()
    update = _plan_update(pod, _template([B1, A2]))
    assert update is not None
    meta = in_place_patch(update)["metadata"]
    assert (meta["uid"], meta["resourceVersion"]) == (pod["metadata"]["uid"], "42")


@pytest.mark.parametrize("change", [
    pytest.param(lambda p: p["metadata"].pop("resourceVersion"), id="no-resource-version"),
    pytest.param(lambda p: p["metadata"]["labels"].update({HASH_LABEL: "h-unknown"}), id="unknown-revision"),
    pytest.param(lambda p: p["metadata"].update(uid=""), id="no-uid"),
])
def test_no_in_place_update_without_what_pins_it(change: Any) -> None:
    """A pod of an unknown revision, or without UID or resourceVersion, is recreated instead."""
    pod = _cached()
    change(pod)
    assert _plan_update(pod, _template([B1, A2])) is None


def _patched(*, restarts: int, ready: bool, record_hash: str = NEW, raw: str | None = None) -> dict[str, Any]:
    pod = make_pod("node-0", hash=NEW, ready=ready, ready_since=T0 - 100)
    record = raw if raw is not None else json.dumps({"revision": record_hash, "restartCounts": {"c": 2}})
    pod["metadata"]["annotations"] = {IN_PLACE_ANNOTATION: record}
    pod["status"]["containerStatuses"] = [{"name": "c", "restartCount": restarts}]
    return pod


@pytest.mark.parametrize(("pod", "pending"), [
    pytest.param(_patched(restarts=2, ready=True), True, id="not-restarted-yet"),
    pytest.param(_patched(restarts=3, ready=True), False, id="restarted"),
    pytest.param(_patched(restarts=3, ready=False), False, id="restarted-not-ready-is-readiness-business"),
    pytest.param(_patched(restarts=2, ready=True, record_hash="h-other"), False, id="stale-record"),
    pytest.param(_patched(restarts=2, ready=True, raw="{junk"), False, id="unreadable-record"),
    pytest.param(make_pod("node-0", ready=True), False, id="no-record"),
])
def test_in_place_pending(pod: dict[str, Any], pending: bool) -> None:
    """A patched pod is pending until its patched containers restarted past the recorded count."""
    assert in_place_pending(pod) is pending


def test_status_counts_a_patched_pod_unavailable_until_restarted() -> None:
    """numberAvailable leaves out a Ready pod whose in-place update has not restarted it."""
    ds = make_ds()
    nodes = [make_node("node-0")]
    waiting = compute_status(ds=ds, nodes=nodes, pods_by_node={"node-0": [_patched(restarts=2, ready=True)]},
                             hash=NEW, now=T0)
    done = compute_status(ds=ds, nodes=nodes, pods_by_node={"node-0": [_patched(restarts=3, ready=True)]},
                          hash=NEW, now=T0)
    assert (waiting.number_ready, waiting.number_available, waiting.updated_number_scheduled) == (1, 0, 1)
    assert done.number_available == 1


def test_projection_and_change_filter_keep_what_availability_reads() -> None:
    """The cache keeps the record and restart counts, and a restart of a patched pod reaches the planner."""
    project = make_pod_projection(keep_annotations=(IN_PLACE_ANNOTATION,))
    before, after = _patched(restarts=2, ready=True), _patched(restarts=3, ready=True)
    assert in_place_pending(project(before)) and not in_place_pending(project(after))
    assert not same_for_planning(project(before), project(after))
    plain_before, plain_after = make_pod("node-0", ready=True), make_pod("node-0", ready=True)
    plain_after["metadata"]["uid"] = plain_before["metadata"]["uid"]
    plain_after["metadata"]["name"] = plain_before["metadata"]["name"]
    plain_after["metadata"]["creationTimestamp"] = plain_before["metadata"]["creationTimestamp"]
    plain_after["status"]["containerStatuses"] = [{"name": "c", "restartCount": 5}]
    assert same_for_planning(project(plain_before), project(plain_after)), "a crash loop alone is no sync"


NODES = [f"node-{i}" for i in range(6)]


def _ds(new_containers: list[dict[str, Any]], *, max_unavailable: int = 2, **rolling: Any) -> dict[str, Any]:
    return make_ds(pod_spec={"containers": new_containers},
                   strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable, **rolling}})


OLD_TEMPLATES = {OLD: make_ds()["spec"]["template"]}  # one container c with image img


def _old_pods(ready: bool = True) -> dict[str, dict[str, Any]]:
    pods = {n: make_pod(n, hash=OLD, ready=ready, ready_since=T0 - 100) for n in NODES}
    for pod in pods.values():
        pod["metadata"]["resourceVersion"] = "7"
    return pods


def _plan(ds: dict[str, Any], pods: dict[str, dict[str, Any]], *, controls: RolloutControls = IN_PLACE,
          templates: dict[str, Any] | None = None) -> Any:
    return plan_rolling_update(ds=ds, nodes_should_run=NODES, pods_by_node={n: [p] for n, p in pods.items()},
                               hash=NEW, now=T0, controls=controls,
                               old_templates=OLD_TEMPLATES if templates is None else templates)


@pytest.mark.parametrize(("ds", "controls", "templates", "updates", "deletes"), [
    pytest.param(_ds([{"name": "c", "image": "img:2"}]), IN_PLACE, None, 2, 0, id="image-in-place"),
    pytest.param(_ds([{"name": "c", "image": "img:2", "args": ["x"]}]), IN_PLACE, None, 0, 2, id="args-recreate"),
    pytest.param(_ds([{"name": "c", "image": "img:2"}]), RolloutControls(), None, 0, 2, id="standard-recreates"),
    pytest.param(_ds([{"name": "c", "image": "img:2"}]), IN_PLACE, {}, 0, 2, id="revision-unknown"),
    pytest.param(_ds([{"name": "c", "image": "img:2"}], max_unavailable=4), IN_PLACE, None, 4, 0,
                 id="budget-four"),
])
def test_planner_turns_picks_into_in_place_updates(
    ds: dict[str, Any], controls: RolloutControls, templates: dict[str, Any] | None, updates: int, deletes: int
) -> None:
    """The no-surge pass picks within maxUnavailable, then patches image-only picks instead of deleting."""
    plan = _plan(ds, _old_pods(), controls=controls, templates=templates)
    assert (len(plan.updates), len(plan.deletes)) == (updates, deletes)
    for update in plan.updates:
        assert update.hash == NEW and update.images == (ImageChange("c", "img", "img:2"),)


def test_patched_pods_count_against_max_unavailable_until_restarted() -> None:
    """Pods patched but not yet restarted hold the budget; once restarted and Ready, the next ones go."""
    ds = _ds([{"name": "c", "image": "img:2"}])
    pods = _old_pods()
    first = _plan(ds, pods)
    assert [u.pod.node for u in first.updates] == ["node-0", "node-1"]
    for update in first.updates:
        patched = _patched(restarts=2, ready=True)
        patched["metadata"]["name"] = update.pod.name
        pods[update.pod.node] = patched
    assert _plan(ds, pods).updates == () and _plan(ds, pods).deletes == ()
    for node in ("node-0", "node-1"):
        pods[node]["status"]["containerStatuses"] = [{"name": "c", "restartCount": 3}]
    assert [u.pod.node for u in _plan(ds, pods).updates] == ["node-2", "node-3"]


@pytest.mark.parametrize(("ds", "expected"), [
    pytest.param(make_ds(annotations={"dsctl.io/rolling-update-type": "InPlaceIfPossible"}), IN_PLACE,
                 id="annotation"),
    pytest.param(make_ds(annotations={"dsctl.io/rollingUpdateType": "InPlaceIfPossible"}), IN_PLACE,
                 id="deprecated-camel-case-annotation"),
    pytest.param(make_ds(annotations={"dsctl.io/rolling-update-type": "Standard",
                                      "dsctl.io/rollingUpdateType": "InPlaceIfPossible"}), RolloutControls(),
                 id="kebab-case-wins-over-deprecated"),
    pytest.param(_ds([], rollingUpdateType="InPlaceIfPossible", maxSurge="0%"), IN_PLACE, id="field-zero-surge"),
    pytest.param(_ds([], rollingUpdateType="Standard"), RolloutControls(), id="standard"),
])
def test_rolling_update_type_is_read(ds: dict[str, Any], expected: RolloutControls) -> None:
    """rollingUpdateType comes from its field, else dsctl.io/rolling-update-type, else the deprecated camelCase name."""
    assert rollout_controls(ds) == expected


@pytest.mark.parametrize(("ds", "message"), [
    pytest.param(_ds([], max_unavailable=0, rollingUpdateType="InPlaceIfPossible", maxSurge=1), "maxSurge",
                 id="surge-int"),
    pytest.param(make_ds(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%"}},
                         annotations={"dsctl.io/rolling-update-type": "InPlaceIfPossible"}), "maxSurge",
                 id="surge-percent-annotation"),
    pytest.param(_ds([], rollingUpdateType="InPlace"), "Standard or InPlaceIfPossible", id="unknown-type"),
])
def test_rolling_update_type_refuses_surge_and_unknown_values(ds: dict[str, Any], message: str) -> None:
    """InPlaceIfPossible with a non-zero maxSurge, or an unknown type, is an InvalidControl."""
    with pytest.raises(InvalidControl, match=message):
        rollout_controls(ds)
