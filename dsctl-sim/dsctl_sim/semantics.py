"""The HTTP layer's single doorway to API semantics: defaulting, validation, patching, tables.

Those live in ``dsctl_sim.validation``, ``dsctl_sim.patch`` and ``dsctl_sim.discovery``
(written separately, pure functions over dicts). This module adapts their results to the
server's error types, so handlers deal only in ``StorageError``: validation causes (a
CRD's schema and CEL rules included, through ``ResourceType.schema``) become 422
``Invalid``, integers out of their Go type's range 400 decode errors, ``PatchError`` codes
become 400/415/422 (a JSON patch that does not apply, 422 with kube-apiserver's generic words).
"""

from __future__ import annotations

from typing import Any

import structlog

from dsctl_sim.crds import printer_columns
from dsctl_sim.discovery import to_table
from dsctl_sim.errors import BadRequest, Invalid, StorageError, UnsupportedMediaType
from dsctl_sim.patch import JsonPatchNotApplicable, PatchError, apply_patch
from dsctl_sim.patch.apply import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from dsctl_sim.registry import ResourceType
from dsctl_sim.storage import Storage
from dsctl_sim.validation import apply_defaults, decode_error, validate

__all__ = ["JSON_PATCH_NOT_APPLICABLE", "admit", "admit_status", "patched", "render_table", "table_for"]

log = structlog.get_logger(__name__)

Obj = dict[str, Any]

JSON_PATCH_NOT_APPLICABLE = "the server rejected our request due to an error in our request"
"""The message of kube-apiserver's 422 for a JSON patch that does not apply (a failed ``test``)."""


def _check_decodes(rt: ResourceType, obj: Obj) -> None:
    # kube-apiserver decodes into Go structs before validating: an integer its field cannot
    # hold is a 400 decode error, not a 422.
    message = decode_error(rt.key, obj)
    if message is not None:
        raise BadRequest(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {message}')


def admit(rt: ResourceType, obj: Obj, old: Obj | None) -> None:
    """Default ``obj`` in place, then validate it (against ``old`` on update); 422 on failure.

    An integer out of its Go type's range is refused first, with 400 as a decode error.
    """
    _check_decodes(rt, obj)
    apply_defaults(rt.key, obj)
    causes = validate(rt.key, obj, old)
    if rt.schema is not None:
        causes.extend(rt.schema.validate(obj, old))
    if causes:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise Invalid.object(kind=rt.kind, group=rt.group, name=name, causes=list(causes))


def admit_status(rt: ResourceType, obj: Obj, old: Obj) -> None:
    """Validate a write to the ``status`` subresource; 400 or 422 on failure, as ``admit``."""
    _check_decodes(rt, obj)
    causes = validate(rt.key, obj, old, subresource="status")
    if rt.schema is not None:
        causes.extend(rt.schema.validate(obj, old))
    if causes:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise Invalid.object(kind=rt.kind, group=rt.group, name=name, causes=list(causes))


def patched(rt: ResourceType, original: Obj, body: bytes, content_type: str) -> Obj:
    """``original`` with the patch applied (a new dict sharing nothing with ``original``);
    the patch error mapped to a Status.

    A custom resource has no strategic-merge rules (its schema names no merge keys), so
    kube-apiserver refuses that patch type for it with 415; so does the simulator."""
    if not rt.builtin and content_type.split(";", 1)[0].strip().lower() == STRATEGIC_MERGE_PATCH:
        raise UnsupportedMediaType("the body of the request was in an unknown format - accepted media types "
                                   f"include: {JSON_PATCH}, {MERGE_PATCH}")
    try:
        out = apply_patch(original, body, content_type, kind=rt.kind)
    except JsonPatchNotApplicable as err:
        # kube-apiserver's NewGenericServerResponse(422): the library's reason is not passed on.
        log.debug("sim_json_patch_not_applicable", kind=rt.kind, error=err.message)
        raise Invalid(JSON_PATCH_NOT_APPLICABLE) from err
    except PatchError as err:
        if err.code == 415:
            raise UnsupportedMediaType(err.message) from err
        if err.code == 422:
            name = str((original.get("metadata") or {}).get("name") or "")
            raise Invalid(f'{rt.kind} "{name}" is invalid: {err.message}') from err
        if err.code == 400:
            raise BadRequest(err.message) from err
        raise StorageError(err.message, code=err.code) from err
    return out


def table_for(
    rt: ResourceType,
    objects: list[Obj],
    now: float,
    *,
    include_object: str = "Metadata",
    include_headers: bool = True,
    printer_columns: list[Obj] | None = None,
) -> Obj:
    """The ``meta.k8s.io/v1`` Table for these objects; 400 for a bad ``includeObject``."""
    try:
        return to_table(rt, objects, now, include_object=include_object, include_headers=include_headers,
                        printer_columns=printer_columns)
    except ValueError as err:
        raise BadRequest(str(err)) from err


def render_table(
    query: Any, storage: Storage, rt: ResourceType, objects: list[Obj], now: float, *, include_headers: bool = True
) -> Obj:
    """``table_for`` with the request's ``includeObject`` and a CRD's printer columns."""
    return table_for(rt, objects, now, include_object=query.get("includeObject") or "Metadata",
                     include_headers=include_headers, printer_columns=printer_columns(storage, rt))
