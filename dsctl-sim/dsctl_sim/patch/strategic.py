"""Strategic merge patch (``application/strategic-merge-patch+json``), as kube-apiserver applies it.

No maintained Python library implements it, so this is our own implementation of the semantics
of k8s.io/apimachinery's ``strategicpatch`` package (apply side only):

- Maps merge key by key; ``null`` deletes a key. ``{"$patch": "replace"}`` inside a map makes
  the map replace its counterpart instead of merging (``kubectl rollout undo`` relies on it);
  ``{"$patch": "delete"}`` empties it.
- Lists follow the field's tag (see ``schema``): atomic lists are replaced; merge lists of maps
  merge item by item on the merge key, where an item ``{"<key>": v, "$patch": "delete"}``
  removes the match and an item ``{"$patch": "replace"}`` makes the rest of the patch list
  replace the list; merge lists of scalars are set unions.
- ``$retainKeys: [...]`` clears every key of the original map not listed.
- ``$deleteFromPrimitiveList/<list>: [...]`` removes scalars from a merge list.
- ``$setElementOrder/<list>: [...]`` fixes the relative order of the listed items. Items only
  the server knows keep their relative order and are interleaved by their old positions,
  exactly like the upstream best-effort merge of the two sorted runs.
- A value taken from the patch where the original had nothing is stripped of nulls and of
  directives, so no ``$patch`` marker ever reaches storage.

The functions here mutate the containers they are given; ``strategic_merge`` copies its
inputs first so callers get a fresh result sharing nothing with either argument.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, Final

import orjson

from dsctl_sim.patch.errors import PatchError
from dsctl_sim.patch.schema import Field, Schema, schema_for_kind

__all__ = ["strategic_merge"]

_DIRECTIVE: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_SET_ORDER: Final = "$setElementOrder/"
_DELETE_PRIMITIVES: Final = "$deleteFromPrimitiveList/"
_UNTYPED: Final = Field()


class _Drop:
    """Marks a patch value that removes its key (a deleted map, a null)."""


_DROP: Final = _Drop()


def strategic_merge(original: Mapping[str, Any], patch: Mapping[str, Any], *, kind: str) -> dict[str, Any]:
    """``original`` with ``patch`` applied using the merge rules of ``kind``; inputs untouched."""
    owned_original = orjson.loads(orjson.dumps(original))
    owned_patch = orjson.loads(orjson.dumps(patch))
    return _merge_map(owned_original, owned_patch, schema_for_kind(kind))


def _ident(value: Any) -> Hashable:
    """A hashable identity with Go's equality: booleans never equal numbers."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if value is None or isinstance(value, str):
        return ("s", value)
    return ("j", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def _field(schema: Schema | None, name: str) -> Field:
    if schema is None:
        return _UNTYPED
    return schema.get(name, _UNTYPED)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        directive = patch.pop(_DIRECTIVE)
        if directive == "replace":
            return _fresh_map(patch, schema)
        if directive == "delete":
            return {}
        raise PatchError(f"unknown patch type: {directive!r} in map", code=422)
    _retain_keys(original, patch)
    _apply_element_orders(original, patch, schema)
    deletions: list[tuple[str, list[Any]]] = []
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVES):
            deletions.append((_directive_target(key, _DELETE_PRIMITIVES), _list_arg(key, value)))
            continue
        if value is None:
            original.pop(key, None)
            continue
        field = _field(schema, key)
        current = original.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            original[key] = _merge_map(current, value, field.schema)
        elif isinstance(current, list) and isinstance(value, list):
            original[key] = _merge_list(current, value, field)
        else:
            fresh = _fresh(value, field)
            if isinstance(fresh, _Drop):
                original.pop(key, None)
            else:
                original[key] = fresh
    for name, values in deletions:
        current = original.get(name)
        if isinstance(current, list):
            doomed = {_ident(v) for v in values}
            original[name] = [v for v in current if _ident(v) not in doomed]
    return original


def _directive_target(key: str, prefix: str) -> str:
    name = key[len(prefix) :]
    if not name:
        raise PatchError(f"invalid patch: directive {key!r} names no field")
    return name


