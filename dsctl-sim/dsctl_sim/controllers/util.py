"""Small object helpers the control-plane loops share: keys, indexes and safe copies.

Stored objects are shared with the API server and with watchers, so the loops never change
them in place. ``status_update`` and ``spec_update`` build the object to send to
``Storage.update`` by copying only the parts on the path to the change.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PodKey",
    "index_pod_node",
    "meta",
    "object_ref",
    "pod_key",
    "spec_update",
    "split_pod_key",
    "status_update",
]

PodKey = str
"""``namespace/name`` of a pod."""


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's metadata, or an empty mapping."""
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    """``namespace/name`` for a pod, interned: every loop that remembers a pod by its key
    shares one string, which is worth a few hundred bytes a pod at a million pods."""
    m = meta(pod)
    return sys.intern(f"{m.get('namespace') or 'default'}/{m.get('name') or ''}")


def split_pod_key(key: PodKey) -> tuple[str, str]:
    """Inverse of ``pod_key``."""
    namespace, _, name = key.partition("/")
    return namespace, name


def index_pod_node(
    index: dict[str, set[PodKey]], key: PodKey, pod: Mapping[str, Any], *, deleted: bool
) -> str:
    """Keep ``index`` (node name → pod keys) current for one pod event; returns the node name.

    A pod's ``spec.nodeName`` only ever goes from empty to set, so an add is enough for updates;
    a delete removes the key from the node it was bound to.
    """
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node:
        return ""
    if deleted:
        keys = index.get(node)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[node]
    else:
        index.setdefault(node, set()).add(key)
    return node


def status_update(obj: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` carrying ``status``, for ``update(..., subresource="status")``.

    The resourceVersion is kept, so a concurrent write makes the update fail with Conflict
    rather than be lost.
    """
    new = dict(obj)
    new["metadata"] = dict(meta(obj))
    new["status"] = status
    return new


def spec_update(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``obj`` to edit and send back with ``update``."""
    return copy.deepcopy(dict(obj))


def object_ref(obj: Mapping[str, Any], *, api_version: str, kind: str) -> dict[str, Any]:
    """A core ``ObjectReference`` to ``obj``, for events."""
    m = meta(obj)
    ref: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "name": m.get("name"),
        "uid": m.get("uid"),
        "resourceVersion": m.get("resourceVersion"),
    }
    if m.get("namespace"):
        ref["namespace"] = m.get("namespace")
    return ref
