"""An in-memory stand-in for the part of ``KubeClient`` the controller writes through.

Objects are kept by (resource label, namespace, name) and behave as an API server would for
the controller's purposes: ``create`` fills in ``generateName``, ``uid``, ``resourceVersion`` and
``creationTimestamp``; ``update`` is refused (Conflict) on a stale ``resourceVersion``; a
``delete`` with ``preconditions_uid`` is refused on another UID; a missing object is NotFound.
Errors are the real ``dsctl.kube.errors`` types, so the code under test takes the same
branches it takes against a server.

Every call is recorded in ``calls`` in order, failed ones included. ``fail`` makes a verb fail
for one resource, a number of ``times`` or for good, optionally only for calls a predicate
picks; a failing call changes nothing. Answers and stored objects are deep copies, so the
code under test can neither alter the store nor see later changes through an old answer.

Patches: ``merge`` is RFC 7386; ``strategic`` is applied as a merge patch (lists replaced, no
merge keys), enough for the metadata and image patches the controller sends; ``json`` is RFC 6902
(the ``jsonpatch`` library), and operations that do not apply (a failed ``test``) are refused
with 422 Invalid, as kube-apiserver refuses them. Watches are not offered: use ``dsctl.sim`` for those.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import jsonpatch
import jsonpointer
import orjson

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.encoded import Encoded
from dsctl.kube.resources import Resource
from dsctl_api.labels import parse_selector

__all__ = ["Call", "FakeClient", "merge_patch"]

VERBS = frozenset({"create", "get", "list", "update", "update_status", "patch", "delete"})

Key = tuple[str, str, str]
"""(resource label, namespace or "", name)."""


@dataclass(frozen=True)
class Call:
    """One client call as the code under test made it. ``body`` is a copy of what it sent."""

    verb: str
    resource: str
    namespace: str
    name: str
    body: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Fault:
    verb: str
    resource: str
    error: errors.ApiError
    times: int | None
    when: Callable[[Call], bool] | None

    def applies(self, call: Call) -> bool:
        return (self.verb == call.verb and self.resource == call.resource and self.times != 0
                and (self.when is None or self.when(call)))


def _wire(value: Any) -> Any:
    """``value`` as the server would receive and return it: through JSON (copies, and reads
    ``orjson.Fragment`` bodies such as revision data in Go's bytes, and ``Encoded`` bodies as
    the transport sends them)."""
    return orjson.loads(value.raw if isinstance(value, Encoded) else orjson.dumps(value))


def _wire_obj(value: Any) -> dict[str, Any]:
    """``_wire`` for an object."""
    out = _wire(value)
    assert isinstance(out, dict)
    return out


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge key by key, ``null`` removes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return _wire(patch)
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def _not_found(res: Resource, name: str) -> errors.NotFound:
    return errors.NotFound(404, "NotFound", f'{res.plural} "{name}" not found',
                           details={"name": name, "kind": res.plural})


class FakeClient:
    """In-memory ``KubeClient`` subset; see the module docstring. Hand it over with ``as_client()``."""

    def __init__(self) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self.calls: list[Call] = []
        self._faults: list[_Fault] = []
        self._rv = itertools.count(1)
        self._ids = itertools.count(1)

    def as_client(self) -> KubeClient:
        """This fake, typed as the client the code under test expects."""
        return cast(KubeClient, self)

    # -- test controls --------------------------------------------------------------------

    def fail(self, verb: str, res: Resource, error: errors.ApiError, *, times: int | None = 1,
             when: Callable[[Call], bool] | None = None) -> None:
        """Make ``verb`` on ``res`` raise ``error`` for the next ``times`` matching calls (None: always).

        ``when`` narrows the calls that fail (and count against ``times``). Faults are checked in
        the order they were added; the first that applies raises.
        """
        if verb not in VERBS:
            raise ValueError(f"unknown verb {verb!r}; one of {sorted(VERBS)}")
        self._faults.append(_Fault(verb, res.label, error, times, when))

    def put(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store ``obj`` as if created earlier, without recording a call; returns the stored copy."""
        stored = self._stamp(res, _wire(dict(obj)))
        meta = stored["metadata"]
        self.objects[(res.label, meta.get("namespace", ""), meta["name"])] = stored
        return _wire_obj(stored)

    def stored(self, res: Resource, name: str, namespace: str = "") -> dict[str, Any] | None:
        """The stored object, or None."""
        return self.objects.get((res.label, namespace if res.namespaced else "", name))

    def named(self, res: Resource, namespace: str = "") -> list[str]:
        """Names of the stored objects of ``res`` (in ``namespace`` when namespaced), sorted."""
        ns = namespace if res.namespaced else ""
        return sorted(name for (label, space, name) in self.objects if label == res.label and space == ns)

    def verbs(self, res: Resource | None = None) -> list[str]:
        """The verbs called so far, in order, optionally for one resource."""
        return [c.verb for c in self.calls if res is None or c.resource == res.label]

    # -- internals ------------------------------------------------------------------------

    def _record(self, verb: str, res: Resource, namespace: str | None, name: str, body: Any = None,
                **options: Any) -> Call:
        call = Call(verb, res.label, (namespace or "") if res.namespaced else "", name, _wire(body),
                    {k: v for k, v in options.items() if v is not None})
        self.calls.append(call)
        for fault in self._faults:
            if fault.applies(call):
                if fault.times is not None:
                    fault.times -= 1
                raise fault.error
        return call

    def _stamp(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise errors.Invalid(422, "Invalid", "name or generateName is required")
            meta["name"] = f"{prefix}{next(self._ids):05x}"
        meta.setdefault("uid", f"uid-{next(self._ids)}")
        meta.setdefault("creationTimestamp", "2026-12-01T00:00:00Z")
        meta["resourceVersion"] = str(next(self._rv))
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        return obj

    def _existing(self, call: Call, res: Resource) -> dict[str, Any]:
        found = self.objects.get((call.resource, call.namespace, call.name))
        if found is None:
            raise _not_found(res, call.name)
        return found

    def _replace(self, call: Call, res: Resource, body: Mapping[str, Any], *, status_only: bool) -> dict[str, Any]:
        current = self._existing(call, res)
        sent_rv = (body.get("metadata") or {}).get("resourceVersion")
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            raise errors.Conflict(409, "Conflict", f"the object {call.name} has been modified")
        if status_only:
            replaced = {**_wire(current), "status": _wire(body.get("status") or {})}
        else:
            replaced = {**_wire(dict(body)), "status": _wire(current.get("status") or {})}
            server_owned = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp")
            replaced["metadata"] = {**_wire(dict(body.get("metadata") or {})),
                                    **{k: current["metadata"][k] for k in server_owned if k in current["metadata"]}}
        replaced["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[(call.resource, call.namespace, call.name)] = replaced
        return _wire_obj(replaced)

    # -- the KubeClient surface -----------------------------------------------------------

    async def create(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None,
                     field_manager: str | None = None) -> dict[str, Any]:
        """Store a new object; AlreadyExists on a taken name."""
        meta = body.get("metadata") or {}
        ns = namespace if namespace is not None else str(meta.get("namespace") or "")
        call = self._record("create", res, ns, str(meta.get("name") or meta.get("generateName") or ""), body,
                            field_manager=field_manager)
        obj = _wire(dict(body))
        if res.namespaced:
            obj.setdefault("metadata", {})["namespace"] = call.namespace
        obj = self._stamp(res, obj)
        key = (call.resource, call.namespace, obj["metadata"]["name"])
        if key in self.objects:
            raise errors.AlreadyExists(409, "AlreadyExists", f'{res.plural} "{key[2]}" already exists')
        self.objects[key] = obj
        return _wire_obj(obj)

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """A copy of the stored object; NotFound when there is none."""
        call = self._record("get", res, namespace, name)
        return _wire_obj(self._existing(call, res))

    async def list(self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None,
                   **_: Any) -> dict[str, Any]:
        """Every stored object of ``res`` (in ``namespace`` if given) matching ``label_selector``."""
        call = self._record("list", res, namespace, "", label_selector=label_selector)
        selector = parse_selector(label_selector or "")
        items = [_wire(obj) for (label, space, _name), obj in sorted(self.objects.items())
                 if label == call.resource and (not call.namespace or space == call.namespace)
                 and selector.matches((obj.get("metadata") or {}).get("labels") or {})]
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "items": items,
                "metadata": {"resourceVersion": str(next(self._rv))}}

    async def update(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        """Replace spec and metadata; status is kept. Conflict on a stale resourceVersion."""
        meta = body.get("metadata") or {}
        call = self._record("update", res, namespace if namespace is not None else meta.get("namespace"),
                            str(meta.get("name") or ""), body)
        return self._replace(call, res, body, status_only=False)

    async def update_status(self, res: Resource, body: Mapping[str, Any], *,
                            namespace: str | None = None) -> dict[str, Any]:
        """Replace the status only. Conflict on a stale resourceVersion."""
        meta = body.get("metadata") or {}
        call = self._record("update_status", res, namespace if namespace is not None else meta.get("namespace"),
                            str(meta.get("name") or ""), body)
        return self._replace(call, res, body, status_only=True)

    async def patch(self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
                    patch_type: str = "merge", subresource: str | None = None,
                    field_manager: str | None = None) -> dict[str, Any]:
        """Apply a merge (or, approximately, strategic merge) or JSON patch; NotFound when missing."""
        call = self._record("patch", res, namespace, name, body, patch_type=patch_type, subresource=subresource,
                            field_manager=field_manager)
        current = self._existing(call, res)
        if patch_type == "json":
            try:
                patched = jsonpatch.apply_patch(current, body)
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
                raise errors.Invalid(422, "Invalid", "the server rejected our request due to an error in our "
                                                     f"request ({exc})") from None
        else:
            patched = merge_patch(current, body)
        patched["metadata"] = {**patched.get("metadata", {}), "name": name, "uid": current["metadata"]["uid"],
                               "resourceVersion": str(next(self._rv))}
        self.objects[(call.resource, call.namespace, name)] = patched
        return _wire_obj(patched)

    async def delete(self, res: Resource, name: str, *, namespace: str | None = None,
                     preconditions_uid: str | None = None, preconditions_resource_version: str | None = None,
                     propagation_policy: str | None = None, grace_period_seconds: int | None = None,
                     retry_server_errors: bool = True) -> dict[str, Any]:
        """Remove the object at once (no graceful deletion); Conflict when a precondition fails."""
        call = self._record("delete", res, namespace, name, preconditions_uid=preconditions_uid,
                            preconditions_resource_version=preconditions_resource_version,
                            propagation_policy=propagation_policy, grace_period_seconds=grace_period_seconds,
                            retry_server_errors=retry_server_errors)
        current = self._existing(call, res)
        meta = current["metadata"]
        if preconditions_uid and preconditions_uid != meta["uid"]:
            raise errors.Conflict(409, "Conflict", f"Precondition failed: UID in precondition: {preconditions_uid}, "
                                                   f"UID in object meta: {meta['uid']}")
        if preconditions_resource_version and preconditions_resource_version != meta["resourceVersion"]:
            raise errors.Conflict(409, "Conflict", "Precondition failed: resourceVersion")
        del self.objects[(call.resource, call.namespace, name)]
        return _wire_obj(current)
