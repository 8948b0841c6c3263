"""One logical API request: pacing, authentication, retries, metrics and error mapping.

The transport sends requests through the aiohttp session that kubernetes_asyncio's REST client
owns (TLS and client certificates come from the loaded configuration). The bearer token of each
attempt comes from :class:`~dsctl.kube.credentials.CachedCredentials`, which refreshes it early
and single-flight; without one, the configuration's ``Authorization`` (Basic auth, a gcp token)
is sent as loaded. The proxy is the kubeconfig's ``proxy-url`` or else the environment's, decided
once by :func:`~dsctl.kube.proxy.decide_proxy` as Go's ``net/http`` does. Bodies are sent and read
as raw bytes and decoded with orjson: no generated models, and no ``ApiClient.last_response``
keeping the previous body alive.

Retry policy (each attempt is counted in metrics and logged with its attempt number):

- **429** is retried for every verb, after the server's ``Retry-After`` (the server rejected the
  request before doing anything, so even a create is safe to repeat).
- **5xx and connection errors** are retried only when the caller marks the request idempotent:
  get, list, watch, update (a duplicate PUT is either the same write again or a 409), delete
  (a duplicate may answer 404) and merge/strategic patches. Creates and JSON patches are not.
- A failure to *connect* is retried for every verb: nothing was sent.
- **401** is retried once, for every verb, when the credentials yield a different token after
  being told the sent one was rejected (the server authenticates before doing anything, so the
  request was not carried out). A second 401 is raised.
- Waits are jittered and capped (:class:`~dsctl.kube.ratelimit.Backoff`); after
  ``max_attempts`` the last error is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import gc
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog

from dsctl.kube.credentials import CachedCredentials, ExecTokenSource
from dsctl.kube.encoded import Encoded
from dsctl.kube.errors import ApiError, ConnectionFailed, from_status, one_line
from dsctl.kube.metrics import CONNECTION_ERROR_CODE, ClientMetrics
from dsctl.kube.proxy import decide_proxy
from dsctl.kube.ratelimit import Backoff, TokenBucket

__all__ = ["RetryPolicy", "Transport", "decode_json", "gc_paused"]

log = structlog.get_logger(__name__)

Query = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry (see the module docstring for *which* failures)."""

    max_attempts: int = 5
    backoff_base: float = 0.2
    backoff_cap: float = 5.0
    max_retry_after: float = 60.0
    """Longest ``Retry-After`` honoured; a larger value is clamped to this."""


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: either delta-seconds or an HTTP date. None when absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a burst of allocations that create no cycles.

    A 500-pod list page allocates ~75,000 containers, first when decoded and again when
    projected; with the collector running, those allocations trigger collections that rescan
    the ever-growing informer caches, at scale for longer than the parsing takes (ADR 0007).
    JSON trees have no cycles, so pausing loses nothing; the collector runs
    again at the next allocation after. A no-op when the GC is already off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def decode_json(data: bytes) -> Any:
    """Decode a response body, with the GC paused (see :func:`gc_paused`).

    Written out rather than ``with gc_paused()``: it runs once per response, and the
    generator-based context manager costs more than decoding a small body.
    """
    if not gc.isenabled():
        return orjson.loads(data)
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        gc.enable()


