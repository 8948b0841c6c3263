"""``validate``: route an object to the metadata rules and its type's rules by storage key.

Each storage key names a name rule (most objects are DNS subdomains, namespaces are DNS
labels), a scope (so cluster-scoped objects refuse a namespace) and the type validator. Keys
not listed (custom resources) get the metadata checks only, as kube-apiserver validates a
custom resource's body against its CRD schema, which the simulator does not enforce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dsctl_sim.disruption import validate_pdb
from dsctl_sim.priorityclasses import PRIORITY_CLASSES, validate_priority_class
from dsctl_sim.validation.causes import Causes, check_dns_label, check_dns_subdomain
from dsctl_sim.validation.cluster import (
    validate_core_event,
    validate_crd,
    validate_lease,
    validate_namespace,
    validate_new_event,
    validate_node,
)
from dsctl_sim.validation.meta import NameCheck, validate_meta, validate_meta_update
from dsctl_sim.validation.workloads import (
    validate_controller_revision,
    validate_daemonset,
    validate_daemonset_status,
    validate_pod,
)

__all__ = ["validate"]

Obj = Mapping[str, Any]
TypeCheck = Callable[[Causes, Obj, Obj | None], None]


@dataclass(frozen=True, slots=True)
class _Rules:
    namespaced: bool
    check: TypeCheck | None = None
    name_check: NameCheck = check_dns_subdomain


def _path_segment(value: str) -> list[str]:
    """RBAC names (``system:controller:x``): anything that is a safe URL path segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in value]


def _ignoring_old(check: Callable[[Causes, Obj], None]) -> TypeCheck:
    def run(causes: Causes, obj: Obj, old: Obj | None) -> None:
        check(causes, obj)

    return run


_RULES: dict[str, _Rules] = {
    "pods": _Rules(True, validate_pod),
    "nodes": _Rules(False, validate_node),
    "namespaces": _Rules(False, _ignoring_old(validate_namespace), check_dns_label),
    "events": _Rules(True, _ignoring_old(validate_core_event)),
    "events.k8s.io/events": _Rules(True, _ignoring_old(validate_new_event)),
    "apps/daemonsets": _Rules(True, validate_daemonset),
    "apps/controllerrevisions": _Rules(True, validate_controller_revision),
    "coordination.k8s.io/leases": _Rules(True, _ignoring_old(validate_lease)),
    "apiextensions.k8s.io/customresourcedefinitions": _Rules(False, validate_crd),
    "policy/poddisruptionbudgets": _Rules(True, validate_pdb),
    PRIORITY_CLASSES: _Rules(False, validate_priority_class),
    # Stored without behaviour (``registry.STORED_ONLY``): scope and name rules only.
    "serviceaccounts": _Rules(True),
    "services": _Rules(True, name_check=check_dns_label),
    "apps/deployments": _Rules(True),
    "rbac.authorization.k8s.io/clusterroles": _Rules(False, name_check=_path_segment),
    "rbac.authorization.k8s.io/clusterrolebindings": _Rules(False, name_check=_path_segment),
    "rbac.authorization.k8s.io/roles": _Rules(True, name_check=_path_segment),
    "rbac.authorization.k8s.io/rolebindings": _Rules(True, name_check=_path_segment),
}

_STATUS_RULES: dict[str, Callable[[Causes, Obj], None]] = {
    "apps/daemonsets": validate_daemonset_status,
}


def validate(key: str, obj: Obj, old: Obj | None, *, subresource: str | None = None) -> list[dict[str, str]]:
    """The causes for which kube-apiserver would reject this write; empty when valid.

    ``key`` is the storage key (``"apps/daemonsets"``); ``old`` is the stored object on
    update, None on create. ``subresource="status"`` checks only what a status write may
    break; ``"binding"`` skips the pod-spec immutability rule (binding sets ``nodeName``).
    """
    causes = Causes()
    if not isinstance(obj, Mapping):
        causes.invalid("", obj, "the object must be a JSON object")
        return causes
    if subresource == "status":
        status_check = _STATUS_RULES.get(key)
        if status_check is not None:
            status_check(causes, obj)
        return list(causes)
    rules = _RULES.get(key)
    validate_meta(
        causes,
        obj,
        name_check=rules.name_check if rules else check_dns_subdomain,
        namespaced=rules.namespaced if rules else None,
    )
    if old is not None:
        validate_meta_update(causes, obj, old)
    if rules is not None and rules.check is not None:
        rules.check(causes, obj, None if subresource == "binding" else old)
    return list(causes)
