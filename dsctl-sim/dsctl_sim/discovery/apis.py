"""Discovery documents: ``/api``, ``/apis``, ``/api/v1``, ``/apis/<g>/<v>`` and aggregated v2.

kubectl reads these on every command to map ``ds`` → ``daemonsets.apps/v1``. Both formats are
offered: the legacy ``APIVersions``/``APIGroupList``/``APIResourceList`` trio, and the
aggregated ``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList`` that lets kubectl skip the
per-group-version requests. Everything is built from the served resource types, duck-typed:
any object with ``group``, ``version``, ``kind``, ``plural``, ``namespaced``, ``short_names``
and ``has_status`` works; ``versions``, ``singular``, ``verbs``, ``categories`` and
``subresources`` are used when present.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "AGGREGATED_CONTENT_TYPE",
    "ALL_VERBS",
    "aggregated_discovery",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "served_versions",
    "version_priority",
]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

# kube-apiserver lists groups by priority, not alphabetically; kubectl resolves an ambiguous
# plural (``events``) to the first group that serves it, and core always comes first.
_GROUP_ORDER = ("apps", "events.k8s.io", "policy", "rbac.authorization.k8s.io", "scheduling.k8s.io",
                "coordination.k8s.io", "apiextensions.k8s.io")

# (verbs, kind override, (group, version) of that kind) for subresources the simulator serves.
_SUBRESOURCES: dict[str, tuple[tuple[str, ...], str | None, tuple[str, str] | None]] = {
    "status": (("get", "patch", "update"), None, None),
    "binding": (("create",), "Binding", None),
    "finalize": (("update",), None, None),
    "eviction": (("create",), "Eviction", ("policy", "v1")),
    "log": (("get",), None, None),
    "scale": (("get", "patch", "update"), "Scale", ("autoscaling", "v1")),
}

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting the preferred version first: GA > beta > alpha, higher numbers first."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def served_versions(rt: Any) -> tuple[str, ...]:
    """Every version a resource type is served at."""
    versions = getattr(rt, "versions", None)
    return tuple(versions) if versions else (rt.version,)


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def api_versions(*, server_address: str | None = None) -> dict[str, Any]:
    """``GET /api``: the core group's versions."""
    body: dict[str, Any] = {"kind": "APIVersions", "versions": ["v1"]}
    if server_address:
        body["serverAddressByClientCIDRs"] = [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    return body


def _groups(resources: Iterable[Any]) -> dict[str, list[str]]:
    """Non-core groups with their versions, preferred version first, in apiserver order."""
    found: dict[str, set[str]] = {}
    for rt in resources:
        if rt.group:
            found.setdefault(rt.group, set()).update(served_versions(rt))

    def order(name: str) -> tuple[int, str]:
        return (_GROUP_ORDER.index(name) if name in _GROUP_ORDER else len(_GROUP_ORDER), name)

    return {name: sorted(found[name], key=version_priority) for name in sorted(found, key=order)}


def _group_entry(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(resources: Iterable[Any]) -> dict[str, Any]:
    """``GET /apis``: every non-core group and its versions."""
    groups = [_group_entry(name, versions) for name, versions in _groups(resources).items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(resources: Iterable[Any], group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>``, or None when the group is not served."""
    versions = _groups(resources).get(group)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def _subresource_names(rt: Any) -> list[str]:
    names = list(getattr(rt, "subresources", ()) or ())
    if getattr(rt, "has_status", False) and "status" not in names:
        names.insert(0, "status")
    return names


def _subresource(rt: Any, name: str, version: str) -> tuple[list[str], str, str, str]:
    """(verbs, kind, group, version) of one subresource."""
    verbs, kind, gv = _SUBRESOURCES.get(name, (("get",), None, None))
    group, sub_version = gv if gv else (rt.group, version)
    return list(verbs), kind or rt.kind, group, sub_version


def api_resource_list(resources: Iterable[Any], group: str, version: str) -> dict[str, Any]:
    """``GET /api/v1`` or ``GET /apis/<group>/<version>``: resources with verbs and short names."""
    entries: list[dict[str, Any]] = []
    for rt in resources:
        if rt.group != group or version not in served_versions(rt):
            continue
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": getattr(rt, "singular", "") or rt.kind.lower(),
            "namespaced": bool(rt.namespaced),
            "kind": rt.kind,
            "verbs": sorted(getattr(rt, "verbs", ALL_VERBS) or ALL_VERBS),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        categories = list(getattr(rt, "categories", ()) or ())
        if categories:
            entry["categories"] = categories
        entries.append(entry)
        for name in _subresource_names(rt):
            verbs, kind, sub_group, sub_version = _subresource(rt, name, version)
            sub: dict[str, Any] = {
                "name": f"{rt.plural}/{name}",
                "singularName": "",
                "namespaced": bool(rt.namespaced),
                "kind": kind,
                "verbs": verbs,
            }
            if sub_group != rt.group:
                sub["group"], sub["version"] = sub_group, sub_version
            entries.append(sub)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": _group_version(group, version),
        "resources": entries,
    }


def _aggregated_resource(rt: Any, version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": getattr(rt, "singular", "") or rt.kind.lower(),
        "verbs": sorted(getattr(rt, "verbs", ALL_VERBS) or ALL_VERBS),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    categories = list(getattr(rt, "categories", ()) or ())
    if categories:
        entry["categories"] = categories
    subresources = []
    for name in _subresource_names(rt):
        verbs, kind, sub_group, sub_version = _subresource(rt, name, version)
        subresources.append(
            {
                "subresource": name,
                "responseKind": {"group": sub_group, "version": sub_version, "kind": kind},
                "verbs": verbs,
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated_discovery(resources: Iterable[Any], *, core: bool) -> dict[str, Any]:
    """Aggregated discovery (``apidiscovery.k8s.io/v2``) for ``/api`` (``core``) or ``/apis``.

    Serve it with ``Content-Type: AGGREGATED_CONTENT_TYPE`` when the request's ``Accept``
    asks for ``as=APIGroupDiscoveryList``; kubectl then skips the per-version lists.
    """
    types = list(resources)
    if core:
        names: dict[str, list[str]] = {"": ["v1"]}
    else:
        names = _groups(types)
    items = []
    for group, versions in names.items():
        version_entries = []
        for version in versions:
            resources_here = [
                _aggregated_resource(rt, version)
                for rt in types
                if rt.group == group and version in served_versions(rt)
            ]
            version_entries.append({"version": version, "resources": resources_here, "freshness": "Current"})
        items.append({"metadata": {"name": group}, "versions": version_entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}