class Transport:
    """Sends requests for :class:`~dsctl.kube.client.KubeClient`; one per client.

    ``api_client`` is a kubernetes_asyncio ``ApiClient``; the transport uses its configuration
    (host, auth) and its REST client's session, and closes it in :meth:`close`. ``credentials``
    supplies the bearer token (see :mod:`dsctl.kube.credentials`); ``environ`` is where the
    proxy variables are read (the process environment when None).
    """

    def __init__(
        self,
        *,
        api_client: Any,
        limiter: TokenBucket,
        metrics: ClientMetrics,
        retry: RetryPolicy,
        user_agent: str,
        request_timeout: float = 60.0,
        connect_timeout: float = 10.0,
        credentials: CachedCredentials | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._api = api_client
        self._credentials = credentials
        if credentials is not None and isinstance(credentials.source, ExecTokenSource):
            credentials.source.on_call = metrics.exec_plugin_call
        self._config = api_client.configuration
        self._rest = api_client.rest_client
        # kubernetes_asyncio builds its session with trust_env=True, which makes aiohttp re-read
        # the proxy variables and ~/.netrc in a thread on *every* request: a third of the
        # controller's CPU at high QPS. Resolve the environment's proxy once, as client-go does.
        self._rest.pool_manager._trust_env = False
        decision = decide_proxy(str(self._config.host), environ=os.environ if environ is None else environ)
        self._env_proxy = decision.proxy
        if self._rest.proxy or decision.reason != "no proxy configured":
            # The reason only: a proxy URL may carry a password.
            log.info("kube.proxy", via="kubeconfig proxy-url" if self._rest.proxy else
                     ("environment proxy" if decision.proxy else "direct"), reason=decision.reason)
        self._limiter = limiter
        self._metrics = metrics
        self.retry = retry
        self.user_agent = user_agent
        self._request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self.write_fence: Callable[[str, str], None] | None = None
        """Called with (verb, resource) right before each write attempt is sent; may raise
        (see :mod:`dsctl.kube.fence`). Checked after the token bucket, so a write that
        waited its turn is judged when it would leave, not when it was queued."""
        # Per-request constants, worked out once: the session options, the timeouts by read
        # timeout, the headers by (content type, credential). At a few thousand requests per
        # second, rebuilding them for every request is a measurable share of the client's CPU.
        self._send_options: dict[str, Any] = {}
        if self._rest.proxy or self._env_proxy:
            self._send_options["proxy"] = self._rest.proxy or self._env_proxy
        if self._rest.proxy_headers:
            self._send_options["proxy_headers"] = self._rest.proxy_headers
        if self._rest.server_hostname:
            self._send_options["server_hostname"] = self._rest.server_hostname
        self._timeouts: dict[float | None, aiohttp.ClientTimeout] = {}
        self._header_cache: dict[tuple[str | None, str, str], dict[str, str]] = {}

    @property
    def host(self) -> str:
        """Base URL of the API server."""
        return str(self._config.host).rstrip("/")

    async def close(self) -> None:
        """Close the HTTP session (and kubernetes_asyncio's client around it)."""
        if self._credentials is not None:
            await self._credentials.close()
        await self._api.close()

    def _token_headers(self, content_type: str | None, token: str) -> dict[str, str]:
        """The headers of a request carrying bearer ``token``; shared, never to be mutated.

        Tokens rotate rarely, so the cache holds the headers of the current token only.
        """
        key = (content_type, token, self.user_agent)
        headers = self._header_cache.get(key)
        if headers is None:
            if any(cached != token for _, cached, _ in self._header_cache):
                self._header_cache.clear()
            headers = {"Accept": "application/json", "User-Agent": self.user_agent}
            if content_type is not None:
                headers["Content-Type"] = content_type
            headers["Authorization"] = f"Bearer {token}"
            self._header_cache[key] = headers
        return headers

    async def _headers(self, content_type: str | None, token: str | None) -> dict[str, str]:
        if token is not None:
            return self._token_headers(content_type, token)
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        auth = await self._config.auth_settings()
        bearer = auth.get("BearerToken") if isinstance(auth, Mapping) else None
        if bearer and bearer.get("value"):
            headers["Authorization"] = str(bearer["value"])
        elif self._config.username and self._config.password:
            headers["Authorization"] = str(self._config.get_basic_auth_token())
        return headers

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Query,
        body: bytes | None,
        content_type: str | None,
        client_timeout: aiohttp.ClientTimeout,
        token: str | None,
    ) -> aiohttp.ClientResponse:
        session: aiohttp.ClientSession = self._rest.pool_manager
        headers = (self._token_headers(content_type, token) if token is not None
                   else await self._headers(content_type, None))
        response = await session.request(
            method,
            self.host + path,
            params=list(query) if query else None,
            data=body,
            headers=headers,
            timeout=client_timeout,
            **self._send_options,
        )
        return response

    async def _pace(self, verb: str) -> None:
        waited = await self._limiter.acquire()
        self._metrics.rate_limited(verb=verb, seconds=waited)

    async def request(
        self,
        *,
        verb: str,
        resource: str,
        method: str,
        path: str,
        query: Query = (),
        body: Any = None,
        content_type: str = "application/json",
        idempotent: bool,
        read_timeout: float | None = None,
        decode: Callable[[bytes], Any] | None = None,
    ) -> Any:
        """Send one request (with retries) and return the decoded JSON body of the 2xx answer;
        ``decode`` (called with the GC paused, see :func:`gc_paused`) replaces orjson's."""
        raw = None if body is None else body.raw if isinstance(body, Encoded) else orjson.dumps(body)
        _, data = await self._exchange(
            verb=verb,
            resource=resource,
            method=method,
            path=path,
            query=query,
            body=raw,
            content_type=content_type if raw is not None else None,
            idempotent=idempotent,
            read_timeout=read_timeout if read_timeout is not None else self._request_timeout,
            stream=False,
        )
        if decode is not None:
            with gc_paused():
                return decode(data)
        return decode_json(data) if data else {}

    async def open_stream(
        self,
        *,
        verb: str,
        resource: str,
        path: str,
        query: Query,
        read_timeout: float | None,
    ) -> aiohttp.ClientResponse:
        """Open a streaming GET (a watch) and return the response with its body unread.

        Non-2xx answers are read, mapped and raised (after the same retries as a get). The
        caller owns the returned response and must close or release it.
        """
        response, _ = await self._exchange(
            verb=verb,
            resource=resource,
            method="GET",
            path=path,
            query=query,
            body=None,
            content_type=None,
            idempotent=True,
            read_timeout=read_timeout,
            stream=True,
        )
        return response

    async def _exchange(
        self,
        *,
        verb: str,
        resource: str,
        method: str,
        path: str,
        query: Query,
        body: bytes | None,
        content_type: str | None,
        idempotent: bool,
        read_timeout: float | None,
        stream: bool,
    ) -> tuple[aiohttp.ClientResponse, bytes]:
        """The attempt loop: pace, send, count, map errors, retry as the policy allows.

        Returns the 2xx response and its body. With ``stream`` a 2xx body is left unread (and
        the response open, for the caller); every other body is read and the response released.
        """
        client_timeout = self._timeouts.get(read_timeout)
        if client_timeout is None:
            client_timeout = self._timeouts[read_timeout] = aiohttp.ClientTimeout(
                total=None, sock_connect=self._connect_timeout, sock_read=read_timeout
            )
        backoff = Backoff(base=self.retry.backoff_base, cap=self.retry.backoff_cap)
        attempt = 0
        retry_token: str | None = None
        reauthenticated = False
        while True:
            attempt += 1
            await self._pace(verb)
            token = retry_token
            if token is None and self._credentials is not None:
                token = await self._credentials.token()
            retry_token = None
            if self.write_fence is not None and method != "GET":
                self.write_fence(verb, resource)
            started = time.perf_counter()
            try:
                response = await self._send(
                    method, path, query=query, body=body, content_type=content_type,
                    client_timeout=client_timeout, token=token,
                )
                status = response.status
                data = b""
                if not (stream and 200 <= status < 300):
                    try:
                        data = await response.read()
                    finally:
                        response.release()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self._metrics.observe(
                    verb=verb, resource=resource, code=CONNECTION_ERROR_CODE,
                    seconds=time.perf_counter() - started,
                )
                failure = _connection_error(exc, self.host)
                # Failing to connect sent nothing, so even a create may try again.
                retryable = idempotent or isinstance(exc, aiohttp.ClientConnectorError)
                if retryable and attempt < self.retry.max_attempts:
                    await self._wait(verb, resource, attempt, failure, backoff.next_delay())
                    continue
                raise failure from None
            self._metrics.observe(
                verb=verb, resource=resource, code=str(status),
                seconds=time.perf_counter() - started,
            )
            if 200 <= status < 300:
                return response, data
            error = from_status(
                status, data, retry_after=parse_retry_after(response.headers.get("Retry-After"))
            )
            if status == 401 and token is not None and not reauthenticated:
                retry_token = await self._reauthenticate(verb, resource, attempt, token)
                if retry_token is not None:
                    reauthenticated = True
                    continue
            delay = self._retry_delay(error, idempotent=idempotent, backoff=backoff)
            if delay is not None and attempt < self.retry.max_attempts:
                await self._wait(verb, resource, attempt, error, delay)
                continue
            raise error

    async def _reauthenticate(self, verb: str, resource: str, attempt: int, rejected: str) -> str | None:
        """A new token after ``rejected`` got a 401, or None when there is none to retry with."""
        assert self._credentials is not None
        fresh = await self._credentials.rejected(rejected)
        log.info("kube.request.reauthenticate", verb=verb, resource=resource, attempt=attempt,
                 credentials=self._credentials.kind, retrying=fresh is not None)
        return fresh

    def _retry_delay(self, error: ApiError, *, idempotent: bool, backoff: Backoff) -> float | None:
        """Seconds to wait before retrying ``error``, or None when it must not be retried."""
        if error.status == 429 or (idempotent and error.status >= 500 and error.status != 501):
            if error.retry_after is not None:
                backoff.failures += 1
                return min(error.retry_after, self.retry.max_retry_after)
            return backoff.next_delay()
        return None

    async def _wait(
        self, verb: str, resource: str, attempt: int, error: ApiError, delay: float
    ) -> None:
        log.info(
            "kube.request.retry",
            verb=verb,
            resource=resource,
            attempt=attempt,
            max_attempts=self.retry.max_attempts,
            status=error.status,
            reason=error.reason,
            delay=round(delay, 3),
        )
        await asyncio.sleep(delay)


def _connection_error(exc: BaseException, host: str) -> ConnectionFailed:
    if isinstance(exc, aiohttp.ClientConnectorError):
        code = getattr(exc.os_error, "errno", None)
        why = os.strerror(code) if isinstance(code, int) and code > 0 else str(exc.os_error)
        return ConnectionFailed(f"cannot connect to {host}: {why}")
    if isinstance(exc, TimeoutError):
        return ConnectionFailed(f"request to {host} timed out", reason="Timeout")
    return ConnectionFailed(f"connection to {host} failed: {one_line(exc)}")
