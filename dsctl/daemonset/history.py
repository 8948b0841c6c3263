"""ControllerRevision history: find or snapshot the current revision, dedup, renumber, clean up.

A DaemonSet's history is the set of ControllerRevisions it controls. Each one stores the
strategic-merge patch that restores one pod template (``kubectl rollout undo`` applies it
verbatim) and a ``revision`` number; the highest number is the current template. The hash
label on the current revision is what new pods carry and what the rolling update compares.

Everything here is a pure decision over cached objects. ``syncplan.plan_sync`` puts the
``HistoryPlan`` into the sync's plan, and the order its writes go out in is written once, in
``dsctl.controller.executor.SyncExecutor`` (stage 4). A create that fails with AlreadyExists
is settled by ``resolve_create_conflict``.

Revision data travels as Go's ``encoding/json`` writes it (``wire_body``), because
kube-apiserver refuses an update whose ``data`` bytes differ from the stored ones. A new
snapshot is written as upstream's ``getPatch`` writes it (keys sorted, ``<>&`` escaped), so the
bytes are the ones kube-controller-manager would write for the same template; an existing
revision is written back in the key order it was read in, which is the stored order.

Deliberate differences from upstream:

- Revision data is matched as parsed JSON, not as bytes. Upstream compares its own marshalling
  of the typed template with the stored bytes; with dicts, structural equality is the faithful
  equivalent, and it also matches revisions that another writer encoded differently, which is
  what lets dsctl take over kube-controller-manager's history without a new revision.
- De-duplication relabels only pods that carry a hash of a deleted duplicate. Upstream relabels
  every pod of the DaemonSet, which also stamps pods of *old* revisions with the current hash and
  hides them from the rolling update.
- Revisions whose controller reference names another owner are ignored, as a guard against a
  caller passing the whole namespace.
- Revision numbers stay within int64, as the API stores them. Upstream computes ``max + 1``
  in Go's int64, which wraps to a negative number that the API server refuses, so a DaemonSet
  that adopted a revision numbered 2^63-1 retries for ever. Here an orphan whose number leaves
  no room above it is not adopted (``adoption_refusal``), and a plan that would need a number
  beyond int64 raises ``RevisionOverflow`` instead of writing it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dsctl.daemonset.access import template as _template
from dsctl.daemonset.hashing import compute_hash, revision_name
from dsctl.daemonset.podplan import PodRef
from dsctl.daemonset.template import HASH_LABEL, owner_reference
from dsctl_api import gojson
from dsctl_api.objects import annotations_of, as_int, as_map, deletion_timestamp, labels, name, namespace, spec
from dsctl_api.objects import uid as _uid
from dsctl_api.pods import controller_ref
from dsctl_api.timefmt import format_rfc3339

__all__ = [
    "CURRENT_SINCE_ANNOTATION",
    "DEFAULT_REVISION_HISTORY_LIMIT",
    "MAX_REVISION",
    "CollisionDecision",
    "HistoryPlan",
    "PodPatch",
    "RevisionOverflow",
    "adoption_refusal",
    "collision_count",
    "plan_history",
    "plan_history_cleanup",
    "resolve_create_conflict",
    "revision_data_equal",
    "revision_number",
    "revision_patch",
    "wire_body",
]

DEFAULT_REVISION_HISTORY_LIMIT = 10
"""Old revisions kept when ``spec.revisionHistoryLimit`` is unset (the API default)."""

MAX_REVISION = 2**63 - 1
"""The largest ``revision`` the API stores (int64)."""

Obj = Mapping[str, Any]


class RevisionOverflow(ValueError):
    """The current revision would need a number beyond int64; ``names`` hold the highest ones."""

    def __init__(self, names: Sequence[str], highest: int) -> None:
        super().__init__(
            f"revision: ControllerRevision {', '.join(names)} has revision {highest}; a newer revision would "
            f"need {highest + 1}, beyond the int64 maximum {MAX_REVISION}. Delete or renumber that revision"
        )
        self.names = tuple(names)
        self.highest = highest


@dataclass(frozen=True, slots=True)
class PodPatch:
    """A JSON merge patch for one pod (``patch_type="merge"``)."""

    pod: PodRef
    patch: dict[str, Any]


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """The current revision of a DaemonSet and the writes needed to make history consistent.

    ``hash`` is valid at once, even before the writes land: it is the label the current revision
    has (or will have after ``updates``/``create``), and the one new pods must carry.
    ``current`` is the current revision as it will be after the writes (the snapshot body when
    ``create`` is set). ``old`` are the other revisions, as they will be after label fixes; pass
    them to ``plan_history_cleanup``.
    """

    hash: str
    revision: int
    current: dict[str, Any]
    create: dict[str, Any] | None = None
    updates: tuple[dict[str, Any], ...] = ()
    pod_patches: tuple[PodPatch, ...] = ()
    deletes: tuple[str, ...] = ()
    old: tuple[dict[str, Any], ...] = ()

    @property
    def has_writes(self) -> bool:
        """Whether applying the plan sends anything to the API."""
        return bool(self.create or self.updates or self.pod_patches or self.deletes)


@dataclass(frozen=True, slots=True)
class CollisionDecision:
    """What to do after creating the snapshot failed with AlreadyExists.

    - ``reuse``: the existing revision holds our template; treat it as current.
    - ``bump``: a different template owns the name; write ``status.collisionCount =
      collision_count`` on the live DaemonSet and requeue (the next sync hashes to a new name).
    - ``stale``: the cached collisionCount is behind the live one; requeue without writing.
    """

    action: Literal["reuse", "bump", "stale"]
    collision_count: int | None
    message: str


def revision_number(revision: Obj) -> int:
    """The ``revision`` field of a ControllerRevision; 0 when missing."""
    return as_int(revision.get("revision"))


def adoption_refusal(revision: Obj) -> str | None:
    """Why an orphan ControllerRevision must not be adopted, or None.

    One numbered ``MAX_REVISION`` or more leaves no number for the next revision: adopting it
    would force the controller to write a revision beyond int64.
    """
    number = revision_number(revision)
    if number < MAX_REVISION:
        return None
    return (f"ControllerRevision {namespace(revision)}/{name(revision)} not adopted: field revision is {number}, "
            f"which leaves no number for a newer revision within int64 (maximum {MAX_REVISION})")


def collision_count(ds: Obj) -> int | None:
    """``status.collisionCount``, or None when unset (which hashes differently from 0)."""
    return as_int(as_map(ds.get("status")).get("collisionCount"), None)


def revision_patch(ds: Obj) -> dict[str, Any]:
    """The revision data for the DaemonSet's template: a patch replacing ``spec.template``.

    This is what ``kubectl rollout undo`` applies as a strategic merge patch; ``$patch:
    replace`` makes the template replace the live one instead of merging into it. The result
    is a deep copy, safe to store in a new object.
    """
    template = copy.deepcopy(dict(_template(ds)))
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def wire_body(revision: Obj, *, new: bool, escape: bool = True) -> dict[str, Any]:
    """The revision as it must be sent: ``data`` pre-encoded the way Go encodes it.

    ``new`` (a snapshot about to be created) sorts keys as upstream's map-based encoding does;
    otherwise keys keep the order they were read in. ``escape=False`` leaves the body to the
    transport's plain encoding, as dsctl releases before this one sent it: the bytes those
    releases stored, for a revision they created.
    """
    data = revision.get("data")
    if data is None or not escape:
        return dict(revision)
    return {**revision, "data": gojson.fragment(data, sort_keys=new)}


def revision_data_equal(ds: Obj, revision: Obj) -> bool:
    """Whether ``revision`` stores exactly the DaemonSet's current template."""
    # Built without copying: the comparison only reads.
    expected = {"spec": {"template": {**_template(ds), "$patch": "replace"}}}
    return revision.get("data") == expected


