"""Discovery and OpenAPI URLs mapped onto the document builders in ``dsctl_sim.discovery``.

kubectl asks ``/api`` and ``/apis`` on every command. When its ``Accept`` header asks for
aggregated discovery (``as=APIGroupDiscoveryList``) both are answered in that form and
kubectl needs nothing more; otherwise the legacy ``APIVersions``/``APIGroupList`` are served
and kubectl fetches each group-version's resource list. ``apply`` also fetches
``/openapi/v3`` and one group-version document, and ``/openapi/v2`` (as protobuf) when it
patches an existing object. Documents are built from the live
``Registry``, so CRD types appear as soon as they are registered; this module only decides
which builder a path needs.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from dsctl_sim import discovery
from dsctl_sim.registry import Registry

__all__ = ["serve"]


def _json(data: Any, *, content_type: str = "application/json") -> web.Response:
    resp = web.Response(body=orjson.dumps(data))
    resp.headers["Content-Type"] = content_type
    return resp


def _served(registry: Registry, group: str, version: str) -> bool:
    return any(rt.group == group and v == version for rt, v in registry.served())


def _wants_aggregated(request: web.BaseRequest) -> bool:
    accept = request.headers.get("Accept", "")
    first = accept.split(",")[0]
    return "as=APIGroupDiscoveryList" in first and "g=apidiscovery.k8s.io" in first


def serve(request: web.BaseRequest, registry: Registry, parts: list[str]) -> web.Response | None:
    """The discovery or OpenAPI response for ``parts`` (the split path), or None if not one."""
    head = parts[0] if parts else ""
    types = list(registry)
    if head in ("api", "apis") and len(parts) == 1 and _wants_aggregated(request):
        doc = discovery.aggregated_discovery(types, core=head == "api")
        return _json(doc, content_type=discovery.AGGREGATED_CONTENT_TYPE)
    if head == "api":
        if len(parts) == 1:
            return _json(discovery.api_versions())
        if len(parts) == 2 and _served(registry, "", parts[1]):
            return _json(discovery.api_resource_list(types, "", parts[1]))
        return None
    if head == "apis":
        if len(parts) == 1:
            return _json(discovery.api_group_list(types))
        if len(parts) == 2:
            group = discovery.api_group(types, parts[1])
            return None if group is None else _json(group)
        if len(parts) == 3 and _served(registry, parts[1], parts[2]):
            return _json(discovery.api_resource_list(types, parts[1], parts[2]))
        return None
    if head == "openapi" and parts[1:] == ["v2"]:
        doc = discovery.openapi_v2_doc(types)
        if discovery.wants_protobuf(request.headers.get("Accept", "")):
            resp = web.Response(body=discovery.openapi_v2_protobuf(doc))
            resp.headers["Content-Type"] = discovery.OPENAPI_V2_PROTOBUF
            return resp
        return _json(doc)
    if head == "openapi" and len(parts) >= 2 and parts[1] == "v3":
        rest = parts[2:]
        if not rest:
            return _json(discovery.openapi_v3_root(types))
        if rest[0] == "api" and len(rest) == 2 and _served(registry, "", rest[1]):
            return _json(discovery.openapi_v3_doc(types, "", rest[1]))
        if rest[0] == "apis" and len(rest) == 3 and _served(registry, rest[1], rest[2]):
            return _json(discovery.openapi_v3_doc(types, rest[1], rest[2]))
    return None
