"""ObjectMeta validation, common to every resource: names, labels, annotations, owners, finalizers.

Mirrors what kube-apiserver checks for every object before the type-specific rules run: the
name (or ``generateName``) against the type's name rule, label and annotation syntax, owner
references, finalizer names, and on update the identity fields that may never change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from dsctl_sim.validation.causes import (
    Causes,
    check_dns_label,
    check_dns_subdomain,
    check_labels,
    check_qualified_name,
)

__all__ = ["NameCheck", "check_annotations", "validate_meta", "validate_meta_update"]

NameCheck = Callable[[str], list[str]]

_ANNOTATIONS_LIMIT = 256 * 1024


def validate_meta(
    causes: Causes,
    obj: Mapping[str, Any],
    *,
    name_check: NameCheck = check_dns_subdomain,
    namespaced: bool | None,
) -> None:
    """Check ``obj['metadata']``. ``namespaced=None`` skips the namespace-scope rule."""
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        causes.invalid("metadata", meta, "must be an object")
        return
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if not isinstance(name, str) or not isinstance(generate_name, str):
        causes.invalid("metadata.name", name, "must be a string")
        return
    if generate_name:
        # A generated name is the prefix plus random characters, so a trailing '-' is fine.
        prefix = generate_name[:-1] if len(generate_name) > 1 and generate_name.endswith("-") else generate_name
        causes.names("metadata.generateName", generate_name, name_check(prefix))
    if name:
        causes.names("metadata.name", name, name_check(name))
    elif not generate_name:
        causes.required("metadata.name", "name or generateName is required")
    namespace = meta.get("namespace") or ""
    if namespaced is False and namespace:
        causes.forbidden("metadata.namespace", "not allowed on this type")
    elif namespace:
        causes.names("metadata.namespace", namespace, check_dns_label(str(namespace)))
    check_labels(causes, "metadata.labels", meta.get("labels"))
    check_annotations(causes, "metadata.annotations", meta.get("annotations"))
    _check_owner_references(causes, meta.get("ownerReferences"))
    _check_finalizers(causes, meta.get("finalizers"))


def validate_meta_update(causes: Causes, obj: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """Identity fields an update may not change, and no new finalizers while deleting."""
    meta = obj.get("metadata") or {}
    old_meta = old.get("metadata") or {}
    for field in ("name", "namespace", "uid"):
        new_value, old_value = meta.get(field) or "", old_meta.get(field) or ""
        if new_value and new_value != old_value:
            causes.immutable(f"metadata.{field}", new_value)
    if old_meta.get("deletionTimestamp"):
        old_finalizers = set(old_meta.get("finalizers") or [])
        added = [f for f in meta.get("finalizers") or [] if f not in old_finalizers]
        if added:
            causes.forbidden("metadata.finalizers", "no new finalizers can be added if the object is being deleted")


def check_annotations(causes: Causes, field: str, annotations: Any) -> None:
    """ValidateAnnotations: qualified keys (case-insensitive) and 256 KiB of keys and values together."""
    if annotations is None:
        return
    if not isinstance(annotations, Mapping):
        causes.invalid(field, annotations, "must be a map of string keys to string values")
        return
    total = 0
    for key, value in annotations.items():
        causes.names(field, key, check_qualified_name(str(key).lower()))
        if not isinstance(value, str):
            causes.invalid(field, value, "annotation values must be strings")
            continue
        # Go's len() counts bytes, of the key as of the value.
        total += len(str(key).encode()) + len(value.encode())
    if total > _ANNOTATIONS_LIMIT:
        causes.too_long(field, _ANNOTATIONS_LIMIT)


def _check_owner_references(causes: Causes, refs: Any) -> None:
    if refs is None:
        return
    if not isinstance(refs, list):
        causes.invalid("metadata.ownerReferences", refs, "must be a list")
        return
    controllers = []
    for i, ref in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, Mapping):
            causes.invalid(path, ref, "must be an object")
            continue
        for field in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field):
                causes.invalid(f"{path}.{field}", ref.get(field) or "", f"{field} must not be empty")
        if ref.get("controller") is True:
            controllers.append(ref)
    if len(controllers) > 1:
        names = ", ".join(orjson.dumps(r).decode() for r in controllers)
        causes.invalid(
            "metadata.ownerReferences", names, "Only one reference can have Controller set to true"
        )


def _check_finalizers(causes: Causes, finalizers: Any) -> None:
    if finalizers is None:
        return
    if not isinstance(finalizers, list):
        causes.invalid("metadata.finalizers", finalizers, "must be a list of strings")
        return
    for finalizer in finalizers:
        if not isinstance(finalizer, str):
            causes.invalid("metadata.finalizers", finalizer, "must be a string")
            continue
        causes.names("metadata.finalizers", finalizer, check_qualified_name(finalizer))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.invalid("metadata.finalizers", finalizers, "finalizer orphan and foregroundDeletion cannot be both set")
