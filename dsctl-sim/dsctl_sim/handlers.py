"""Resource verbs over HTTP: get, list, watch, create, update, patch, delete, deletecollection.

Each handler turns an already-routed request (``RequestInfo``) into storage calls and a
response. Request bodies go through defaulting and validation (``semantics.admit``) before
storage sees them; errors are raised as ``StorageError`` and rendered by the server's
request wrapper. Before that, every create, update and patch (status writes included) decodes
its object the way the request's ``fieldValidation`` asks (``fieldvalidation``): unknown
fields fail the write, or are dropped with or without a ``Warning`` header. Responses reuse
each object's cached JSON whenever no Table is wanted. ``dryRun=All`` runs defaulting,
validation and conflict checks but stores nothing.
"""

from __future__ import annotations

from typing import Any

import orjson
import structlog
from aiohttp import web

from dsctl_api.fields import FieldSelector, FieldSelectorError, parse_field_selector
from dsctl_api.labels import Selector, SelectorError, parse_selector
from dsctl_sim import rawdata, semantics
from dsctl_sim.apiwarnings import add_warnings
from dsctl_sim.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Gone,
    MethodNotAllowed,
    NotFound,
    UnsupportedMediaType,
)
from dsctl_sim.eviction import evict
from dsctl_sim.fieldvalidation import PatchSource, check_declared_fields, field_validation
from dsctl_sim.listing import continue_expired, list_body, list_chunks
from dsctl_sim.protobuf import ProtobufError, decode_delete_options, decode_object
from dsctl_sim.routing import RequestInfo
from dsctl_sim.state import ApiState
from dsctl_sim.watchstream import WatchOptions, serve_watch

__all__ = ["handle_resource", "json_response", "wants_table"]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
_JSON = "application/json"
_STREAM_LIST_ABOVE = 2000  # objects; larger lists are sent in chunks