def _foreign(ds: Obj, revision: Obj) -> bool:
    ref = controller_ref(revision)
    ds_uid = _uid(ds)
    return ref is not None and bool(ds_uid) and ref.get("uid") != ds_uid


def _snapshot(ds: Obj, *, number: int, template_hash: str, api_version: str | None, kind: str | None) -> dict[str, Any]:
    rev_labels = dict(labels(_template(ds)))
    rev_labels[HASH_LABEL] = template_hash
    rev_meta: dict[str, Any] = {
        "name": revision_name(name(ds), template_hash),
        "labels": rev_labels,
        "ownerReferences": [owner_reference(ds, api_version=api_version, kind=kind)],
    }
    if namespace(ds):
        rev_meta["namespace"] = namespace(ds)
    if annotations_of(ds):
        # Carries kubernetes.io/change-cause, which `kubectl rollout history` prints.
        rev_meta["annotations"] = dict(annotations_of(ds))
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": rev_meta,
        "data": revision_patch(ds),
        "revision": number,
    }


CURRENT_SINCE_ANNOTATION = "dsctl.io/current-since"
"""Stamped on a revision renumbered to the top (a rollback made it current again): when. The
``Progressing`` deadline of the rollout counts from it (``progress.rollout_started``)."""


def _with_changes(revision: Obj, *, label: str | None, number: int | None,
                  current_since: str | None = None) -> dict[str, Any]:
    updated = copy.deepcopy(dict(revision))
    if not isinstance(updated.get("metadata"), dict):
        updated["metadata"] = {}
    if label is not None:
        updated["metadata"]["labels"] = {**labels(revision), HASH_LABEL: label}
    if number is not None:
        updated["revision"] = number
    if current_since is not None:
        updated["metadata"]["annotations"] = {**annotations_of(revision), CURRENT_SINCE_ANNOTATION: current_since}
    return updated


