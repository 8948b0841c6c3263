"""Per-resource write rules that kube-apiserver applies around every create and update.

These are the "registry strategies": what a create resets (a new DaemonSet's status, a new
pod's phase), which part of the object each of the main resource and the ``status``
subresource may change, when ``metadata.generation`` and a DaemonSet's template generation
move, and how long a deleted pod lingers. Storage calls them; they only reshape dicts and
never touch storage.
"""

from __future__ import annotations

from typing import Any

from dsctl_sim.registry import ResourceType

__all__ = [
    "DEFAULT_POD_GRACE_SECONDS",
    "TEMPLATE_GENERATION",
    "field_value",
    "graceful_seconds",
    "prepare_create",
    "prepare_status_update",
    "prepare_update",
    "spec_changed",
    "tracks_generation",
]

DEFAULT_POD_GRACE_SECONDS = 30
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"

Obj = dict[str, Any]

# Built-in kinds whose registry strategy maintains metadata.generation.
_GENERATION_KEYS = frozenset({"pods", "apps/daemonsets", "apiextensions.k8s.io/customresourcedefinitions",
                              "policy/poddisruptionbudgets"})
_METADATA_ONLY = frozenset({"metadata", "kind", "apiVersion"})


def field_value(obj: Obj, path: str) -> str | None:
    """The string value of a dotted field path, as field selectors compare it.

    Booleans read as ``true``/``false``; a missing field reads as None (matched as ``""``).
    The core Event field ``source`` means ``source.component``.
    """
    if path == "source":
        path = "source.component"
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
        if cur is None:
            return None
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (str, int, float)):
        return str(cur)
    return None


def tracks_generation(rt: ResourceType) -> bool:
    """Whether objects of this type carry ``metadata.generation``."""
    return not rt.builtin or rt.key in _GENERATION_KEYS


def _qos_class(spec: Obj) -> str:
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = (c or {}).get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            limit = limits.get(name)
            if limit is None or requests.get(name, limit) != limit:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_create(rt: ResourceType, obj: Obj) -> None:
    """Reset what a create may not set, in place (status of most types)."""
    key = rt.key
    if key == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj.get("spec") or {})}
    elif key == "apps/daemonsets":
        _set_template_generation(obj, max(1, _template_generation(obj) or 0))
        obj["status"] = {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }
    elif key == "namespaces":
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif key == "apiextensions.k8s.io/customresourcedefinitions":
        obj["status"] = {}
    elif key == "policy/poddisruptionbudgets":
        # The disruption controller fills it; until then nothing may be disrupted.
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    elif rt.has_status and not rt.builtin:
        obj.pop("status", None)


def prepare_update(rt: ResourceType, new: Obj, old: Obj) -> None:
    """Main-resource update: with a status subresource, status changes are dropped.

    DaemonSets also get their template generation from the server: the old value, plus one
    when ``spec.template`` changed, whatever the client sent.
    """
    if rt.has_status:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    if rt.key == "apps/daemonsets":
        generation = _template_generation(old) or 1
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
        _set_template_generation(new, generation)


def _template_generation(obj: Obj) -> int | None:
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _set_template_generation(obj: Obj, generation: int) -> None:
    # kube-apiserver keeps apps/v1's view of the internal spec.templateGeneration in this
    # annotation; pods carry it as the pod-template-generation label.
    meta = obj["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), TEMPLATE_GENERATION: str(generation)}


def prepare_status_update(rt: ResourceType, new: Obj, old: Obj) -> Obj:
    """Status-subresource update: the result is ``old`` with only ``status`` taken from ``new``.

    Metadata (labels, annotations, finalizers, owners) is kept from ``old``, as
    kube-apiserver's status strategies reset it.
    """
    out = dict(old)
    out["metadata"] = dict(old.get("metadata") or {})
    if "status" in new:
        out["status"] = new["status"]
    else:
        out.pop("status", None)
    return out


def spec_changed(rt: ResourceType, new: Obj, old: Obj) -> bool:
    """Whether an update changes what ``generation`` tracks: ``spec``, or all non-metadata."""
    if rt.has_status:
        return bool(new.get("spec") != old.get("spec"))
    keys = (set(new) | set(old)) - _METADATA_ONLY
    return any(new.get(k) != old.get(k) for k in keys)


def graceful_seconds(rt: ResourceType, obj: Obj, requested: int | None) -> int:
    """How long a delete of ``obj`` waits before removal; 0 means remove now.

    Only pods are graceful. An unscheduled or finished pod goes at once, as no kubelet
    needs to stop it; otherwise the request's grace period wins over the pod's own.
    """
    if rt.key != "pods":
        return 0
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, int(requested))
    own = spec.get("terminationGracePeriodSeconds")
    return DEFAULT_POD_GRACE_SECONDS if own is None else max(0, int(own))
