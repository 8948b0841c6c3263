"""Bearer tokens that stay valid for months: cached, refreshed early, single-flight, renewed on 401.

client-go keeps every bearer credential behind a cache (``transport/token_source.go``, the
exec authenticator in ``plugin/pkg/client/auth/exec``): requests read the cached token; when it
is about to expire, one caller refreshes it while the others wait for that result; a 401 drops
the cached token so that the next request fetches a new one. This module does the same for the
credentials a kubeconfig or a pod can carry:

- :class:`FileTokenSource`: a ``tokenFile`` or the service-account token, re-read every 60 s
  (client-go's period: half the gap between the kubelet's refresh of a projected token at 80 %
  of its 10-minute lifetime and its expiry) and at once after a 401;
- :class:`ExecTokenSource`: an exec credential plugin, re-run at its ``expirationTimestamp``
  (minus the skew below) and after a 401;
- :class:`OidcTokenSource`: the ``oidc`` auth-provider's id-token, renewed with its
  refresh-token (kubernetes_asyncio's OpenID requestor) before it expires and after a 401;
- :class:`StaticTokenSource`: a fixed ``token``, never renewed.

**Skew.** A token with a known lifetime is renewed at ``expiry - min(60 s, lifetime / 10)``,
lifetime being the time from when it was obtained to its expiry: 60 s early for an hour-long or
15-minute token, 30 s for a 5-minute one, 1 s for a 10-second one. kubernetes_asyncio renews 5
minutes early whatever the lifetime, so a token of 5 minutes or less counts as expired as soon
as it arrives and the plugin runs on every request; a fixed skew smaller than client-go's
10 s would instead cut long tokens too close to a clock difference with the API server. The
401 path covers what the skew does not (a revoked token, a clock far off).

**Single flight.** At most one refresh runs per :class:`CachedCredentials`; every caller that
needs a token meanwhile awaits that refresh (50 requests at expiry run one plugin process).

**Failures.** A refresh that fails while the cached token has not expired yet keeps the cached
token (client-go's cachingTokenSource does the same) and is tried again 5 s later at the
earliest; without a usable token the request fails with :class:`ConnectionFailed`
(reason ``CredentialsUnavailable``), which the layers above already treat as a failed call.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
import structlog

from dsctl.kube.errors import ConnectionFailed, one_line

__all__ = [
    "MAX_SKEW",
    "SKEW_FRACTION",
    "CachedCredentials",
    "ExecTokenSource",
    "FileTokenSource",
    "OidcTokenSource",
    "StaticTokenSource",
    "Token",
    "TokenSource",
    "jwt_expiry",
]

log = structlog.get_logger(__name__)

MAX_SKEW = 60.0
"""Longest head start, in seconds, a token is renewed with before it expires."""
SKEW_FRACTION = 0.1
"""Share of a token's lifetime it is renewed early by, when that is less than ``MAX_SKEW``."""
FILE_TOKEN_PERIOD = 60.0
"""How long a token read from a file is used before the file is read again (client-go: 1 minute)."""
RETRY_FAILED_REFRESH = 5.0
"""Seconds between refresh attempts while a failing source still has an unexpired token cached."""
EXEC_TIMEOUT = 60.0
"""Longest run of an exec credential plugin; a plugin that hangs is killed."""


class CredentialsUnavailable(ConnectionFailed):
    """No usable token: the source failed and nothing unexpired is cached."""

    def __init__(self, message: str) -> None:
        super().__init__(message, reason="CredentialsUnavailable")


@dataclass(frozen=True)
class Token:
    """A bearer token; times are wall-clock seconds (``expiry`` None: valid until rejected)."""

    value: str
    obtained: float
    expiry: float | None = None

    @property
    def renew_at(self) -> float | None:
        """When to renew: ``expiry - min(MAX_SKEW, lifetime * SKEW_FRACTION)``; None never."""
        if self.expiry is None:
            return None
        lifetime = max(0.0, self.expiry - self.obtained)
        return self.expiry - min(MAX_SKEW, lifetime * SKEW_FRACTION)

    def usable(self, now: float) -> bool:
        """Not expired yet (a token within its skew is still usable if renewal fails)."""
        return self.expiry is None or now < self.expiry


