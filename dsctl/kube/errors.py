"""The one error hierarchy of the API layer.

Everything that can go wrong while talking to an API server surfaces as a subclass of
:class:`KubeError`. The transport translates aiohttp and kubernetes_asyncio failures into these
types exactly once, so the layers above (informers, the controller, the CLI) catch only these.

- :class:`ApiError` and its subclasses: the server answered with a non-2xx status, or a watch
  stream carried an ``ERROR`` event. ``status`` is the HTTP code (or the ``code`` of the in-stream
  Status), ``reason`` the Status ``reason`` (``NotFound``, ``Expired``...).
- :class:`ConnectionFailed`: no usable answer at all (refused, reset, DNS, read timeout). It is
  an ``ApiError`` with status 0 so that ``except ApiError`` covers every failed call.
- :class:`ConfigError`: the client could not even be configured. Its message is one line that
  names the problem, fit for a CLI to print as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Fenced",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "Unauthorized",
    "from_status",
    "from_status_object",
    "one_line",
]


class KubeError(Exception):
    """Base of every error raised by ``dsctl.kube``."""


class ConfigError(KubeError):
    """No usable client configuration; the message is one line naming the problem."""


class ApiError(KubeError):
    """The API server refused or failed a request.

    ``retry_after`` is the server's ``Retry-After`` in seconds when it sent one (429, some 5xx).
    ``details`` is the Status ``details`` dict (``name``, ``kind``, ``causes``...) or empty.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        retry_after: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.details: Mapping[str, Any] = details or {}

    @property
    def causes(self) -> list[Mapping[str, Any]]:
        """The Status causes: field-level ones of an Invalid (422) error, ``[{field, message, reason}]``,
        or why admission refused a request (``NamespaceTerminating``)."""
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, Mapping)] if isinstance(causes, list) else []


class BadRequest(ApiError):
    """400: the request itself is malformed (bad selector, bad patch...)."""


class Unauthorized(ApiError):
    """401: the credentials were rejected or missing."""


class Forbidden(ApiError):
    """403: authenticated, but RBAC does not allow this verb on this resource, or admission
    refused it (a create in a terminating namespace: :attr:`namespace_terminating`)."""

    @property
    def namespace_terminating(self) -> bool:
        """Whether the create was refused because its namespace is being deleted."""
        return any(cause.get("reason") == "NamespaceTerminating" for cause in self.causes)


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""


class Conflict(ApiError):
    """409: optimistic-concurrency failure (stale resourceVersion) or a failed precondition."""


class AlreadyExists(Conflict):
    """409 with reason AlreadyExists: a create named an object that exists."""


class Gone(ApiError):
    """410: the resourceVersion asked for is older than the server's history; re-list."""


class Invalid(ApiError):
    """422: the server's validation rejected the object; see :attr:`ApiError.causes`."""


class TooManyRequests(ApiError):
    """429: the server is shedding load; wait ``retry_after`` seconds before trying again."""


class ServerError(ApiError):
    """5xx: the server failed; idempotent requests are retried by the transport."""


class ConnectionFailed(ApiError):
    """No HTTP answer: connection refused or reset, or a read timed out (status 0)."""

    def __init__(self, message: str, *, reason: str = "ConnectionFailed") -> None:
        super().__init__(0, reason, message)


class Fenced(ApiError):
    """A write refused before it was sent: this process can no longer be sure it holds the
    leader Lease (see :mod:`dsctl.kube.fence`). Status 0, reason ``Fenced``; nothing reached
    the server, so the caller's decision is simply not carried out."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "Fenced", message)


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def _error_class(status: int, reason: str) -> type[ApiError]:
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


def from_status_object(
    http_status: int, status_obj: Mapping[str, Any] | None, *, retry_after: float | None = None
) -> ApiError:
    """Build the error for a decoded ``Status`` object (or None when the body was not one).

    An in-stream watch ``ERROR`` arrives with HTTP 200 around it: then the Status ``code`` decides.
    """
    obj: Mapping[str, Any] = status_obj if isinstance(status_obj, Mapping) else {}
    code = obj.get("code")
    status = http_status
    if http_status < 300 and isinstance(code, int):
        status = code
    reason = obj.get("reason")
    reason = reason if isinstance(reason, str) and reason else _default_reason(status)
    message = obj.get("message")
    message = message if isinstance(message, str) and message else reason
    details = obj.get("details")
    cls = _error_class(status, reason)
    return cls(
        status,
        reason,
        message,
        retry_after=retry_after,
        details=details if isinstance(details, Mapping) else None,
    )


def from_status(http_status: int, body: bytes, *, retry_after: float | None = None) -> ApiError:
    """Build the error for a non-2xx response from its raw body.

    The body is usually a ``metav1.Status``; anything else (an HTML error page from a proxy, a
    plain-text 500) still yields the right class, with the first line of the text as message.
    """
    status_obj: Mapping[str, Any] | None = None
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, Mapping) and decoded.get("kind") in ("Status", None):
        status_obj = decoded
    if status_obj is None:
        text = body.decode("utf-8", "replace").strip().splitlines()
        status_obj = {"message": text[0][:300]} if text else {}
    return from_status_object(http_status, status_obj, retry_after=retry_after)


def one_line(exc: BaseException) -> str:
    """``exc``'s message with all whitespace folded (its type name when it has none).

    Library and OS errors often span lines; our messages must fit one log field or CLI line.
    """
    return " ".join(str(exc).split()) or type(exc).__name__


def _default_reason(status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        405: "MethodNotAllowed",
        409: "Conflict",
        410: "Gone",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(status, "Unknown" if status < 500 else "InternalError")
