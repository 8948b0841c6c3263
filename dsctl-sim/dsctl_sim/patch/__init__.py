"""The simulator's PATCH semantics: JSON merge, JSON patch and strategic merge patch.

Pure functions, no I/O. The HTTP layer calls one entry point:

``apply_patch(original: dict, body: bytes, content_type: str, *, kind: str) -> dict``
    Returns a NEW object (``original`` is never mutated, and the result shares nothing with
    it). ``content_type`` is the request's ``Content-Type`` (parameters allowed); ``kind`` is
    the object's kind (``"DaemonSet"``, ``"Pod"``...), which picks the strategic-merge list
    rules; unknown kinds (custom resources) merge every list atomically, like a JSON merge
    patch, except for ``metadata.finalizers``/``ownerReferences``.

Errors: ``PatchError(ValueError)`` with ``.code`` 400 (malformed body or directive) or 422
(well-formed but not applicable; ``JsonPatchNotApplicable`` for a JSON patch, e.g. a failing
``test``);
``UnsupportedPatchType(PatchError)`` with ``.code`` 415 for server-side apply
(``application/apply-patch+yaml``) and unknown content types.

Also exported: ``strategic_merge(original, patch, *, kind)`` on already-decoded dicts,
``json_merge_patch(target, patch)`` (RFC 7386, in place), and the content-type constants.
"""

from dsctl_sim.patch.apply import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    SUPPORTED_PATCH_TYPES,
    apply_patch,
    json_merge_patch,
)
from dsctl_sim.patch.errors import JsonPatchNotApplicable, PatchError, UnsupportedPatchType
from dsctl_sim.patch.strategic import strategic_merge

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "SUPPORTED_PATCH_TYPES",
    "JsonPatchNotApplicable",
    "PatchError",
    "UnsupportedPatchType",
    "apply_patch",
    "json_merge_patch",
    "strategic_merge",
]