class TokenSource(Protocol):
    """Where fresh tokens come from; ``fetch`` may be slow (a process, a file, an IdP)."""

    kind: str

    async def fetch(self, *, now: float) -> Token:
        """A new token, or an exception saying why there is none."""
        ...


class StaticTokenSource:
    """A ``token`` written in the kubeconfig: the same value for ever."""

    kind = "token"

    def __init__(self, value: str) -> None:
        self._value = value

    async def fetch(self, *, now: float) -> Token:
        return Token(self._value, obtained=now)


class FileTokenSource:
    """A token read from ``path`` (whitespace trimmed) and trusted for ``period`` seconds.

    ``fallback``, a kubeconfig's ``token`` next to its ``tokenFile``, is used when the file
    cannot be read, as client-go does.
    """

    kind = "tokenFile"

    def __init__(self, path: str, *, period: float = FILE_TOKEN_PERIOD, fallback: str | None = None) -> None:
        self.path = path
        self._period = period
        self._fallback = fallback

    async def fetch(self, *, now: float) -> Token:
        try:
            value = (await asyncio.to_thread(Path(self.path).read_text, encoding="utf-8")).strip()
            if not value:
                raise ValueError(f"token file {self.path} is empty")
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            if self._fallback:
                log.warning("kube.credentials.token_file_unreadable", path=self.path, error=one_line(exc))
                return Token(self._fallback, obtained=now, expiry=now + self._period)
            if isinstance(exc, OSError):
                raise OSError(f"cannot read token file {self.path}: {exc.strerror or exc}") from None
            raise
        return Token(value, obtained=now, expiry=now + self._period)


def _rfc3339(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("z", "Z")).timestamp()


class ExecTokenSource:
    """An exec credential plugin (``client.authentication.k8s.io``) that prints a token.

    ``config`` is the kubeconfig's ``exec`` mapping: ``command``, ``args``, ``env``,
    ``apiVersion``. The plugin gets ``KUBERNETES_EXEC_INFO`` with ``interactive: false`` (a
    controller has no terminal), no stdin, and at most ``timeout`` seconds.
    """

    kind = "exec"

    def __init__(self, config: Mapping[str, Any], *, environ: Mapping[str, str] | None = None,
                 timeout: float = EXEC_TIMEOUT) -> None:
        command = config.get("command")
        api_version = config.get("apiVersion")
        if not isinstance(command, str) or not command or not isinstance(api_version, str):
            raise ValueError("exec: 'command' and 'apiVersion' are required")
        args = config.get("args") or []
        self._argv: Sequence[str] = [command, *(str(a) for a in args)]
        self._api_version = api_version
        env = dict(os.environ if environ is None else environ)
        for item in config.get("env") or []:
            env[str(item["name"])] = str(item["value"])
        env["KUBERNETES_EXEC_INFO"] = orjson.dumps({
            "apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False},
        }).decode()
        self._env = env
        self._timeout = timeout
        self.on_call: Callable[[int, str], None] | None = None
        """Told of every run: exit code and client-go's ``call_status`` (for the metric)."""

    def _called(self, code: int, status: str) -> None:
        if self.on_call is not None:
            self.on_call(code, status)

    async def fetch(self, *, now: float) -> Token:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv, env=self._env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except (FileNotFoundError, PermissionError):
            self._called(1, "plugin_not_found_error")
            raise
        try:
            async with asyncio.timeout(self._timeout):
                out, err = await proc.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            self._called(1, "client_internal_error")
            raise
        code = proc.returncode or 0
        self._called(code, "no_error" if code == 0 else "plugin_execution_error")
        if proc.returncode != 0:
            last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise RuntimeError(f"exec plugin {self._argv[0]} exited with {proc.returncode}: {last[0]}")
        try:
            data = orjson.loads(out)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"exec plugin {self._argv[0]} printed no JSON: {exc}") from None
        status = data.get("status") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("apiVersion") != self._api_version or not isinstance(status, dict):
            raise ValueError(f"exec plugin {self._argv[0]} printed no ExecCredential of {self._api_version}")
        token = status.get("token")
        if not isinstance(token, str) or not token:
            raise ValueError(f"exec plugin {self._argv[0]} returned no token")
        expires = status.get("expirationTimestamp")
        expiry = _rfc3339(expires) if isinstance(expires, str) and expires else None
        return Token(token, obtained=now, expiry=expiry)


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim of a JWT, or None when it has none or is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) else None