def plan_history(
    *,
    ds: Obj,
    revisions: Iterable[Obj],
    pods: Iterable[Obj] = (),
    api_version: str | None = None,
    kind: str | None = None,
    now: float | None = None,
) -> HistoryPlan:
    """Decide the current revision of ``ds`` and the writes that keep its history consistent.

    ``revisions`` are the ControllerRevisions the DaemonSet controls (after adoption); any whose
    controller reference names a different UID are ignored. ``pods`` are the DaemonSet's pods,
    needed only to relabel pods of de-duplicated revisions. ``api_version``/``kind`` name the
    owner in a new snapshot's ownerReference; they default to the DaemonSet's own fields, then
    to ``apps/v1``/``DaemonSet`` (list items often lack them, so CRD mode should pass them).

    Steps, as upstream's constructHistory: a revision without the hash label gets its own name
    as the label; revisions storing the current template are "current", the rest "old"; the
    current revision number is one above the highest old one. No current revision: snapshot a
    new one named after the template hash. Several: keep the highest-numbered, relabel pods
    of the others, delete them. A kept revision numbered below the old ones (a rollback) is
    renumbered to the top, and stamped with ``now`` (``CURRENT_SINCE_ANNOTATION``) when given.
    Raises ``RevisionOverflow`` rather than number one beyond int64.
    """
    label_fixes: dict[str, dict[str, Any]] = {}
    current: list[dict[str, Any]] = []
    old: list[dict[str, Any]] = []
    for revision in revisions:
        if _foreign(ds, revision):
            continue
        view: dict[str, Any] = dict(revision)
        if HASH_LABEL not in labels(revision):
            # The name, not a recomputed hash: it cannot collide and needs no template.
            view = _with_changes(revision, label=name(revision), number=None)
            label_fixes[name(revision)] = view
        (current if revision_data_equal(ds, revision) else old).append(view)

    top = max((revision_number(r) for r in old), default=0) + 1
    old_sorted = tuple(sorted(old, key=lambda r: (revision_number(r), name(r))))

    def check_range() -> None:
        if top > MAX_REVISION:
            highest = top - 1
            raise RevisionOverflow([name(r) for r in old_sorted if revision_number(r) == highest], highest)

    if not current:
        check_range()
        template_hash = compute_hash(_template(ds), collision_count(ds))
        body = _snapshot(ds, number=top, template_hash=template_hash, api_version=api_version, kind=kind)
        return HistoryPlan(
            hash=template_hash,
            revision=top,
            current=body,
            create=body,
            updates=tuple(label_fixes.values()),
            old=old_sorted,
        )

    # Highest revision wins; among equal numbers the greatest name, so the choice is stable.
    current.sort(key=lambda r: (revision_number(r), name(r)))
    kept = current[-1]
    duplicates = current[:-1]
    kept_hash = str(labels(kept)[HASH_LABEL])
    dup_hashes = {str(labels(d)[HASH_LABEL]) for d in duplicates} - {kept_hash}
    pod_patches = tuple(_relabel(pods, dup_hashes, kept_hash)) if dup_hashes else ()

    number = revision_number(kept)
    if number < top:
        check_range()
        kept = _with_changes(kept, label=None, number=top,
                             current_since=None if now is None else format_rfc3339(now))
        number = top
        label_fixes[name(kept)] = kept
    dup_names = {name(d) for d in duplicates}
    return HistoryPlan(
        hash=kept_hash,
        revision=number,
        current=kept,
        updates=tuple(v for k, v in label_fixes.items() if k not in dup_names),
        pod_patches=pod_patches,
        deletes=tuple(sorted(dup_names)),
        old=old_sorted,
    )


