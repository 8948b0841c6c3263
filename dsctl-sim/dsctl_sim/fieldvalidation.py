"""Server-side field validation: the ``fieldValidation`` parameter of create, update and patch.

kube-apiserver decodes every written object into its Go type, so a field the type does not
declare (found here by ``dsctl_sim.validation.unknown_fields``) never reaches storage. The
query parameter ``fieldValidation`` says what the client hears about it:

- ``Strict`` (plain ``kubectl apply`` sends it): the write fails and nothing is stored. A
  create or update body fails while decoding, with 400 BadRequest
  ``DaemonSet in version "v1" cannot be handled as a DaemonSet: strict decoding error:
  unknown field "spec.x"``. A patch fails once applied, with 422 Invalid on the field
  ``patch``: `` "" is invalid: patch: Invalid value: "...": strict decoding error: ...``,
  the value being the patched object (JSON and merge patch) or the patch itself as Go
  prints a map (strategic merge patch).
- ``Warn``, also when the parameter is absent or empty (kube-apiserver's default since
  server-side field validation went GA in 1.27): the fields are dropped and each one becomes
  the warning ``unknown field "spec.x"``.
- ``Ignore``: the fields are dropped silently.
- Any other value: 422 Invalid on ``CreateOptions``/``UpdateOptions``/``PatchOptions``
  (``fieldValidation: Unsupported value: ...``), before the body is decoded.

``status`` writes decode the whole object, so they are checked the same way. Custom
resources are not checked: the field table has no CRD schemas. A strategic merge patch
reports its paths sorted (kube-apiserver converts the patched map with its unstructured
converter, which sorts them); the other writes report them in document order. Duplicate
fields are not detected (JSON decoders here keep the last one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final, NamedTuple

import orjson

from dsctl_sim.errors import BadRequest, Invalid
from dsctl_sim.patch import STRATEGIC_MERGE_PATCH
from dsctl_sim.registry import ResourceType
from dsctl_sim.validation import Causes, prune_unknown_fields, strict_decoding_message, unknown_fields

__all__ = ["IGNORE", "STRICT", "WARN", "Checked", "PatchSource", "check_declared_fields", "field_validation"]

STRICT: Final = "Strict"
WARN: Final = "Warn"
IGNORE: Final = "Ignore"
_SUPPORTED: Final = ("", IGNORE, STRICT, WARN)  # in the order the apiserver lists them
_OPTIONS_KIND: Final = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def field_validation(query: Mapping[str, str], *, verb: str) -> str:
    """The request's mode: ``Strict``, ``Warn`` (also when absent) or ``Ignore``; 422 otherwise.

    ``verb`` is ``create``, ``update`` or ``patch`` and names the options kind in the error.
    """
    value = query.get("fieldValidation", "")
    if value not in _SUPPORTED:
        causes = Causes()
        causes.not_supported("fieldValidation", value, _SUPPORTED)
        kind = _OPTIONS_KIND[verb]
        raise Invalid(f'{kind}.meta.k8s.io "" is invalid: fieldValidation: {causes[0]["message"]}',
                      causes=list(causes), details={"group": "meta.k8s.io", "kind": kind})
    return value or WARN


class PatchSource(NamedTuple):
    """The patch a patched object came from: the request's ``Content-Type`` and body."""

    content_type: str
    body: bytes


class Checked(NamedTuple):
    """What a write's check removed: the field paths, and the warnings to send for them."""

    dropped: list[str]
    warnings: list[str]


def check_declared_fields(
    rt: ResourceType, obj: dict[str, Any], mode: str, *, version: str, patch: PatchSource | None = None
) -> Checked:
    """Apply ``mode`` to the decoded (or, with ``patch``, patched) object of one write.

    Under ``Strict`` an unknown field raises ``BadRequest`` (a body) or ``Invalid`` (a patch)
    and ``obj`` is untouched; otherwise unknown fields are removed from ``obj`` in place.
    ``version`` is the request's API version, quoted by the decoding error.
    """
    strategic = patch is not None and _media(patch.content_type) == STRATEGIC_MERGE_PATCH
    if mode == STRICT:
        paths = _ordered(unknown_fields(rt.key, obj), sort=strategic)
        if paths:
            raise _rejection(rt, obj, paths, version=version, patch=patch)
        return Checked([], [])
    paths = _ordered(prune_unknown_fields(rt.key, obj), sort=strategic)
    warnings = [f'unknown field "{p}"' for p in paths] if mode == WARN else []
    return Checked(paths, warnings)


def _media(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _ordered(paths: list[str], *, sort: bool) -> list[str]:
    # Sorted by the error text, as the apiserver sorts the converter's errors.
    return sorted(paths, key=lambda p: f'unknown field "{p}"') if sort else paths


def _rejection(
    rt: ResourceType, obj: dict[str, Any], paths: list[str], *, version: str, patch: PatchSource | None
) -> BadRequest | Invalid:
    message = strict_decoding_message(paths)
    if patch is None:
        return BadRequest(f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: {message}')
    if _media(patch.content_type) == STRATEGIC_MERGE_PATCH:
        try:
            shown = _go_text(orjson.loads(patch.body))
        except orjson.JSONDecodeError:
            shown = patch.body.decode(errors="replace")
    else:
        shown = orjson.dumps(obj).decode()
    causes = Causes()
    causes.invalid("patch", shown, message)
    return Invalid(f' "" is invalid: patch: {causes[0]["message"]}', causes=list(causes))


def _go_text(value: Any) -> str:
    """A decoded JSON value as Go's ``%v`` prints it: ``map[a:1 b:[x y]]``, keys sorted."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{_go_text(value[key])}" for key in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_text(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _go_float(value: float) -> str:
    # Go's shortest %g: the fewest digits that round-trip, in exponent form when the decimal
    # exponent is below -4 or at least 6 (1e+06, 1.5e-07), plain otherwise.
    if not math.isfinite(value):  # not JSON, so never decoded; kept total for safety
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    magnitude = len(digits) + exponent - 1
    prefix = "-" if sign else ""
    if -4 <= magnitude < 6:
        return prefix + format(abs(Decimal(repr(value))).normalize(), "f")
    text = "".join(str(d) for d in digits)
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{prefix}{mantissa}e{'-' if magnitude < 0 else '+'}{abs(magnitude):02d}"