def _list_arg(key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise PatchError(f"invalid patch: the value of {key!r} must be a list")
    return value


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN_KEYS not in patch:
        return
    keep = {k for k in _list_arg(_RETAIN_KEYS, patch.pop(_RETAIN_KEYS)) if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((_SET_ORDER, _DELETE_PRIMITIVES)):
            continue
        if key not in keep:
            raise PatchError(f"patch sets {key!r}, which is not listed in $retainKeys", code=422)
    for key in [k for k in original if k not in keep]:
        del original[key]


def _apply_element_orders(original: dict[str, Any], patch: dict[str, Any], schema: Schema | None) -> None:
    for directive in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = _list_arg(directive, patch.pop(directive))
        name = _directive_target(directive, _SET_ORDER)
        field = _field(schema, name)
        have = original.get(name)
        want = patch.pop(name, None)
        if have is not None and not isinstance(have, list):
            raise PatchError(f"{directive} applies to {name!r}, which is not a list", code=422)
        if want is not None and not isinstance(want, list):
            raise PatchError(f"invalid patch: {name!r} must be a list next to {directive}")
        key = field.key if _holds_maps(order, have or [], want or []) else None
        _check_order(want or [], order, key)
        if have is None and want is None:
            continue
        if want is None:
            merged = have or []
        elif have is None:
            merged = _fresh_list(want, field)
        else:
            merged = _merge_list(have, want, field)
        original[name] = _interleave(merged, order, have or [], key)


def _holds_maps(*lists: list[Any]) -> bool:
    return any(isinstance(item, dict) for items in lists for item in items)


def _check_order(patch_list: list[Any], order: list[Any], key: str | None) -> None:
    """Every non-directive patch item must appear in ``order``, in the same relative order."""
    items = [p for p in patch_list if not (isinstance(p, dict) and _DIRECTIVE in p)]
    identify = _identifier(key)
    position = 0
    for wanted in order:
        if position >= len(items):
            break
        if identify(items[position]) == identify(wanted):
            position += 1
    if position < len(items):
        raise PatchError(f"the order in the patch list {patch_list} does not match $setElementOrder list {order}")


def _identifier(key: str | None) -> Callable[[Any], Hashable]:
    if key is None:
        return _ident

    def by_key(item: Any) -> Hashable:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f"map {item} does not contain declared merge key: {key}", code=422)
        return _ident(item[key])

    return by_key


def _merge_list(original: list[Any], patch: list[Any], field: Field) -> list[Any]:
    if not field.merge:
        return _fresh_list(patch, field)
    if not original and not patch:
        return original
    if any(isinstance(item, list) for item in (*original, *patch)):
        raise PatchError("lists of lists are not supported by strategic merge patch", code=422)
    maps = [isinstance(item, dict) for item in (*original, *patch)]
    if any(maps) and not all(maps):
        raise PatchError(f"list element types are not identical: {original} and {patch}", code=422)
    if not any(maps):
        merged = _dedupe([*original, *patch])
        return _interleave(merged, patch, original, None)
    if field.key is None:
        raise PatchError("cannot merge lists of maps without a merge key", code=422)
    return _merge_keyed(original, patch, field.key, field.schema)


def _merge_keyed(original: list[Any], patch: list[Any], key: str, schema: Schema | None) -> list[Any]:
    base = list(original)
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            if key not in item:
                raise PatchError(f"map {item} does not contain declared merge key: {key}", code=422)
            doomed = _ident(item[key])
            base = [o for o in base if not (key in o and _ident(o[key]) == doomed)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch", code=422)
        else:
            raise PatchError(f"unknown patch type: {directive!r} in list item {item}", code=422)
    if replace:
        return [_fresh_map(item, schema) for item in plain]
    server = list(base)
    for item in plain:
        if key not in item:
            raise PatchError(f"map {item} does not contain declared merge key: {key}", code=422)
        wanted = _ident(item[key])
        index = next((i for i, o in enumerate(base) if key in o and _ident(o[key]) == wanted), None)
        if index is None:
            base.append(_fresh_map(item, schema))
        else:
            base[index] = _merge_map(base[index], item, schema)
    return _interleave(base, plain, server, key)


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[Hashable] = set()
    out = []
    for item in items:
        ident = _ident(item)
        if ident not in seen:
            seen.add(ident)
            out.append(item)
    return out


def _interleave(merged: list[Any], patch_order: list[Any], server_order: list[Any], key: str | None) -> list[Any]:
    """Order ``merged``: patch items by ``patch_order``, server-only items by ``server_order``.

    The two sorted runs are then merged: a server-only item goes first only when both it and
    the next patch item have known server positions and it came first on the server.
    """
    if key is None and _holds_maps(merged):
        return merged

    def ident(item: Any) -> Hashable:
        if key is None:
            return _ident(item)
        return _ident(item.get(key)) if isinstance(item, dict) and key in item else ("missing", id(item))

    wanted: dict[Hashable, int] = {}
    for i, item in enumerate(patch_order):
        wanted.setdefault(_identifier(key)(item), i)
    known: dict[Hashable, int] = {}
    for i, item in enumerate(server_order):
        known.setdefault(ident(item), i)
    ours = sorted((m for m in merged if ident(m) in wanted), key=lambda m: wanted[ident(m)])
    theirs = sorted((m for m in merged if ident(m) not in wanted), key=lambda m: known.get(ident(m), len(known)))
    out: list[Any] = []
    i = j = 0
    while i < len(theirs) and j < len(ours):
        left, right = known.get(ident(theirs[i])), known.get(ident(ours[j]))
        if left is not None and right is not None and left < right:
            out.append(theirs[i])
            i += 1
        else:
            out.append(ours[j])
            j += 1
    return [*out, *theirs[i:], *ours[j:]]


def _fresh(value: Any, field: Field) -> Any:
    """A patch value stored where nothing merges with it: nulls and directives stripped."""
    if value is None:
        return _DROP
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            directive = value.pop(_DIRECTIVE)
            if directive == "delete":
                return _DROP
            if directive != "replace":
                raise PatchError(f"unknown patch type: {directive!r} in map", code=422)
        return _fresh_map(value, field.schema)
    if isinstance(value, list):
        return _fresh_list(value, field)
    return value


def _fresh_map(value: dict[str, Any], schema: Schema | None) -> dict[str, Any]:
    return _merge_map({}, value, schema)


def _fresh_list(items: list[Any], field: Field) -> list[Any]:
    out = []
    item_field = Field(schema=field.schema)
    for item in items:
        if isinstance(item, dict):
            if item.get(_DIRECTIVE) == "delete" or (len(item) == 1 and _DIRECTIVE in item):
                continue
            fresh = _fresh(item, item_field)
            if not isinstance(fresh, _Drop):
                out.append(fresh)
        else:
            out.append(item)
    return out
