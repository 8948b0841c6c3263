"""``apply_patch``: one entry point for the PATCH verb, dispatching on the request content type.

- ``application/merge-patch+json``: RFC 7386 JSON merge patch (written here: it is ten lines).
- ``application/json-patch+json``: RFC 6902 JSON patch, via the ``jsonpatch`` library.
- ``application/strategic-merge-patch+json``: ``strategic.strategic_merge``.
- ``application/apply-patch+yaml`` (server-side apply) and anything else: 415.

Status codes follow kube-apiserver: a body that does not decode, or decodes to the wrong shape,
is 400; a JSON patch whose operations cannot be applied is 422.
"""

from __future__ import annotations

from typing import Any, Final

import jsonpatch
import jsonpointer
import orjson

from dsctl_sim.patch.errors import JsonPatchNotApplicable, PatchError, UnsupportedPatchType
from dsctl_sim.patch.strategic import strategic_merge

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "SUPPORTED_PATCH_TYPES",
    "apply_patch",
    "json_merge_patch",
]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
SUPPORTED_PATCH_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)


def apply_patch(original: dict[str, Any], body: bytes, content_type: str, *, kind: str) -> dict[str, Any]:
    """A new object: ``original`` patched by ``body``. ``original`` is never modified.

    ``content_type`` may carry parameters (``; charset=utf-8``). ``kind`` (``"DaemonSet"``)
    selects the strategic-merge rules; unknown kinds merge every list atomically.
    Raises ``PatchError`` (``.code`` 400/422) or ``UnsupportedPatchType`` (415).
    """
    media = content_type.split(";", 1)[0].strip().lower()
    if media == STRATEGIC_MERGE_PATCH:
        return strategic_merge(original, _decode_object(body), kind=kind)
    if media == MERGE_PATCH:
        return _require_object(json_merge_patch(_copy(original), _decode(body)))
    if media == JSON_PATCH:
        return _json_patch(original, body)
    if media == APPLY_PATCH:
        raise UnsupportedPatchType(
            "server-side apply (application/apply-patch+yaml) is not supported by the simulator; "
            "use client-side kubectl apply"
        )
    raise UnsupportedPatchType(
        f"the body of the request was in an unknown format {media!r} - accepted media types include: "
        + ", ".join(SUPPORTED_PATCH_TYPES)
    )


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` removes, anything else replaces.

    ``target`` is modified in place when it is an object; pass a copy to keep it.
    """
    if not isinstance(patch, dict):
        return patch
    result: dict[str, Any] = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _json_patch(original: dict[str, Any], body: bytes) -> dict[str, Any]:
    operations = _decode(body)
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a JSON array of operations")
    for index, operation in enumerate(operations):
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str):
            raise PatchError(f"JSON patch operation {index} must be an object with a string 'op'")
        if not isinstance(operation.get("path"), str):
            raise PatchError(f"JSON patch operation {index} ({operation['op']}) is missing a string 'path'")
    try:
        patched = jsonpatch.JsonPatch(operations).apply(_copy(original))
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise JsonPatchNotApplicable(f"the JSON patch cannot be applied: {exc}") from exc
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise JsonPatchNotApplicable(f"the JSON patch cannot be applied: {exc!r}") from exc
    return _require_object(patched)


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = orjson.loads(orjson.dumps(value))
    return copied


def _decode(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise PatchError(f"error decoding patch: {exc}") from exc


def _decode_object(body: bytes) -> dict[str, Any]:
    decoded = _decode(body)
    if not isinstance(decoded, dict):
        raise PatchError("a strategic merge patch must be a JSON object")
    return decoded


def _require_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PatchError("the patched document is not a JSON object")
    return value