def json_response(body: bytes | Obj, *, status: int = 200) -> web.Response:
    """A JSON response from bytes or a dict (encoded with orjson)."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return web.Response(body=data, status=status, content_type=_JSON)


def wants_table(request: web.BaseRequest) -> bool:
    """Whether the Accept header asks for a ``meta.k8s.io`` Table first."""
    accept = request.headers.get("Accept", "")
    first = accept.split(",")[0]
    return "as=Table" in first and "g=meta.k8s.io" in first


def _selectors(query: Any) -> tuple[Selector | None, FieldSelector | None]:
    try:
        labels = parse_selector(query["labelSelector"]) if query.get("labelSelector") else None
        fields = parse_field_selector(query["fieldSelector"]) if query.get("fieldSelector") else None
    except (SelectorError, FieldSelectorError) as err:
        raise BadRequest(f"unable to parse requirement: {err}") from err
    return labels, fields


async def _body(request: web.BaseRequest) -> Obj:
    ctype = request.content_type or _JSON
    raw = await request.read()
    try:
        if "protobuf" in ctype:
            data: Any = decode_object(raw)
        elif "yaml" in ctype:
            import yaml

            data = yaml.safe_load(raw)
        else:
            data = orjson.loads(raw)
    except ProtobufError as err:
        raise UnsupportedMediaType(f"the body of the request was in an unsupported protobuf form ({err}); "
                                   "accepted media types include: application/json") from err
    except Exception as err:
        raise BadRequest(f"the body of the request could not be decoded: {err}") from err
    if not isinstance(data, dict):
        raise BadRequest("the body of the request must be a JSON object")
    return data


def _int_param(query: Any, name: str) -> int | None:
    text = query.get(name)
    if text in (None, ""):
        return None
    try:
        return int(text)
    except ValueError as err:
        raise BadRequest(f"invalid {name} {text!r}") from err


async def handle_resource(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.StreamResponse:
    """Serve one routed resource request."""
    verb = info.verb
    if verb == "get":
        return _get(request, state, info)
    if verb == "list":
        return await _list(request, state, info)
    if verb == "watch":
        labels, fields = _selectors(request.query)
        if info.name is not None:
            # The old single-object form (.../pods/x?watch=true) is a watch narrowed by name.
            pinned = (("metadata.name", "=", info.name),)
            fields = FieldSelector(pinned + (fields.requirements if fields else ()))
        opts = WatchOptions.parse(request.query, state=state, table=wants_table(request))
        return await serve_watch(request, state, info, labels=labels, fields=fields, opts=opts)
    if verb == "create":
        return await _create(request, state, info)
    if verb == "update":
        return await _update(request, state, info)
    if verb == "patch":
        return await _patch(request, state, info)
    if verb == "delete":
        return await _delete(request, state, info)
    if verb == "deletecollection":
        return await _delete_collection(request, state, info)
    raise MethodNotAllowed(f"verb {verb} is not supported")


def _respond_obj(request: web.BaseRequest, state: ApiState, info: RequestInfo, obj: Obj,
                 *, status: int = 200) -> web.Response:
    if wants_table(request):
        table = semantics.render_table(request.query, state.storage, info.rt, [obj], state.now())
        return json_response(table, status=status)
    meta = obj.get("metadata") or {}
    doc = state.storage.get_doc(info.rt.key, meta.get("namespace"), str(meta.get("name", "")))
    if doc is not None and doc.obj is obj:
        # Encode through the stored version's cache: later lists and watch events reuse it.
        return json_response(doc.raw, status=status)
    return json_response(obj, status=status)


def _get(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.Response:
    assert info.name is not None
    doc = state.storage.get_doc(info.rt.key, info.namespace, info.name)
    if doc is None:
        raise NotFound.object(plural=info.rt.plural, group=info.rt.group, name=info.name)
    if wants_table(request):
        return json_response(semantics.render_table(request.query, state.storage, info.rt, [doc.obj], state.now()))
    return json_response(doc.raw)


async def _list(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.StreamResponse:
    query = request.query
    labels, fields = _selectors(query)
    storage = state.storage
    key = info.rt.key
    limit = _int_param(query, "limit") or 0
    token = query.get("continue", "")
    scope = f"{key}|{info.namespace}|{query.get('labelSelector', '')}|{query.get('fieldSelector', '')}"

    def relist() -> tuple[list[Any], int]:
        return storage.list_docs(key, namespace=info.namespace, label_selector=labels, field_selector=fields)

    if token:
        if state.faults.take_compact_before_continue():
            storage.compact()
            state.paginator.compact()
            raise continue_expired(token)
        page = state.paginator.next(token, limit=limit, scope=scope, relist=relist)
    else:
        rv_text = query.get("resourceVersion", "")
        if query.get("resourceVersionMatch") == "Exact" and rv_text and int(rv_text) != storage.resource_version:
            raise Gone(f"too old resource version: {rv_text} ({storage.resource_version})")
        docs, rv = relist()
        page = state.paginator.first(docs, rv, limit=limit, scope=scope)
    if wants_table(request):
        table = semantics.render_table(request.query, state.storage, info.rt, [d.obj for d in page.docs],
                                       state.now())
        meta: Obj = {"resourceVersion": str(page.rv)}
        if page.token:
            meta["continue"] = page.token
            meta["remainingItemCount"] = page.remaining
        table["metadata"] = meta
        return json_response(table)
    if len(page.docs) <= _STREAM_LIST_ABOVE:
        return json_response(list_body(kind=info.rt.list_kind, api_version=info.rt.api_version, page=page))
    resp = web.StreamResponse(status=200)
    resp.content_type = _JSON
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    for piece in list_chunks(kind=info.rt.list_kind, api_version=info.rt.api_version, page=page):
        await resp.write(piece)
    await resp.write_eof()
    return resp


def _check_identity(info: RequestInfo, obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise BadRequest("metadata must be an object")
    if info.name is not None and meta.get("name") not in (None, "", info.name):
        raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the name on "
                         f"the URL ({info.name})")
    if info.name is not None:
        meta["name"] = info.name
    body_ns = meta.get("namespace")
    if info.rt.namespaced and info.namespace and body_ns not in (None, "", info.namespace):
        raise BadRequest("the namespace of the provided object does not match the namespace sent on the request")
    if info.rt.namespaced and info.namespace:
        meta["namespace"] = info.namespace
    return meta


def _decode_fields(request: web.BaseRequest, info: RequestInfo, obj: Obj, mode: str, *,
                   patch: PatchSource | None = None) -> None:
    """The one field-validation step of every write: reject, or drop and maybe warn."""
    checked = check_declared_fields(info.rt, obj, mode, version=info.version, patch=patch)
    if checked.dropped:
        log.info("sim_unknown_fields_dropped", verb=info.verb, resource=info.resource,
                 name=info.name or (obj.get("metadata") or {}).get("name"), field_validation=mode,
                 fields=checked.dropped)
        add_warnings(request, checked.warnings)


def _dry_run(request: web.BaseRequest) -> bool:
    """``dryRun=All``: admit and validate, but store nothing."""
    return bool(request.query.get("dryRun"))


def _dry_update(info: RequestInfo, new: Obj, old: Obj) -> Obj:
    want = (new.get("metadata") or {}).get("resourceVersion")
    if want not in (None, "") and str(want) != old["metadata"]["resourceVersion"]:
        raise Conflict.modified(plural=info.rt.plural, group=info.rt.group, name=info.name or "")
    return new


async def _create(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.Response:
    mode = field_validation(request.query, verb="create")
    obj = await _body(request)
    storage = state.storage
    if info.subresource == "binding":
        # The body is a Binding, which the field table does not hold: nothing to check.
        assert info.name is not None
        target = (obj.get("target") or {}).get("name")
        if not target:
            raise BadRequest("binding target.name is required")
        uid = (obj.get("metadata") or {}).get("uid")
        storage.bind(info.namespace or "", info.name, str(target), uid=uid)
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "code": 201}, status=201)
    if info.subresource == "eviction":
        # The body is a policy/v1 (or v1beta1) Eviction, which the field table does not hold.
        assert info.name is not None
        evict(storage, namespace=info.namespace or "", name=info.name, eviction=obj, dry_run=_dry_run(request))
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                              "code": 201}, status=201)
    if info.name is not None:
        raise MethodNotAllowed(f"create is not supported on {info.resource} with a name")
    rawdata.attach_from_body(info.rt.key, obj, await request.read(), request.content_type or _JSON)
    _decode_fields(request, info, obj, mode)
    _check_identity(info, obj)
    semantics.admit(info.rt, obj, None)
    if _dry_run(request):
        name = str(obj["metadata"].get("name") or "")
        if name and storage.get(info.rt.key, info.namespace, name) is not None:
            raise AlreadyExists.object(plural=info.rt.plural, group=info.rt.group, name=name)
        return _respond_obj(request, state, info, obj, status=201)
    created = storage.create(info.rt.key, obj, namespace=info.namespace)
    return _respond_obj(request, state, info, created, status=201)


async def _update(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.Response:
    mode = field_validation(request.query, verb="update")
    obj = await _body(request)
    assert info.name is not None
    rawdata.attach_from_body(info.rt.key, obj, await request.read(), request.content_type or _JSON)
    _decode_fields(request, info, obj, mode)
    _check_identity(info, obj)
    storage = state.storage
    old = storage.get(info.rt.key, info.namespace, info.name)
    if old is None:
        raise NotFound.object(plural=info.rt.plural, group=info.rt.group, name=info.name)
    if info.subresource is None:
        semantics.admit(info.rt, obj, old)
    else:
        semantics.admit_status(info.rt, obj, old)
    if _dry_run(request):
        return _respond_obj(request, state, info, _dry_update(info, obj, old))
    out = storage.update(info.rt.key, obj, subresource=info.subresource)
    return _respond_obj(request, state, info, out)


async def _patch(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.Response:
    assert info.name is not None
    mode = field_validation(request.query, verb="patch")
    storage = state.storage
    old = storage.get(info.rt.key, info.namespace, info.name)
    if old is None:
        raise NotFound.object(plural=info.rt.plural, group=info.rt.group, name=info.name)
    body = await request.read()
    content_type = request.headers.get("Content-Type", "")
    new = semantics.patched(info.rt, old, body, content_type)
    rawdata.attach_after_patch(info.rt.key, new, old, content_type)
    _decode_fields(request, info, new, mode, patch=PatchSource(content_type, body))
    _check_identity(info, new)
    if info.subresource is None:
        semantics.admit(info.rt, new, old)
    else:
        semantics.admit_status(info.rt, new, old)
    if _dry_run(request):
        return _respond_obj(request, state, info, _dry_update(info, new, old))
    out = storage.update(info.rt.key, new, subresource=info.subresource)
    return _respond_obj(request, state, info, out)


async def _delete_options(request: web.BaseRequest) -> Obj:
    opts: Obj = {}
    if request.can_read_body:
        raw = await request.read()
        protobuf = "protobuf" in (request.content_type or "")
        if raw.strip():
            try:
                data = decode_delete_options(raw) if protobuf else orjson.loads(raw)
            except (orjson.JSONDecodeError, ProtobufError, UnicodeDecodeError) as err:
                raise BadRequest(f"invalid DeleteOptions: {err}") from err
            if isinstance(data, dict):
                opts = data
    query = request.query
    if "gracePeriodSeconds" in query:
        opts["gracePeriodSeconds"] = _int_param(query, "gracePeriodSeconds")
    if "propagationPolicy" in query:
        opts["propagationPolicy"] = query["propagationPolicy"]
    if opts.get("orphanDependents") is True and not opts.get("propagationPolicy"):
        opts["propagationPolicy"] = "Orphan"
    return opts


async def _delete(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.Response:
    assert info.name is not None
    if info.subresource is not None:
        raise MethodNotAllowed(f"delete is not supported on {info.resource}")
    opts = await _delete_options(request)
    if _dry_run(request):
        current = state.storage.get(info.rt.key, info.namespace, info.name)
        if current is None:
            raise NotFound.object(plural=info.rt.plural, group=info.rt.group, name=info.name)
        return json_response(current)
    pre = opts.get("preconditions") or {}
    out = state.storage.delete(
        info.rt.key, info.namespace, info.name,
        uid=pre.get("uid"), resource_version=pre.get("resourceVersion"),
        grace_period_seconds=opts.get("gracePeriodSeconds"),
        propagation_policy=opts.get("propagationPolicy"),
    )
    return json_response(out)


async def _delete_collection(request: web.BaseRequest, state: ApiState, info: RequestInfo) -> web.Response:
    labels, fields = _selectors(request.query)
    opts = await _delete_options(request)
    storage = state.storage
    objs, _ = storage.list(info.rt.key, namespace=info.namespace, label_selector=labels, field_selector=fields)
    deleted = []
    for obj in objs:
        meta = obj["metadata"]
        try:
            deleted.append(storage.delete(
                info.rt.key, meta.get("namespace"), meta["name"],
                grace_period_seconds=opts.get("gracePeriodSeconds"),
                propagation_policy=opts.get("propagationPolicy"),
            ))
        except NotFound:
            continue
    return json_response({"kind": info.rt.list_kind, "apiVersion": info.rt.api_version,
                          "metadata": {"resourceVersion": str(storage.resource_version)},
                          "items": deleted})
