"""The daemon pod we create for a node, and how to read a pod's target node back.

``new_pod`` builds the complete pod body for ``POST /pods``: template metadata and spec,
the daemon tolerations (and the controller's ``extra_tolerations``, such as the readiness
taint's), the revision labels, a controller ownerReference, and placement.
Placement pins the pod with a required node-affinity term ``metadata.name In [node]`` that
replaces any required terms of the template (eligibility already evaluated them; preferred
terms are kept), and leaves ``spec.nodeName`` as the template has it: empty, so the scheduler
binds the pod, or naming this node (a template naming another node is never eligible), in which
case the pod is created bound, as kube-controller-manager creates it. Direct binding (for
clusters without a running scheduler) sets ``spec.nodeName`` on every pod.

``pod_factory`` builds the same pods for many nodes of one DaemonSet: everything but the
placement is worked out once, and each pod is a fresh copy of that. A cold start creates
thousands of pods from one template, and ``new_pod`` would work out the labels and tolerations
and copy the spec again for every node (``benchmarks/request_path.py`` compares the two).

``target_node`` is the inverse: the node a pod is for, whether bound yet or not.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from dsctl.daemonset.access import bound_node
from dsctl.daemonset.access import template as template_of
from dsctl.daemonset.tolerations import with_daemon_tolerations
from dsctl_api.objects import annotations_of, as_list, as_map, labels, name, namespace, spec, text, uid

__all__ = [
    "GENERATION_ANNOTATION",
    "GENERATION_LABEL",
    "HASH_LABEL",
    "TemplateError",
    "copy_json",
    "is_pod_updated",
    "new_pod",
    "node_name_affinity",
    "owner_reference",
    "pod_factory",
    "pods_prefix",
    "target_node",
    "template_generation",
]

HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"

_MAX_NAME = 253


class TemplateError(ValueError):
    """The DaemonSet's template cannot produce a valid pod (for example: no labels)."""


def template_generation(ds: Mapping[str, Any]) -> int | None:
    """The integer in the ``deprecated.daemonset.template.generation`` annotation, or None."""
    raw = annotations_of(ds).get(GENERATION_ANNOTATION)
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def is_pod_updated(pod: Mapping[str, Any], hash: str, generation: int | None) -> bool:
    """Whether ``pod`` runs the current template: its hash label, or its generation label, matches."""
    pod_labels = labels(pod)
    if hash and pod_labels.get(HASH_LABEL) == hash:
        return True
    return generation is not None and pod_labels.get(GENERATION_LABEL) == str(generation)


