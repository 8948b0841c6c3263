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
- ``in_place_patch``: the strategic merge patch for one pod, built from the cached pod the
  plan was made on. Its ``uid`` and ``resourceVersion`` are preconditions, so a pod that
  changed since (a restart, a relabel, a successor under the same name) refuses it with 409
  instead of being changed on stale grounds; it sets the images (containers merge by name),
  moves the revision labels, and records ``dsctl.io/in-place-update`` with the restart counts
  of that same pod version. One write per pod, no read.
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

from dsctl.daemonset.podplan import ImageChange, PodRef, PodUpdate
from dsctl.daemonset.template import GENERATION_LABEL, HASH_LABEL
from dsctl_api.objects import annotations_of, as_list, as_map, labels

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


def in_place_patch(update: PodUpdate) -> dict[str, Any]:
    """The strategic merge patch carrying ``update`` into its pod.

    ``metadata.uid`` and ``metadata.resourceVersion`` are preconditions: kube-apiserver refuses
    a patch whose resourceVersion is not the stored one (409) and one that would change the
    UID, so the patch applies only to the very pod version the plan was made on; its restart
    counts, recorded here, are that version's. Containers merge by name, so no index is
    needed, and annotations merge into whatever the pod has.
    """
    record = json.dumps({"revision": update.hash, "restartCounts": dict(update.restart_counts)},
                        sort_keys=True, separators=(",", ":"))
    pod_labels = {HASH_LABEL: update.hash}
    if update.generation is not None:
        pod_labels[GENERATION_LABEL] = str(update.generation)
    return {
        "metadata": {
            "uid": update.pod.uid,
            "resourceVersion": update.resource_version,
            "labels": pod_labels,
            "annotations": {IN_PLACE_ANNOTATION: record},
        },
        "spec": {"containers": [{"name": c.container, "image": c.new} for c in update.images]},
    }


def plan_pod_update(
    pod: Obj, ref: PodRef, *, old_templates: Mapping[str, Obj], template: Obj, hash: str,
    generation: int | None, memo: dict[str, tuple[ImageChange, ...] | None] | None = None,
) -> PodUpdate | None:
    """An in-place update for ``pod`` (``ref``), or None to recreate it.

    A pod whose revision is not in ``old_templates`` (history cleaned up, or a pod made by
    hand) is recreated: what it runs is unknown; so is a pod without a resourceVersion (no
    precondition could pin it). ``memo`` caches the verdict per old hash, since all pods of
    one revision get the same one.
    """
    old_hash = str(labels(pod).get(HASH_LABEL) or "")
    version = as_map(pod.get("metadata")).get("resourceVersion")
    if not old_hash or not ref.uid or not isinstance(version, str) or not version:
        return None
    if memo is not None and old_hash in memo:
        changes = memo[old_hash]
    else:
        old = old_templates.get(old_hash)
        changes = None if old is None else image_only_changes(old, template)
        if memo is not None:
            memo[old_hash] = changes
    if changes is None:
        return None
    counts = _restart_counts(pod)
    restarts = tuple((c.container, counts.get(c.container, -1)) for c in changes)
    return PodUpdate(pod=ref, hash=hash, images=changes, generation=generation, resource_version=version,
                     restart_counts=restarts)
