"""URL and method → which resource, which object, which verb (kube-apiserver's RequestInfo).

Paths have the shapes

- ``/api/v1/<plural>[/<name>[/<subresource>]]`` and ``/apis/<group>/<version>/...``;
- ``.../namespaces/<ns>/<plural>[/<name>[/<subresource>]]`` for namespaced types;
- ``/api/v1/namespaces/<name>[/status]`` for namespaces themselves.

The verb follows the method plus whether a name is present: GET is get, list or (with
``watch=true``) watch; DELETE without a name is deletecollection.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsctl_sim.errors import MethodNotAllowed, NotFound
from dsctl_sim.registry import Registry, ResourceType

__all__ = ["RequestInfo", "parse_resource_path", "verb_for"]

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """A resource request, resolved. ``namespace`` is None for cluster scope or all namespaces."""

    rt: ResourceType
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None
    verb: str

    @property
    def resource(self) -> str:
        """``plural`` or ``plural/subresource``, as RBAC and the request log name it."""
        return f"{self.rt.plural}/{self.subresource}" if self.subresource else self.rt.plural


def _is_watch(query_watch: str | None) -> bool:
    return (query_watch or "").lower() in ("true", "1")


def verb_for(method: str, *, name: str | None, watch: str | None) -> str:
    """The API verb for an HTTP method on a collection (``name`` None) or an object."""
    if method in ("GET", "HEAD"):
        if _is_watch(watch):
            return "watch"
        return "get" if name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    raise MethodNotAllowed(f"method {method} is not supported")


def parse_resource_path(
    registry: Registry, parts: list[str], *, method: str, watch: str | None
) -> RequestInfo:
    """Resolve path segments after ``/api`` or ``/apis`` (e.g. ``["v1", "pods"]``).

    ``parts`` starts at the version for the core group and at the group otherwise; the
    caller passes ``["", "v1", ...]`` for ``/api`` so both shapes line up as group, version.
    """
    if len(parts) < 3:
        raise NotFound("the server could not find the requested resource")
    group, version, rest = parts[0], parts[1], parts[2:]
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0]
    rt = registry.lookup(group, version, plural)
    if rt is None:
        raise NotFound("the server could not find the requested resource")
    name = rest[1] if len(rest) >= 2 and rest[1] else None
    subresource = rest[2] if len(rest) >= 3 else None
    if len(rest) > 3:
        raise NotFound("the server could not find the requested resource")
    if namespace is not None and not rt.namespaced:
        raise NotFound("the server could not find the requested resource")
    if rt.namespaced and name is not None and namespace is None:
        raise NotFound("the server could not find the requested resource")
    if subresource is not None and subresource not in rt.subresources:
        raise NotFound("the server could not find the requested resource")
    verb = verb_for(method, name=name, watch=watch)
    if subresource in ("binding", "eviction") and verb != "create":
        raise MethodNotAllowed(f"{verb} is not supported on pods/{subresource}")
    if name is None and verb in ("create",) and namespace is None and rt.namespaced:
        raise NotFound("the server could not find the requested resource")
    return RequestInfo(rt, version, namespace, name, subresource, verb)
