"""The one error type a patch can fail with, carrying the HTTP code kube-apiserver would answer.

kube-apiserver answers a malformed patch document with 400 BadRequest, a well-formed patch that
cannot be applied (a JSON-patch ``test`` that fails, a missing merge key) with 422, and a patch
content type it does not accept with 415. The simulator's HTTP layer maps ``PatchError.code``
to its own ``StorageError`` subclasses; this package stays free of them so it remains pure.
"""

from __future__ import annotations

__all__ = ["JsonPatchNotApplicable", "PatchError", "UnsupportedPatchType"]


class PatchError(ValueError):
    """A patch that cannot be applied. ``code`` is 400 (malformed) or 422 (not applicable)."""

    def __init__(self, message: str, *, code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class JsonPatchNotApplicable(PatchError):
    """A JSON patch whose operations do not apply (a failed ``test``, a missing path): 422.

    kube-apiserver answers it with a generic Invalid status that does not repeat the patch
    library's message; ``message`` keeps it for the simulator's log."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=422)


class UnsupportedPatchType(PatchError):
    """A patch content type the simulator does not implement (415 UnsupportedMediaType)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=415)
