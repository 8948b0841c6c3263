"""Informers: a reflector keeps an indexed store in sync with the API server and calls handlers.

- ``store``: the indexed cache (``Store``), its read-only view (``ReadOnlyStore``) and the
  built-in index functions (pods by node name, objects by controller UID).
- ``projections``: cache only the pod and node fields a DaemonSet controller reads.
- ``reflector``: the list-then-watch loop, re-list on 410, inactivity timeout, error handling.
- ``informer``: ``Informer``, which owns a reflector task and fans events out to handlers.
- ``metrics``: ``informer_*`` Prometheus metrics.

Cached objects are shared: never mutate what a store or a handler gives you.
"""

from dsctl.informer.informer import Informer, OnAdd, OnDelete, OnUpdate
from dsctl.informer.projections import make_pod_projection, project_node, project_pod
from dsctl.informer.reflector import INITIAL_EVENTS_END, ListerWatcher, Reflector
from dsctl.informer.store import (
    BY_NODE_NAME,
    BY_OWNER_UID,
    IndexFunc,
    ReadOnlyStore,
    ReplaceResult,
    Store,
    Transform,
    by_node_name,
    by_owner_uid,
    index_reads,
    object_key,
)

__all__ = [
    "BY_NODE_NAME",
    "BY_OWNER_UID",
    "INITIAL_EVENTS_END",
    "IndexFunc",
    "Informer",
    "ListerWatcher",
    "OnAdd",
    "OnDelete",
    "OnUpdate",
    "ReadOnlyStore",
    "Reflector",
    "ReplaceResult",
    "Store",
    "Transform",
    "by_node_name",
    "by_owner_uid",
    "index_reads",
    "make_pod_projection",
    "object_key",
    "project_node",
    "project_pod",
]
