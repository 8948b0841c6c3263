"""In-place image updates (``rollingUpdateType: InPlaceIfPossible``): when, how, and when done.

Three pure pieces, used by the rolling update, the status and the executor:

- ``image_only_changes``: whether a pod of an old revision can reach the current template by
  a patch. kube-apiserver lets a pod update change ``spec.containers[*].image`` (and a few
  fields a template change cannot express: activeDeadlineSeconds, toleration additions,
  terminationGracePeriodSeconds), so the only template change that can be patched is a new
  image for containers that otherwise stay equal, matched by name in the same order. Any
  other difference (command, env, labels, init containers, a container added or renamed)
  means the pod is recreated, as with ``Standard``. Init containers are never patched: a
  kubelet does not rerun them for a running pod, so a new init image would never run.
- ``in_place_patch``: the JSON patch for one pod, built from the live pod. It ``test``s the
  UID, each container's name and old image and its restartCount, so a patch planned on a
  stale cache fails (422) instead of changing a pod that moved on; it replaces the images,
  moves the revision labels, and records ``dsctl.io/in-place-update``.
- ``in_place_pending``: a pod carrying that record is not available until every patched
  container has restarted since (its restartCount went above the recorded one) and the pod
  is Ready again. Until the kubelet reacts, a patched pod still looks Ready with the old
  container running; the restart count is what tells "restarted on the new image" apart
  from "not yet noticed". So a patched pod counts against ``maxUnavailable`` from the patch
  on, like a deleted one.

The record (``dsctl.io/in-place-update``) is JSON: ``{"revision": <hash>, "restartCounts":
{<container>: <count at patch time, -1 without a status>}}``. OpenKruise keeps a similar
record (``apps.kruise.io/inplace-update-state``) and compares image IDs; restart counts need
no image digest, which the simulator's kubelet does not invent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from dsctl.daemonset.access import annotations_of, as_list, as_map, labels
from dsctl.daemonset.plan import ImageChange, PodRef, PodUpdate
from dsctl.daemonset.template import GENERATION_LABEL, HASH_LABEL

__all__ = [
    "IN_PLACE_ANNOTATION",
    "image_only_changes",
    "in_place_patch",
    "in_place_pending",
    "in_place_record",
    "plan_pod_update",
    "revision_template",
    "templates_by_hash",
]

IN_PLACE_ANNOTATION = "dsctl.io/in-place-update"
"""Pod annotation recording an in-place update: the revision and restart counts at patch time."""

Obj = Mapping[str, Any]
JsonPatch = list[dict[str, Any]]


def revision_template(revision: Obj) -> dict[str, Any] | None:
    """The pod template a ControllerRevision stores, without its ``$patch`` directive."""
    template = as_map(as_map(as_map(revision.get("data")).get("spec")).get("template"))
    if not template:
        return None
    return {k: v for k, v in template.items() if k != "$patch"}


def templates_by_hash(revisions: Iterable[Obj]) -> dict[str, dict[str, Any]]:
    """Revision hash label to stored template, for the revisions that have both."""
    found: dict[str, dict[str, Any]] = {}
    for revision in revisions:
        hash_ = labels(revision).get(HASH_LABEL)
        template = revision_template(revision)
        if hash_ and template is not None:
            found[str(hash_)] = template
    return found


def _without_image(container: Any) -> Any:
    if not isinstance(container, Mapping):
        return container
    return {k: v for k, v in container.items() if k != "image"}


def image_only_changes(old: Obj, new: Obj) -> tuple[ImageChange, ...] | None:
    """The image changes that turn a pod of template ``old`` into one of ``new``, or None.

    None means "recreate": the templates differ in anything but container images, or not
    at all (two revisions with equal templates: nothing a patch could carry).
    """
    old_spec, new_spec = as_map(old.get("spec")), as_map(new.get("spec"))
    if {k: v for k, v in old.items() if k != "spec"} != {k: v for k, v in new.items() if k != "spec"}:
        return None
    if {k: v for k, v in old_spec.items() if k != "containers"} != {
        k: v for k, v in new_spec.items() if k != "containers"
    }:
        return None
    old_containers, new_containers = as_list(old_spec.get("containers")), as_list(new_spec.get("containers"))
    if len(old_containers) != len(new_containers):
        return None
    changes: list[ImageChange] = []
    for before, after in zip(old_containers, new_containers, strict=True):
        if _without_image(before) != _without_image(after):
            return None  # also covers a renamed container: names must match in order
        old_image, new_image = as_map(before).get("image"), as_map(after).get("image")
        if old_image != new_image:
            if not isinstance(old_image, str) or not isinstance(new_image, str) or not new_image:
                return None
            changes.append(ImageChange(container=str(as_map(after).get("name", "")), old=old_image, new=new_image))
    return tuple(changes) or None


def in_place_record(pod: Obj) -> dict[str, Any] | None:
    """The pod's in-place record, or None when it has none or it cannot be read."""
    raw = annotations_of(pod).get(IN_PLACE_ANNOTATION)
    if not isinstance(raw, str):
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("restartCounts"), dict):
        return None
    return record