def owner_reference(
    ds: Mapping[str, Any], *, api_version: str | None = None, kind: str | None = None
) -> dict[str, Any]:
    """A controller ownerReference to ``ds``.

    Objects from list responses usually lack ``apiVersion``/``kind``; pass them explicitly
    in that case (CRD mode must, since the default is ``apps/v1 DaemonSet``).
    """
    return {
        "apiVersion": api_version or text(as_map(ds).get("apiVersion")) or "apps/v1",
        "kind": kind or text(as_map(ds).get("kind")) or "DaemonSet",
        "name": name(ds),
        "uid": uid(ds),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pods_prefix(ds_name: str) -> str:
    """``generateName`` for the DaemonSet's pods: ``<name>-``, or the bare name if that is too long."""
    prefix = f"{ds_name}-"
    return prefix if len(prefix) <= _MAX_NAME else ds_name


def node_name_affinity(affinity: Any, node_name: str) -> dict[str, Any]:
    """A copy of ``affinity`` whose required node terms are exactly ``metadata.name In [node]``."""
    result = dict(as_map(affinity))
    node_affinity = dict(as_map(result.get("nodeAffinity")))
    required = dict(as_map(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")))
    required["nodeSelectorTerms"] = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    ]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    result["nodeAffinity"] = node_affinity
    return result


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON tree (dicts, lists, strings, numbers, booleans, None).

    Several times faster than ``copy.deepcopy`` on such trees, which is all a decoded API
    object holds. Anything else inside is handed to ``copy.deepcopy``, so the result never
    shares a mutable part with ``value``.
    """
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) is str else copy_json(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) is str else copy_json(v) for v in value]
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value
    return copy.deepcopy(value)


def _unplaced_pod(
    ds: Mapping[str, Any], *, hash: str, api_version: str | None, kind: str | None,
    extra_tolerations: tuple[Mapping[str, Any], ...] = (),
) -> dict[str, Any]:
    """The pod for ``ds`` minus its placement; shares no structure with ``ds``."""
    template = template_of(ds)
    template_meta = as_map(template.get("metadata"))
    pod_labels = {str(k): str(v) for k, v in as_map(template_meta.get("labels")).items()}
    if not pod_labels:
        raise TemplateError(f"DaemonSet {namespace(ds)}/{name(ds)} has no template labels")
    generation = template_generation(ds)
    if generation is not None:
        pod_labels[GENERATION_LABEL] = str(generation)
    if hash:
        pod_labels[HASH_LABEL] = hash

    pod_meta: dict[str, Any] = {
        "generateName": pods_prefix(name(ds)),
        "namespace": namespace(ds),
        "labels": pod_labels,
        "ownerReferences": [owner_reference(ds, api_version=api_version, kind=kind)],
    }
    template_annotations = as_map(template_meta.get("annotations"))
    if template_annotations:
        pod_meta["annotations"] = copy_json(dict(template_annotations))
    finalizers = as_list(template_meta.get("finalizers"))
    if finalizers:
        pod_meta["finalizers"] = list(finalizers)

    pod_spec: dict[str, Any] = copy_json(dict(as_map(template.get("spec"))))
    pod_spec["tolerations"] = with_daemon_tolerations(pod_spec, extra=extra_tolerations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}


def _place(pod: dict[str, Any], node_name: str, *, direct_binding: bool) -> dict[str, Any]:
    """Pin ``pod`` (owned by the caller) to ``node_name``, in place; returns it."""
    pod_spec = pod["spec"]
    pod_spec["affinity"] = node_name_affinity(pod_spec.get("affinity"), node_name)
    if direct_binding:
        pod_spec["nodeName"] = node_name
    elif not pod_spec.get("nodeName"):
        pod_spec.pop("nodeName", None)
    # else: the template names this very node (eligibility refuses any other), and upstream
    # keeps it, so the pod is bound at creation even when its schedulerName runs nowhere.
    return pod


def new_pod(
    ds: Mapping[str, Any],
    node_name: str,
    *,
    hash: str,
    direct_binding: bool = False,
    api_version: str | None = None,
    kind: str | None = None,
    extra_tolerations: tuple[Mapping[str, Any], ...] = (),
) -> dict[str, Any]:
    """The pod to create for ``ds`` on ``node_name``; never shares structure with ``ds``.

    Raises ``TemplateError`` when the template has no labels, since such a pod could never
    be selected back by its DaemonSet.
    """
    pod = _unplaced_pod(ds, hash=hash, api_version=api_version, kind=kind, extra_tolerations=extra_tolerations)
    return _place(pod, node_name, direct_binding=direct_binding)


def pod_factory(
    ds: Mapping[str, Any],
    *,
    hash: str,
    direct_binding: bool = False,
    api_version: str | None = None,
    kind: str | None = None,
    extra_tolerations: tuple[Mapping[str, Any], ...] = (),
) -> Callable[[str], dict[str, Any]]:
    """``make(node_name)``, equal to ``new_pod(ds, node_name, ...)`` with these arguments.

    The template is read once, here: ``ds`` must not change while the factory is used (cached
    objects never do). Each pod made is a fresh object the caller owns. Raises
    ``TemplateError`` here, not per pod, when the template has no labels.
    """
    unplaced = _unplaced_pod(ds, hash=hash, api_version=api_version, kind=kind, extra_tolerations=extra_tolerations)

    def make(node_name: str) -> dict[str, Any]:
        return _place(copy_json(unplaced), node_name, direct_binding=direct_binding)

    return make


def target_node(pod: Mapping[str, Any]) -> str | None:
    """The node a pod is for: ``spec.nodeName``, else its single ``metadata.name In`` value.

    None when neither says (or the affinity names several nodes): such a pod is not a daemon
    pod of any particular node and planners skip it.
    """
    bound = bound_node(pod)
    if bound:
        return bound
    node_affinity = as_map(as_map(spec(pod).get("affinity")).get("nodeAffinity"))
    required = as_map(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    for term in as_list(required.get("nodeSelectorTerms")):
        for field in as_list(as_map(term).get("matchFields")):
            requirement = as_map(field)
            if requirement.get("key") == "metadata.name" and requirement.get("operator") == "In":
                values = as_list(requirement.get("values"))
                if len(values) != 1 or not isinstance(values[0], str) or not values[0]:
                    return None
                return values[0]
    return None
