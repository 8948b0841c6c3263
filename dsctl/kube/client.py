"""``KubeClient``: the controller's only way to talk to an API server.

Objects go in and come out as plain JSON dicts. Every call passes the token bucket, is retried
according to :mod:`dsctl.kube.transport`, is counted in ``rest_client_*`` metrics and fails only
with :mod:`dsctl.kube.errors` types. One client per process; it is safe to share between tasks.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kubernetes_asyncio.client import ApiClient
from prometheus_client import CollectorRegistry

import dsctl
from dsctl.kube.config import load_config
from dsctl.kube.metrics import client_metrics
from dsctl.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket
from dsctl.kube.resources import Resource
from dsctl.kube.transport import Query, RetryPolicy, Transport
from dsctl.kube.watch import (
    DEFAULT_MAX_EVENT_BYTES,
    LineDecoder,
    RunDecoder,
    iter_event_batches,
    iter_events,
)

if TYPE_CHECKING:
    import aiohttp

__all__ = ["DEFAULT_USER_AGENT", "KubeClient", "PatchType"]

DEFAULT_USER_AGENT = f"dsctl/{dsctl.__version__}"
DEFAULT_WATCH_INACTIVITY = 120.0

PatchType = Literal["merge", "strategic", "json"]
_T = TypeVar("_T")
_PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


def _namespace_of(res: Resource, body: Mapping[str, Any], namespace: str | None) -> str | None:
    if not res.namespaced:
        return None
    if namespace is not None:
        return namespace
    meta = body.get("metadata")
    found = meta.get("namespace") if isinstance(meta, Mapping) else None
    if not isinstance(found, str) or not found:
        raise ValueError(f"{res.label}: a namespace is required (argument or metadata)")
    return found


def _name_of(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError("the object has no metadata.name")
    return name


def _list_query(
    label_selector: str | None, field_selector: str | None, *, limit: int | None, continue_: str | None,
    resource_version: str | None = None, resource_version_match: str | None = None,
) -> list[tuple[str, str]]:
    query = _selectors(label_selector, field_selector)
    if limit:
        query.append(("limit", str(limit)))
    if continue_:
        query.append(("continue", continue_))
    if resource_version is not None:
        query.append(("resourceVersion", resource_version))
    if resource_version_match:
        query.append(("resourceVersionMatch", resource_version_match))
    return query


def _selectors(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


class KubeClient:
    """Async Kubernetes API client over raw JSON.

    Build it with :meth:`from_config`; ``await close()`` when done. Methods take a
    :class:`~dsctl.kube.resources.Resource`. Returned dicts belong to the caller.
    """

    def __init__(self, transport: Transport, *, host: str) -> None:
        self._transport = transport
        self.host = host

    @property
    def write_fence(self) -> Callable[[str, str], None] | None:
        """Called with (verb, resource) before each POST/PUT/PATCH/DELETE attempt is sent;
        raising (``Fenced``) refuses the write. None (the default) lets every write through.
        The leader elector sets it on the workers' client (see :mod:`dsctl.kube.fence`)."""
        return self._transport.write_fence

    @write_fence.setter
    def write_fence(self, fence: Callable[[str, str], None] | None) -> None:
        self._transport.write_fence = fence

    @classmethod
    async def from_config(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        user_agent: str = DEFAULT_USER_AGENT,
        registry: CollectorRegistry | None = None,
        retry: RetryPolicy | None = None,
        request_timeout: float = 60.0,
        environ: Mapping[str, str] | None = None,
    ) -> KubeClient:
        """Load configuration (see :func:`dsctl.kube.config.load_config`) and build a client.

        ``qps``/``burst`` size the client-side token bucket (defaults 50/100, see
        :mod:`dsctl.kube.ratelimit`); ``registry`` receives the ``rest_client_*`` metrics
        (the global prometheus registry when None). Raises :class:`ConfigError`.
        """
        loaded = await load_config(kubeconfig=kubeconfig, context=context, environ=environ)
        loaded.configuration.connection_pool_maxsize = 100
        api_client = ApiClient(configuration=loaded.configuration)
        transport = Transport(
            api_client=api_client,
            limiter=TokenBucket(qps=qps, burst=burst),
            metrics=client_metrics(registry),
            retry=retry or RetryPolicy(),
            user_agent=user_agent,
            request_timeout=request_timeout,
            credentials=loaded.credentials,
            environ=environ,
        )
        return cls(transport, host=loaded.host)

    async def close(self) -> None:
        """Close connections. Open watches end with ``ConnectionFailed``."""
        await self._transport.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _call(
        self,
        verb: str,
        res: Resource,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = "application/json",
        idempotent: bool,
        subresource: str | None = None,
        read_timeout: float | None = None,
    ) -> dict[str, Any]:
        label = f"{res.label}/{subresource}" if subresource else res.label
        result = await self._transport.request(
            verb=verb, resource=label, method=method, path=path, query=query, body=body,
            content_type=content_type, idempotent=idempotent, read_timeout=read_timeout,
        )
        return result if isinstance(result, dict) else {"items": result}

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        """Read one object. Raises NotFound."""
        path = res.path(namespace=namespace if res.namespaced else None, name=name)
        return await self._call("get", res, "GET", path, idempotent=True)

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        read_timeout: float | None = None,
    ) -> dict[str, Any]:
        """List a collection (one page when ``limit`` is set); returns the ``...List`` object.

        Follow ``metadata.continue`` for more pages. A continue token older than the server's
        history raises Gone: start over.
        """
        query = _list_query(label_selector, field_selector, limit=limit, continue_=continue_,
                            resource_version=resource_version,
                            resource_version_match=resource_version_match)
        path = res.path(namespace=namespace)
        return await self._call(
            "list", res, "GET", path, query=query, idempotent=True, read_timeout=read_timeout
        )

    async def list_page(
        self,
        res: Resource,
        *,
        decode: Callable[[bytes], _T],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
    ) -> _T:
        """:meth:`list`, the body decoded by ``decode`` (with the GC paused) instead of into
        a dict: the informers' path, which builds only the fields they cache. Errors are as
        for :meth:`list`."""
        query = _list_query(label_selector, field_selector, limit=limit, continue_=continue_)
        result: _T = await self._transport.request(
            verb="list", resource=res.label, method="GET", path=res.path(namespace=namespace),
            query=query, idempotent=True, decode=decode,
        )
        return result

    async def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
        inactivity_timeout: float | None = DEFAULT_WATCH_INACTIVITY,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Watch a collection; yield raw events ``{"type": ..., "object": {...}}``.

        Types are ADDED, MODIFIED, DELETED and BOOKMARK. The iteration ends when the server ends
        the stream (``timeout_seconds``; by default a random 5-10 min like client-go). Raises
        Gone for a too-old ``resource_version`` (HTTP 410 or in-stream ERROR), other ApiErrors
        for other failures, ConnectionFailed(reason ``WatchInactive``) when no byte arrived for
        ``inactivity_timeout`` seconds. ``send_initial_events`` asks for the streaming list
        protocol (``resourceVersionMatch=NotOlderThan``): ADDED events for the current state,
        then a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``. Use it with
        ``contextlib.aclosing`` to release the connection when stopping early.
        """
        response = await self._open_watch(
            res, namespace=namespace, resource_version=resource_version,
            label_selector=label_selector, field_selector=field_selector,
            allow_bookmarks=allow_bookmarks, timeout_seconds=timeout_seconds,
            send_initial_events=send_initial_events,
        )
        async for event in iter_events(
            response, inactivity_timeout=inactivity_timeout, max_event_bytes=max_event_bytes
        ):
            yield event

    async def watch_batches(
        self,
        res: Resource,
        *,
        decode: LineDecoder[_T],
        decode_run: RunDecoder[_T] | None = None,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool = False,
        inactivity_timeout: float | None = DEFAULT_WATCH_INACTIVITY,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> AsyncGenerator[builtins.list[_T], None]:
        """:meth:`watch`, yielding each received chunk's events as one list, every line
        decoded by ``decode`` (see :data:`~dsctl.kube.watch.LineDecoder`), or all of a chunk's
        whole lines in one call to ``decode_run`` when given (see
        :data:`~dsctl.kube.watch.RunDecoder`): the informers' path, one await per chunk
        instead of per event. Errors and the end of the stream are as for
        :meth:`watch`; the events before an in-stream error are yielded before it is raised."""
        response = await self._open_watch(
            res, namespace=namespace, resource_version=resource_version,
            label_selector=label_selector, field_selector=field_selector,
            allow_bookmarks=allow_bookmarks, timeout_seconds=timeout_seconds,
            send_initial_events=send_initial_events,
        )
        async for batch in iter_event_batches(
            response, decode=decode, decode_run=decode_run, inactivity_timeout=inactivity_timeout,
            max_event_bytes=max_event_bytes,
        ):
            yield batch

    async def _open_watch(
        self,
        res: Resource,
        *,
        namespace: str | None,
        resource_version: str | None,
        label_selector: str | None,
        field_selector: str | None,
        allow_bookmarks: bool,
        timeout_seconds: int | None,
        send_initial_events: bool,
    ) -> aiohttp.ClientResponse:
        """Open the watch request (query as :meth:`watch` documents it); return the response."""
        if timeout_seconds is None:
            timeout_seconds = int(300 * (1 + random.random()))
        query = [("watch", "true"), *_selectors(label_selector, field_selector)]
        if allow_bookmarks or send_initial_events:
            query.append(("allowWatchBookmarks", "true"))
        if send_initial_events:
            query.append(("sendInitialEvents", "true"))
            query.append(("resourceVersionMatch", "NotOlderThan"))
            query.append(("resourceVersion", resource_version or ""))
        elif resource_version is not None:
            query.append(("resourceVersion", resource_version))
        query.append(("timeoutSeconds", str(timeout_seconds)))
        return await self._transport.open_stream(
            verb="watch",
            resource=res.label,
            path=res.path(namespace=namespace),
            query=query,
            read_timeout=None,
        )

    async def create(
        self,
        res: Resource,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Create an object (namespace from the argument or ``metadata.namespace``).

        Not retried on 5xx or broken connections (a retry could create twice with
        ``generateName``); retried on 429 and on failure to connect.
        """
        ns = _namespace_of(res, body, namespace)
        query = [("fieldManager", field_manager)] if field_manager else []
        return await self._call(
            "create", res, "POST", res.path(namespace=ns), query=query, body=body,
            idempotent=False,
        )

    async def update(
        self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Replace an object (PUT). With ``metadata.resourceVersion`` set, a stale write → Conflict."""
        ns = _namespace_of(res, body, namespace)
        path = res.path(namespace=ns, name=_name_of(body))
        return await self._call("update", res, "PUT", path, body=body, idempotent=True)

    async def update_status(
        self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Replace the ``status`` subresource (PUT .../status)."""
        ns = _namespace_of(res, body, namespace)
        path = res.path(namespace=ns, name=_name_of(body), subresource="status")
        return await self._call(
            "update", res, "PUT", path, body=body, idempotent=True, subresource="status"
        )

    async def patch(
        self,
        res: Resource,
        name: str,
        body: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Patch an object: JSON merge, strategic merge, or JSON patch (a list of operations)."""
        content_type = _PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch type {patch_type!r}")
        path = res.path(
            namespace=namespace if res.namespaced else None, name=name, subresource=subresource
        )
        query = [("fieldManager", field_manager)] if field_manager else []
        return await self._call(
            "patch", res, "PATCH", path, query=query, body=body, content_type=content_type,
            idempotent=patch_type != "json", subresource=subresource,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        preconditions_uid: str | None = None,
        preconditions_resource_version: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        retry_server_errors: bool = True,
    ) -> dict[str, Any]:
        """Delete an object; returns the server's answer (the object or a Status).

        Retried on 5xx unless ``retry_server_errors`` is false: if the first attempt did
        delete, the retry answers NotFound. Callers whose decision to delete is only valid for
        the cache it was made from (a rolling update's budget) pass false, fail fast and
        decide again. A failed ``preconditions_uid`` check answers Conflict.
        """
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions: dict[str, str] = {}
        if preconditions_uid:
            preconditions["uid"] = preconditions_uid
        if preconditions_resource_version:
            preconditions["resourceVersion"] = preconditions_resource_version
        if preconditions:
            options["preconditions"] = preconditions
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = res.path(namespace=namespace if res.namespaced else None, name=name)
        return await self._call("delete", res, "DELETE", path, body=options, idempotent=retry_server_errors)
