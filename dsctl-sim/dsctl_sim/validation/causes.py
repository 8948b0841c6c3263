"""Validation causes and the name/label syntax checks every resource shares.

A cause is the dict kube-apiserver puts in ``Status.details.causes``: ``field`` (a path such as
``spec.template.spec.containers[0].image``), ``reason`` (``FieldValueInvalid``,
``FieldValueRequired``...) and ``message``, which starts the way the apiserver's does
(``Invalid value: "x": ...``, ``Required value``, ``Unsupported value: ...``) so kubectl prints
familiar errors. ``Causes`` collects them; each ``check_*`` returns problem descriptions and
leaves the field path to the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

__all__ = [
    "Causes",
    "check_dns_label",
    "check_dns_subdomain",
    "check_label_value",
    "check_labels",
    "check_qualified_name",
    "format_value",
    "is_int",
]

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def format_value(value: Any) -> str:
    """A value as the apiserver quotes it in messages: strings quoted, numbers bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    return orjson.dumps(value).decode()


def is_int(value: Any) -> bool:
    """True for JSON integers (booleans excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


class Causes(list[dict[str, str]]):
    """An ordered list of causes with one builder per apiserver error type."""

    def add(self, field: str, reason: str, message: str) -> None:
        """Append one raw cause."""
        self.append({"field": field, "reason": reason, "message": message})

    def required(self, field: str, detail: str = "") -> None:
        """``Required value``: a mandatory field is missing or empty."""
        self.add(field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))

    def invalid(self, field: str, value: Any, detail: str) -> None:
        """``Invalid value``: the field is present but wrong."""
        self.add(field, "FieldValueInvalid", f"Invalid value: {format_value(value)}: {detail}")

    def not_supported(self, field: str, value: Any, supported: Iterable[str]) -> None:
        """``Unsupported value``: the field is not one of an enumeration."""
        options = ", ".join(format_value(s) for s in supported)
        message = f"Unsupported value: {format_value(value)}: supported values: {options}"
        self.add(field, "FieldValueNotSupported", message)

    def duplicate(self, field: str, value: Any) -> None:
        """``Duplicate value``: a value that must be unique appears twice."""
        self.add(field, "FieldValueDuplicate", f"Duplicate value: {format_value(value)}")

    def not_found(self, field: str, value: Any) -> None:
        """``Not found``: a reference to something that does not exist."""
        self.add(field, "FieldValueNotFound", f"Not found: {format_value(value)}")

    def forbidden(self, field: str, detail: str) -> None:
        """``Forbidden``: the field may not be set (or changed) here."""
        self.add(field, "FieldValueForbidden", f"Forbidden: {detail}")

    def too_long(self, field: str, limit: int) -> None:
        """``Too long``: a size limit is exceeded."""
        self.add(field, "FieldValueTooLong", f"Too long: must have at most {limit} bytes")

    def immutable(self, field: str, value: Any) -> None:
        """An update changed a field that is fixed at creation."""
        self.invalid(field, value, "field is immutable")

    def nonnegative(self, field: str, value: Any) -> None:
        """Require an integer >= 0 when the field is present."""
        if value is None:
            return
        if not is_int(value):
            self.invalid(field, value, "must be an integer")
        elif value < 0:
            self.invalid(field, value, "must be greater than or equal to 0")

    def names(self, field: str, value: Any, problems: list[str]) -> None:
        """One ``Invalid value`` cause per problem a ``check_*`` function reported."""
        for problem in problems:
            self.invalid(field, value, problem)


def check_dns_label(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 label (namespace, container and volume names)."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL.match(value):
        problems.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
            "must start and end with an alphanumeric character (regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    return problems


def check_dns_subdomain(value: str) -> list[str]:
    """Problems with ``value`` as an RFC 1123 subdomain (most object names)."""
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not _SUBDOMAIN.match(value):
        problems.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return problems


def check_qualified_name(value: str) -> list[str]:
    """Problems with ``value`` as a label/annotation key: ``[prefix/]name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name must be a name with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    problems = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in check_dns_subdomain(parts[0]))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if name and not _NAME_PART.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return problems


def check_label_value(value: str) -> list[str]:
    """Problems with ``value`` as a label value (empty is fine)."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        problems.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )
    return problems


def check_labels(causes: Causes, field: str, labels: Any) -> None:
    """Validate a ``map[string]string`` of labels (also ``nodeSelector``, ``matchLabels``)."""
    if labels is None:
        return
    if not isinstance(labels, Mapping):
        causes.invalid(field, labels, "must be a map of string keys to string values")
        return
    for key, value in labels.items():
        causes.names(field, key, check_qualified_name(str(key)))
        if not isinstance(value, str):
            causes.invalid(field, value, "label values must be strings")
        else:
            causes.names(field, value, check_label_value(value))
