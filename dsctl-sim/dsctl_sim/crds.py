"""CustomResourceDefinitions: a stored CRD becomes a served resource type, and back.

A storage listener on ``customresourcedefinitions`` does what kube-apiserver's CRD
controllers do, synchronously: a new or changed CRD registers a ``ResourceType`` built
from its names, scope, versions and status subresource, and gets the ``NamesAccepted`` and
``Established`` conditions; a deleted CRD unregisters its type, which deletes every
custom object of that type (with DELETED events) and ends its watches.

The type carries the storage version's ``openAPIV3Schema``, compiled (``CustomSchema``):
custom resources are validated against it, ``x-kubernetes-validations`` CEL rules
included, and ``/openapi/v3`` serves it, so ``kubectl explain`` works.

A CRD whose names collide with a served built-in, or whose name is not ``<plural>.<group>``,
is stored but not served, with ``NamesAccepted=False`` explaining why.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import structlog

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.errors import StorageError
from dsctl_sim.registry import ResourceType
from dsctl_sim.storage import Storage
from dsctl_sim.validation.crschema import CustomSchema, RuleError
from dsctl_sim.watch import WatchEvent

__all__ = ["CRD_KEY", "install_crd_controller", "printer_columns", "resource_type_for"]

log = structlog.get_logger(__name__)

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"

Obj = dict[str, Any]


def resource_type_for(crd: Obj) -> ResourceType:
    """The type a CRD defines; ``ValueError`` says what is wrong with it."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    if not group or not plural or not kind:
        raise ValueError("spec.group, spec.names.plural and spec.names.kind are required")
    if crd["metadata"]["name"] != f"{plural}.{group}":
        raise ValueError(f'metadata.name must be "{plural}.{group}"')
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served", True)]
    if not versions:
        raise ValueError("spec.versions must contain at least one served version")
    stored = next((v for v in versions if v.get("storage")), versions[0])
    others = tuple(str(v["name"]) for v in versions if v is not stored)
    subresources = stored.get("subresources") or {}
    openapi = (stored.get("schema") or {}).get("openAPIV3Schema")
    try:
        schema = CustomSchema(openapi) if isinstance(openapi, dict) else None
    except RuleError as err:
        raise ValueError(f"spec.versions[{stored['name']}].schema: {err}") from err
    return ResourceType(
        group=str(group),
        version=str(stored["name"]),
        kind=str(kind),
        plural=str(plural),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        list_kind=str(names.get("listKind") or f"{kind}List"),
        short_names=tuple(str(s) for s in names.get("shortNames") or ()),
        has_status="status" in subresources,
        singular=str(names.get("singular") or str(kind).lower()),
        categories=tuple(str(c) for c in names.get("categories") or ()),
        builtin=False,
        extra_versions=others,
        schema=schema,
    )


def printer_columns(storage: Storage, rt: ResourceType) -> list[Obj] | None:
    """The ``additionalPrinterColumns`` of the CRD version serving ``rt`` (None for built-ins)."""
    if rt.builtin:
        return None
    crd = storage.get(CRD_KEY, None, f"{rt.plural}.{rt.group}")
    if crd is None:
        return None
    for version in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(version, dict) and version.get("name") == rt.version:
            columns = version.get("additionalPrinterColumns")
            return list(columns) if isinstance(columns, list) else None
    return None


def _conditions(old: list[Obj], wanted: list[tuple[str, str, str, str]], stamp: str) -> list[Obj]:
    by_type = {c.get("type"): c for c in old}
    out = []
    for kind, status, reason, message in wanted:
        prev = by_type.get(kind)
        when = prev["lastTransitionTime"] if prev and prev.get("status") == status else stamp
        out.append({"type": kind, "status": status, "lastTransitionTime": when, "reason": reason,
                    "message": message})
    return out


def _set_status(storage: Storage, crd: Obj, status: Obj) -> None:
    if crd.get("status") == status:
        return
    new = copy.copy(crd)
    new["status"] = status
    try:
        storage.update(CRD_KEY, new, subresource="status")
    except StorageError as err:
        log.warning("sim_crd_status_failed", crd=crd["metadata"]["name"], error=str(err))


def _reconcile(storage: Storage, crd: Obj, served: dict[str, str]) -> None:
    name = crd["metadata"]["name"]
    stamp = format_rfc3339(storage.now())
    old_conditions = list((crd.get("status") or {}).get("conditions") or [])
    spec = crd.get("spec") or {}
    try:
        rt = resource_type_for(crd)
        existing = storage.registry.get(rt.key)
        if existing is not None and served.get(rt.key) != name:
            raise ValueError(f"{rt.group_resource} is already served by another definition")
    except ValueError as err:
        status = {
            "conditions": _conditions(old_conditions, [
                ("NamesAccepted", "False", "InvalidNames", str(err)),
                ("Established", "False", "NotAccepted", "not all names are accepted"),
            ], stamp),
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": [],
        }
        _set_status(storage, crd, status)
        return
    for key, owner in list(served.items()):
        if owner == name and key != rt.key:
            del served[key]
            storage.unregister_type(key)
    if storage.registry.get(rt.key) != rt:
        storage.register_type(rt)
        served[rt.key] = name
        log.info("sim_crd_registered", crd=name, key=rt.key, version=rt.version)
    status = {
        "conditions": _conditions(old_conditions, [
            ("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            ("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        ], stamp),
        "acceptedNames": dict(spec.get("names") or {}),
        "storedVersions": [rt.version],
    }
    _set_status(storage, crd, status)


def install_crd_controller(storage: Storage) -> Callable[[], None]:
    """Start serving stored CRDs and follow their changes; returns the uninstaller."""
    served: dict[str, str] = {}

    def on_change(ev: WatchEvent) -> None:
        crd = ev.object
        name = crd["metadata"]["name"]
        if ev.type == "DELETED":
            for key, owner in list(served.items()):
                if owner == name:
                    del served[key]
                    storage.unregister_type(key)
                    log.info("sim_crd_unregistered", crd=name, key=key)
            return
        current = storage.get(CRD_KEY, None, name)
        if current is not None:
            _reconcile(storage, current, served)

    for crd in storage.list(CRD_KEY)[0]:
        _reconcile(storage, crd, served)
    return storage.add_listener(CRD_KEY, on_change)
