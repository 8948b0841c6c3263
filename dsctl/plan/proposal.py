"""The DaemonSet as the API server would store it once the file is applied.

The controller plans from the stored object, so the plan must too: the file's spec, defaulted
exactly as the API server defaults it (``dsctl_api.defaults`` for apps/v1, the CRD's own schema
for ``dsctl.io/v1``), carrying the live object's identity (UID, generation) and status (the
``collisionCount`` the revision hash depends on). apps/v1 also gets the server's template
generation: the live one, plus one when the template changes (1 for a new DaemonSet).

What ``kubectl apply`` of the file would leave: the file's ``spec`` is taken as the whole spec;
the DaemonSet's own labels and annotations are merged as a client-side apply merges them (the
live keys stay, the file's win, and keys the previous apply set but the file no longer has go).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dsctl.daemonset.template import GENERATION_ANNOTATION, template_generation
from dsctl.plan.crdschema import apply_defaults as apply_schema_defaults
from dsctl.plan.manifest import Manifest
from dsctl_api.defaults import apply_defaults
from dsctl_api.objects import annotations_of, as_int, as_map, labels
from dsctl_api.timefmt import format_rfc3339

__all__ = ["LAST_APPLIED", "NEW_UID", "Action", "Proposal", "propose"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NEW_UID = "00000000-0000-0000-0000-00000000plan"
"""The UID a new DaemonSet is planned under (the API assigns the real one on create)."""
_SERVER_ANNOTATIONS = (LAST_APPLIED, GENERATION_ANNOTATION)
"""Annotations the server or the client tool writes; a difference in them is no change of the file."""

Action = Literal["create", "update", "none"]


@dataclass(frozen=True, slots=True)
class Proposal:
    """The object to plan with, the live one, and what applying the file does to the object.

    ``changed`` names what differs from the live object (``spec.template``, ``spec.selector``,
    ``metadata.labels``...), empty for a new DaemonSet or no change.
    """

    ds: dict[str, Any]
    live: dict[str, Any] | None
    action: Action
    changed: tuple[str, ...] = ()


def _last_applied(live: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = annotations_of(live).get(LAST_APPLIED)
    try:
        doc = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return as_map(as_map(doc).get("metadata")) if isinstance(doc, Mapping) else {}


def _merged(live: Mapping[str, Any], file: Mapping[str, Any], previous: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in live.items() if not (k in previous and k not in file)}
    out.update(file)
    return out


def _changed_fields(new: Mapping[str, Any], old: Mapping[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    new_spec, old_spec = as_map(new.get("spec")), as_map(old.get("spec"))
    for key in sorted(set(new_spec) | set(old_spec)):
        if new_spec.get(key) != old_spec.get(key):
            found.append(f"spec.{key}")
    if dict(labels(new)) != dict(labels(old)):
        found.append("metadata.labels")
    mine = {k: v for k, v in annotations_of(new).items() if k not in _SERVER_ANNOTATIONS}
    theirs = {k: v for k, v in annotations_of(old).items() if k not in _SERVER_ANNOTATIONS}
    if mine != theirs:
        found.append("metadata.annotations")
    return tuple(found)


def propose(manifest: Manifest, live: Mapping[str, Any] | None, *, schema: Mapping[str, Any] | None,
            now: float) -> Proposal:
    """The object the API would store; ``schema`` is the CRD's (custom kind only), ``now`` a new object's
    creation time."""
    ds = copy.deepcopy(manifest.obj)
    if manifest.custom:
        if schema is not None:
            apply_schema_defaults(schema, ds)
    else:
        apply_defaults("apps/daemonsets", ds)
    meta: dict[str, Any] = dict(as_map(ds.get("metadata")))
    meta["namespace"] = manifest.namespace
    file_labels, file_annotations = dict(as_map(meta.get("labels"))), dict(as_map(meta.get("annotations")))
    if live is None:
        meta.update(uid=NEW_UID, generation=1, creationTimestamp=format_rfc3339(now))
        if not manifest.custom:
            file_annotations[GENERATION_ANNOTATION] = "1"
        if file_annotations:
            meta["annotations"] = file_annotations
        ds["metadata"] = meta
        ds["status"] = {}
        return Proposal(ds=ds, live=None, action="create")
    live_meta = as_map(live.get("metadata"))
    previous = _last_applied(live)
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        if key in live_meta:
            meta[key] = live_meta[key]
    meta["labels"] = _merged(labels(live), file_labels, as_map(previous.get("labels")))
    annotations = _merged(annotations_of(live), file_annotations, as_map(previous.get("annotations")))
    template_changed = as_map(ds.get("spec")).get("template") != as_map(live.get("spec")).get("template")
    if not manifest.custom:
        generation = template_generation(live) or 1
        annotations[GENERATION_ANNOTATION] = str(generation + 1 if template_changed else generation)
    meta["annotations"] = annotations
    spec_changed = ds.get("spec") != live.get("spec")
    meta["generation"] = as_int(live_meta.get("generation"), 1) + (1 if spec_changed else 0)
    ds["metadata"] = meta
    ds["status"] = copy.deepcopy(dict(as_map(live.get("status"))))
    changed = _changed_fields(ds, live)
    return Proposal(ds=ds, live=dict(live), action="update" if changed else "none", changed=changed)
