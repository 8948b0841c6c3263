"""The simulator's error hierarchy: every failure the API server reports as a ``Status`` body.

Storage, validation, patching and the HTTP handlers all raise these; one place (the server's
error middleware) turns them into ``{"kind": "Status", ...}`` responses with the right HTTP
code. Messages follow kube-apiserver's wording closely enough that kubectl prints familiar
errors, e.g. ``daemonsets.apps "x" not found``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "NAMESPACE_TERMINATING",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "StorageError",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "status_body",
]


NAMESPACE_TERMINATING = "NamespaceTerminating"
"""The ``Status`` cause reason of a create refused because its namespace is terminating."""


class StorageError(Exception):
    """Base of every API error. ``code`` is the HTTP status, ``reason`` the ``StatusReason``.

    ``details`` is the ``Status.details`` object (``name``, ``group``, ``kind``, ``causes``...);
    it is optional and copied into the response unchanged. ``list_continue`` is the continue
    token a 410 for an expired continue carries in ``Status.metadata``.
    """

    code: int = 500
    reason: str = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        code: int | None = None,
        reason: str | None = None,
        list_continue: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        self.list_continue = list_continue
        if code is not None:
            self.code = code
        if reason is not None:
            self.reason = reason

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` object describing this error."""
        body = status_body(code=self.code, reason=self.reason, message=self.message, details=self.details)
        if self.list_continue:
            body["metadata"] = {"continue": self.list_continue}
        return body


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind}
    if name is not None:
        out["name"] = name
    if group:
        out["group"] = group
    return out


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


class NotFound(StorageError):
    """404: the object, namespace or resource type does not exist."""

    code = 404
    reason = "NotFound"

    @classmethod
    def object(cls, *, plural: str, group: str, name: str) -> NotFound:
        """The standard ``<resource> "<name>" not found`` error."""
        return cls(f'{_qualified(plural, group)} "{name}" not found', details=_details(name, group, plural))


class AlreadyExists(StorageError):
    """409: create of a name that is taken."""

    code = 409
    reason = "AlreadyExists"

    @classmethod
    def object(cls, *, plural: str, group: str, name: str) -> AlreadyExists:
        """The standard ``<resource> "<name>" already exists`` error."""
        message = f'{_qualified(plural, group)} "{name}" already exists'
        return cls(message, details=_details(name, group, plural))


class Conflict(StorageError):
    """409: optimistic-concurrency or precondition failure."""

    code = 409
    reason = "Conflict"

    @classmethod
    def modified(cls, *, plural: str, group: str, name: str) -> Conflict:
        """The stale ``resourceVersion`` error every controller retries on."""
        return cls(
            f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": the object has been '
            "modified; please apply your changes to the latest version and try again",
            details=_details(name, group, plural),
        )


class Invalid(StorageError):
    """422: the object fails validation; ``causes`` lists ``{field, message, reason}`` entries."""

    code = 422
    reason = "Invalid"

    def __init__(
        self,
        message: str,
        *,
        causes: list[dict[str, Any]] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        merged = dict(details or {})
        self.causes = list(causes or [])
        if self.causes:
            merged["causes"] = self.causes
        super().__init__(message, details=merged or None)

    @classmethod
    def object(
        cls, *, kind: str, group: str, name: str, causes: list[dict[str, Any]]
    ) -> Invalid:
        """``<Kind>.<group> "<name>" is invalid: <field>: <message>, ...`` as kube-apiserver words it."""
        qualified = f"{kind}.{group}" if group else kind
        parts = [f"{c.get('field', '')}: {c.get('message', '')}".lstrip(": ") for c in causes]
        summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        return cls(
            f'{qualified} "{name}" is invalid: {summary}',
            causes=causes,
            details=_details(name, group, kind),
        )


class Gone(StorageError):
    """410 Expired: a resourceVersion or continue token older than the retained history."""

    code = 410
    reason = "Expired"


class BadRequest(StorageError):
    """400: malformed request, unknown selector field, undecodable body."""

    code = 400
    reason = "BadRequest"


class Unauthorized(StorageError):
    """401: the request's credentials are missing or wrong (only with ``--token``)."""

    code = 401
    reason = "Unauthorized"


class Forbidden(StorageError):
    """403: the operation is refused (e.g. creating in a terminating namespace)."""

    code = 403
    reason = "Forbidden"


    @classmethod
    def namespace_terminating(cls, *, plural: str, group: str, name: str, namespace: str) -> Forbidden:
        """What the NamespaceLifecycle admission plugin answers a create in a terminating
        namespace; clients look for the ``NamespaceTerminating`` cause."""
        details = _details(name, group, plural)
        details["causes"] = [{"reason": NAMESPACE_TERMINATING, "field": "metadata.namespace",
                              "message": f"namespace {namespace} is being terminated"}]
        return cls(f'{_qualified(plural, group)} "{name}" is forbidden: unable to create new content in '
                   f"namespace {namespace} because it is being terminated", details=details)


class MethodNotAllowed(StorageError):
    """405: the verb is not supported on this resource or subresource."""

    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(StorageError):
    """406: no representation the client accepts."""

    code = 406
    reason = "NotAcceptable"


class UnsupportedMediaType(StorageError):
    """415: a request body content type the server does not decode (e.g. protobuf)."""

    code = 415
    reason = "UnsupportedMediaType"


class TooManyRequests(StorageError):
    """429: throttled; ``retry_after`` seconds goes into the ``Retry-After`` header."""

    code = 429
    reason = "TooManyRequests"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message, details={"retryAfterSeconds": retry_after})
        self.retry_after = retry_after


class InternalError(StorageError):
    """500: an injected or unexpected server failure."""

    code = 500
    reason = "InternalError"


def status_body(
    *, code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A failure ``metav1.Status`` dict."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body