def _restart_counts(pod: Obj) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in as_list(as_map(pod.get("status")).get("containerStatuses")):
        if isinstance(status, Mapping) and isinstance(status.get("name"), str):
            count = status.get("restartCount")
            counts[status["name"]] = count if isinstance(count, int) and not isinstance(count, bool) else 0
    return counts


def in_place_pending(pod: Obj) -> bool:
    """Whether an in-place update of ``pod`` has not yet been carried out by its kubelet.

    True while some patched container's restartCount is not above the one recorded at patch
    time (or it has no status). A record for another revision than the pod's hash label is
    stale (the pod was relabelled since) and is ignored, as is an unreadable one: a record
    the controller cannot read must not hold a node unavailable for ever. Readiness is the
    caller's check, as for any pod.
    """
    if IN_PLACE_ANNOTATION not in annotations_of(pod):
        return False
    record = in_place_record(pod)
    if record is None or record.get("revision") != labels(pod).get(HASH_LABEL):
        return False
    counts = _restart_counts(pod)
    for name, recorded in record["restartCounts"].items():
        now = counts.get(str(name))
        if now is None or not isinstance(recorded, int) or now <= recorded:
            return True
    return False


def _pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def in_place_patch(update: PodUpdate, live: Obj) -> JsonPatch | None:
    """The JSON patch carrying ``update`` into ``live`` (the pod as just read), or None.

    None when the live pod is not the planned one: another UID, a container missing, or an
    image that is no longer the one the plan replaces. Every fact the patch relies on is
    also ``test``ed, so a change between the read and the patch makes the server refuse it.
    """
    meta = as_map(live.get("metadata"))
    if not update.pod.uid or meta.get("uid") != update.pod.uid:
        return None
    containers = as_list(as_map(live.get("spec")).get("containers"))
    index = {str(as_map(c).get("name")): i for i, c in enumerate(containers)}
    statuses = as_list(as_map(live.get("status")).get("containerStatuses"))
    status_index = {str(as_map(s).get("name")): i for i, s in enumerate(statuses)}
    ops: JsonPatch = [{"op": "test", "path": "/metadata/uid", "value": update.pod.uid}]
    replaced: JsonPatch = []
    counts: dict[str, int] = {}
    for change in update.images:
        i = index.get(change.container)
        if i is None or as_map(containers[i]).get("image") != change.old:
            return None
        ops.append({"op": "test", "path": f"/spec/containers/{i}/name", "value": change.container})
        ops.append({"op": "test", "path": f"/spec/containers/{i}/image", "value": change.old})
        replaced.append({"op": "replace", "path": f"/spec/containers/{i}/image", "value": change.new})
        s = status_index.get(change.container)
        count = as_map(statuses[s]).get("restartCount") if s is not None else None
        if s is not None and isinstance(count, int):
            # A crash between our read and the patch would look like the restart we wait for.
            ops.append({"op": "test", "path": f"/status/containerStatuses/{s}/restartCount", "value": count})
            counts[change.container] = count
        else:
            counts[change.container] = -1
    record = json.dumps({"revision": update.hash, "restartCounts": counts}, sort_keys=True, separators=(",", ":"))
    ops.extend(replaced)
    ops.append({"op": "add", "path": f"/metadata/labels/{_pointer(HASH_LABEL)}", "value": update.hash})
    if update.generation is not None:
        ops.append({"op": "add", "path": f"/metadata/labels/{_pointer(GENERATION_LABEL)}",
                    "value": str(update.generation)})
    if isinstance(meta.get("annotations"), Mapping):
        ops.append({"op": "add", "path": f"/metadata/annotations/{_pointer(IN_PLACE_ANNOTATION)}", "value": record})
    else:
        # Adding the whole map would drop annotations written since our read: pin the version.
        ops.insert(1, {"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")})
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {IN_PLACE_ANNOTATION: record}})
    return ops


def plan_pod_update(
    ref: PodRef, *, old_hash: str, old_templates: Mapping[str, Obj], template: Obj, hash: str,
    generation: int | None, memo: dict[str, tuple[ImageChange, ...] | None] | None = None,
) -> PodUpdate | None:
    """An in-place update for the pod ``ref`` of revision ``old_hash``, or None to recreate it.

    A pod whose revision is not in ``old_templates`` (history cleaned up, or a pod made by
    hand) is recreated: what it runs is unknown. ``memo`` caches the verdict per old hash,
    since all pods of one revision get the same one.
    """
    if memo is not None and old_hash in memo:
        changes = memo[old_hash]
    else:
        old = old_templates.get(old_hash)
        changes = None if old is None else image_only_changes(old, template)
        if memo is not None:
            memo[old_hash] = changes
    if changes is None:
        return None
    return PodUpdate(pod=ref, hash=hash, images=changes, generation=generation)
