"""Which objects a DaemonSet owns: the pure half of adopt / release / ignore.

A DaemonSet's pods (and ControllerRevisions) are found by selector, but ownership is
recorded in the controller ownerReference, and the two can disagree: a user relabels a pod,
or creates a matching pod by hand. The rules, per object:

- controlled by someone else: ignore it, whatever its labels;
- controlled by us and selected: ours;
- controlled by us, no longer selected: release it (drop our ownerReference), unless the
  DaemonSet is being deleted, in which case leave it to the garbage collector;
- an orphan that is selected, in our namespace, not being deleted, while the DaemonSet is
  not being deleted: adopt it. The caller must first confirm with a live read that the
  DaemonSet still exists with this UID and is not being deleted, then patch, and count the
  object as ours only if the patch succeeded.

The patches are strategic-merge patches keyed by ownerReference ``uid``; each carries the
object's own UID so the API server rejects it if the name now belongs to a new object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dsctl.daemonset.template import owner_reference
from dsctl_api.labels import Selector
from dsctl_api.objects import deletion_timestamp, is_map, labels, namespace, text, uid
from dsctl_api.pods import controller_ref

__all__ = ["Claim", "adopt_patch", "claim", "release_patch"]


@dataclass(frozen=True, slots=True)
class Claim:
    """The verdict over a set of candidate objects.

    ``owned``: ours already. ``to_adopt``: orphans to patch; ours once patched.
    ``to_release``: ours by reference but no longer selected. Everything else is ignored.
    """

    owned: tuple[Mapping[str, Any], ...] = ()
    to_adopt: tuple[Mapping[str, Any], ...] = ()
    to_release: tuple[Mapping[str, Any], ...] = ()


def claim(
    objects: Iterable[Any],
    *,
    owner_uid: str,
    selector: Selector,
    owner_namespace: str,
    owner_deleting: bool,
) -> Claim:
    """Sort ``objects`` into owned / to adopt / to release for the owner with ``owner_uid``."""
    owned: list[Mapping[str, Any]] = []
    to_adopt: list[Mapping[str, Any]] = []
    to_release: list[Mapping[str, Any]] = []
    # Projected pods of one revision share a single labels dict, so the selector is evaluated
    # once per distinct dict. Each entry keeps its dict alive: its id cannot be reused meanwhile.
    verdicts: dict[int, tuple[Mapping[str, Any], bool]] = {}
    for obj in objects:
        if not is_map(obj):
            continue
        ref = controller_ref(obj)
        if ref is not None:
            if text(ref.get("uid")) != owner_uid or not owner_uid:
                continue  # someone else's
        elif owner_deleting or deletion_timestamp(obj):
            continue  # no adoption by a dying owner, nor of a dying orphan
        obj_labels = labels(obj)
        known = verdicts.get(id(obj_labels))
        if known is None:
            selected = selector.matches({str(k): str(v) for k, v in obj_labels.items()})
            verdicts[id(obj_labels)] = (obj_labels, selected)
        else:
            selected = known[1]
        if ref is not None:
            if selected:
                owned.append(obj)
            elif not owner_deleting:
                to_release.append(obj)
        elif selected and (not owner_namespace or namespace(obj) == owner_namespace):
            to_adopt.append(obj)
    return Claim(owned=tuple(owned), to_adopt=tuple(to_adopt), to_release=tuple(to_release))


def adopt_patch(
    owner: Mapping[str, Any],
    obj: Mapping[str, Any],
    *,
    api_version: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """Strategic-merge patch that makes ``owner`` the controller of ``obj``."""
    return {
        "metadata": {
            "ownerReferences": [owner_reference(owner, api_version=api_version, kind=kind)],
            "uid": uid(obj),
        }
    }


def release_patch(owner_uid: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """Strategic-merge patch that removes the ownerReference with ``owner_uid`` from ``obj``."""
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}], "uid": uid(obj)}}