def _relabel(pods: Iterable[Obj], from_hashes: set[str], to_hash: str) -> Iterable[PodPatch]:
    for pod in pods:
        if deletion_timestamp(pod):
            continue  # on its way out; a patch would only race the deletion
        if labels(pod).get(HASH_LABEL) in from_hashes:
            yield PodPatch(pod=PodRef.of(pod), patch={"metadata": {"labels": {HASH_LABEL: to_hash}}})


def resolve_create_conflict(*, ds: Obj, existing: Obj, live_ds: Obj | None) -> CollisionDecision:
    """Settle an AlreadyExists on the snapshot create, given the revision holding the name.

    If ``existing`` stores our template we simply reuse it; ``live_ds`` is not needed then
    (the controller may call ``revision_data_equal`` first and skip the live read). Otherwise
    the name belongs to another template: compare the cached collisionCount with the live
    one; if they differ our hash came from a stale count and a retry will fix it, else the
    count must be bumped.
    """
    if revision_data_equal(ds, existing):
        return CollisionDecision("reuse", collision_count(ds), "existing revision holds this template")
    if live_ds is None:
        raise ValueError("live_ds is required when the existing revision holds another template")
    cached, live = collision_count(ds), collision_count(live_ds)
    if cached != live:
        return CollisionDecision("stale", live, f"found a stale collision count ({cached}, live {live}); will retry")
    bumped = (live or 0) + 1
    return CollisionDecision(
        "bump", bumped, f"revision {name(existing)} holds another template; collisionCount -> {bumped}"
    )


def plan_history_cleanup(*, ds: Obj, old_revisions: Sequence[Obj], pods: Iterable[Obj]) -> list[str]:
    """Names of old revisions to delete so at most ``revisionHistoryLimit`` remain.

    Oldest (lowest ``revision``) go first. A revision whose hash any pod still carries is never
    deleted, even if that leaves more than the limit; pass every pod of the DaemonSet,
    including terminating and terminal ones, so a pod on its way out still protects its
    revision.
    """
    keep = as_int(spec(ds).get("revisionHistoryLimit"), DEFAULT_REVISION_HISTORY_LIMIT)
    to_kill = len(old_revisions) - max(keep, 0)
    if to_kill <= 0:
        return []
    live = {str(h) for pod in pods if (h := labels(pod).get(HASH_LABEL))}
    doomed: list[str] = []
    for revision in sorted(old_revisions, key=lambda r: (revision_number(r), name(r))):
        if len(doomed) >= to_kill:
            break
        if labels(revision).get(HASH_LABEL) in live:
            continue
        doomed.append(name(revision))
    return doomed