class OidcTokenSource:
    """The ``oidc`` auth-provider: a new id-token from the IdP's token endpoint via refresh-token.

    ``loader`` is kubernetes_asyncio's ``KubeConfigLoader`` for the context, whose OpenID
    requestor does the exchange and stores the new id-token and refresh-token in its config.
    """

    kind = "oidc"

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    async def fetch(self, *, now: float) -> Token:
        provider = self._loader._user["auth-provider"]
        await self._loader._refresh_oidc(provider)
        value = str(provider["config"]["id-token"])
        return Token(value, obtained=now, expiry=jwt_expiry(value))


class CachedCredentials:
    """The token to send, kept fresh from a :class:`TokenSource` (see the module docstring).

    Safe to share between tasks. Call :meth:`rejected` after a 401 and retry once with the token
    it returns; :meth:`close` cancels a refresh in flight.
    """

    def __init__(self, source: TokenSource, *, initial: Token | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self._clock = clock
        self._token = initial
        self._stale = False
        self._retry_at = 0.0
        self._inflight: asyncio.Task[str] | None = None
        self.refreshes = 0
        """Refreshes started (each is one plugin run, file read or IdP exchange)."""

    @property
    def has_token(self) -> bool:
        """Whether a token has been obtained (possibly expired since)."""
        return self._token is not None

    @property
    def kind(self) -> str:
        """The source's kind, for logs: ``exec``, ``tokenFile``, ``oidc`` or ``token``."""
        return self.source.kind

    async def token(self) -> str:
        """The token to send now, refreshed first when it is due (one refresh for all callers)."""
        now = self._clock()
        cached = self._token
        if cached is not None and not self._stale:
            renew_at = cached.renew_at
            if renew_at is None or now < renew_at:
                return cached.value
        if self._inflight is None:
            if cached is not None and now < self._retry_at and cached.usable(now):
                return cached.value  # the last refresh failed moments ago; this one still works
            self._inflight = asyncio.create_task(self._refresh(), name=f"kube-credentials-{self.kind}")
            self._inflight.add_done_callback(_retrieve)
        return await asyncio.shield(self._inflight)

    async def rejected(self, value: str) -> str | None:
        """``value`` got a 401: renew it (once, however many callers report it).

        Returns the token to retry with, or None when there is no other token to try.
        """
        cached = self._token
        if cached is not None and cached.value == value and self._inflight is None:
            self._stale = True
        try:
            fresh = await self.token()
        except ConnectionFailed:
            return None
        return fresh if fresh != value else None

    async def _refresh(self) -> str:
        self.refreshes += 1
        try:
            token = await self.source.fetch(now=self._clock())
        except Exception as exc:
            now = self._clock()
            self._retry_at = now + RETRY_FAILED_REFRESH
            cached = self._token
            if cached is not None and cached.usable(now) and not self._stale:
                log.warning("kube.credentials.refresh_failed", kind=self.kind, error=one_line(exc),
                            kept_for=None if cached.expiry is None else round(cached.expiry - now, 1))
                return cached.value
            log.error("kube.credentials.unavailable", kind=self.kind, error=one_line(exc))
            raise CredentialsUnavailable(f"getting credentials ({self.kind}): {one_line(exc)}") from None
        finally:
            self._inflight = None
        changed = self._token is None or self._token.value != token.value
        self._token = token
        self._stale = False
        self._retry_at = 0.0
        # A token file re-read every minute mostly finds the same token: not worth an info line.
        (log.info if changed else log.debug)(
            "kube.credentials.refreshed", kind=self.kind, changed=changed,
            expires_in=None if token.expiry is None else round(token.expiry - token.obtained, 1))
        return token.value

    async def close(self) -> None:
        """Cancel a refresh in flight (its waiters see the cancellation)."""
        task = self._inflight
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _retrieve(task: asyncio.Task[str]) -> None:
    """Mark a refresh's exception as seen: its waiters may all have gone."""
    if not task.cancelled():
        task.exception()
