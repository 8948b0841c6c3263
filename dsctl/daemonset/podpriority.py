"""The priority of a DaemonSet's pods, for ordering the syncs a new node triggers.

A CNI agent must come before a logging agent on a node that joins (kubernetes issue 128442),
so the DaemonSets that want a new node are synced highest priority first. The priority is
what the Priority admission plugin would give the pod:

1. ``spec.template.spec.priorityClassName`` resolved through the PriorityClass cache
   (``system-node-critical`` is 2000001000, ``system-cluster-critical`` 2000000000);
2. else ``spec.template.spec.priority``, when the template carries one (a class not (yet)
   in the cache also falls back here);
3. else the value of the class marked ``globalDefault``, else 0.

Pure: the PriorityClass lookups are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dsctl.daemonset.access import pod_spec
from dsctl_api.objects import as_map, text

__all__ = ["DEFAULT_PRIORITY", "global_default_priority", "pod_priority"]

DEFAULT_PRIORITY = 0
"""A pod without a class, a priority or a global default gets 0, as in kube-apiserver."""

Obj = Mapping[str, Any]


def _value(pc: Obj | None) -> int | None:
    value = as_map(pc).get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def global_default_priority(classes: Iterable[Obj]) -> int:
    """The value of the ``globalDefault`` class (the highest, should there be several), else 0."""
    defaults = [v for pc in classes if as_map(pc).get("globalDefault") is True and (v := _value(pc)) is not None]
    return max(defaults) if defaults else DEFAULT_PRIORITY


def pod_priority(ds: Obj, *, priority_class: Callable[[str], Obj | None], global_default: int = 0) -> int:
    """The priority ``ds``'s pods get; see the module docstring for the order of sources."""
    spec = pod_spec(ds)
    name = text(spec.get("priorityClassName"))
    if name:
        value = _value(priority_class(name))
        if value is not None:
            return value
    explicit = spec.get("priority")
    if isinstance(explicit, int) and not isinstance(explicit, bool):
        return explicit
    return global_default
