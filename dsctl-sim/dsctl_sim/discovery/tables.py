"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` asks for to print real columns.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...``; answering with a
Table is what turns ``NAME AGE`` into ``NAME STATUS ROLES AGE VERSION``. Built-in kinds use
the printers in ``printers``/``events``; custom resources use their CRD version's
``additionalPrinterColumns`` (a JSONPath subset: ``.a.b``, ``[0]``, ``[*]``, ``['k.io/x']``
and ``[?(@.type=="Ready")]``), or ``NAME AGE`` when it declares none. Each row carries the
object as ``PartialObjectMetadata`` (``includeObject=Metadata``, the default), the full object
(``Object``) or nothing (``None``), which is what ``kubectl get -o name`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from dsctl_sim.discovery.events import EVENT_COLUMNS, event_row
from dsctl_sim.discovery.printers import AGE, BUILTIN_PRINTERS, NAME, Column, Obj, Row, age, col

__all__ = ["jsonpath_first", "to_table"]

_INCLUDE = ("None", "Metadata", "Object")
_SEGMENT = re.compile(
    r"""\.(?P<field>[^.\[\]]+)"""
    r"""|\[(?P<index>-?\d+|\*)\]"""
    r"""|\[(?P<quote>['"])(?P<key>.+?)(?P=quote)\]"""
    r"""|\[\?\(@\.(?P<fkey>[^=\s]+)\s*==\s*(?P<fq>['"])(?P<fval>.*?)(?P=fq)\)\]"""
)


def _steps(path: str) -> list[Callable[[Any], list[Any]]]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[Callable[[Any], list[Any]]] = []
    position = 0
    while position < len(text):
        match = _SEGMENT.match(text, position)
        if match is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {text[position:]!r}")
        position = match.end()
        steps.append(_step(match))
    return steps


def _step(match: re.Match[str]) -> Callable[[Any], list[Any]]:
    field = match.group("field") or match.group("key")
    if field is not None:
        return lambda v: [v[field]] if isinstance(v, Mapping) and field in v else []
    index = match.group("index")
    if index == "*":
        return lambda v: list(v) if isinstance(v, list) else list(v.values()) if isinstance(v, Mapping) else []
    if index is not None:
        i = int(index)
        return lambda v: [v[i]] if isinstance(v, list) and -len(v) <= i < len(v) else []
    key, wanted = match.group("fkey"), match.group("fval")

    def select(value: Any) -> list[Any]:
        items = value if isinstance(value, list) else []
        return [item for item in items if isinstance(item, Mapping) and str(_lookup(item, key)) == wanted]

    return select


def _lookup(item: Mapping[str, Any], dotted: str) -> Any:
    current: Any = item
    for part in dotted.split("."):
        current = current.get(part) if isinstance(current, Mapping) else None
    return current


def jsonpath_first(obj: Any, path: str) -> Any:
    """The first value ``path`` selects in ``obj``, or None; raises ValueError on syntax we lack."""
    results = [obj]
    for step in _steps(path):
        results = [found for value in results for found in step(value)]
    return results[0] if results else None


def _cell(value: Any, kind: str, now: float) -> Any:
    if value is None:
        return None
    if kind == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        return age(value, now)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return orjson.dumps(value).decode()
    return str(value)


def _custom_printer(
    printer_columns: Iterable[Mapping[str, Any]] | None,
) -> tuple[list[Column], Callable[[Obj, float], Row]]:
    specs = [c for c in printer_columns or () if isinstance(c, Mapping) and c.get("jsonPath")]
    if not specs:
        columns = [NAME, {**AGE, "type": "date"}]

        def default_row(obj: Obj, now: float) -> Row:
            meta = obj.get("metadata") or {}
            return [meta.get("name", ""), age(meta.get("creationTimestamp"), now)]

        return columns, default_row
    columns = [NAME] + [
        col(
            str(c.get("name", "")),
            str(c.get("type") or "string"),
            priority=int(c.get("priority") or 0),
            fmt=str(c.get("format") or ""),
            description=str(c.get("description") or ""),
        )
        for c in specs
    ]

    def custom_row(obj: Obj, now: float) -> Row:
        row: Row = [(obj.get("metadata") or {}).get("name", "")]
        for spec in specs:
            try:
                value = jsonpath_first(obj, str(spec["jsonPath"]))
            except ValueError:
                value = None
            row.append(_cell(value, str(spec.get("type") or "string"), now))
        return row

    return columns, custom_row


def _row_object(obj: Obj, include_object: str) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return dict(obj)
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def to_table(
    resource: Any,
    objects: Iterable[Obj],
    now: float,
    *,
    include_object: str = "Metadata",
    include_headers: bool = True,
    printer_columns: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (all of type ``resource``) at time ``now``.

    ``include_object`` is the ``includeObject`` query parameter (``None``/``Metadata``/``Object``).
    ``include_headers=False`` leaves ``columnDefinitions`` empty, as for watch events after
    the first. ``printer_columns`` are a CRD version's ``additionalPrinterColumns`` (falling
    back to ``resource.printer_columns`` when that attribute exists). The caller fills
    ``metadata`` (``resourceVersion``, ``continue``).
    """
    if include_object not in _INCLUDE:
        raise ValueError(f"includeObject must be one of {', '.join(_INCLUDE)}, not {include_object!r}")
    group, plural = resource.group, resource.plural
    columns: list[Column]
    printer: Callable[[Obj, float], Row]
    if plural == "events" and group in ("", "events.k8s.io"):
        new_api = group == "events.k8s.io"
        columns = EVENT_COLUMNS

        def printer(obj: Obj, at: float) -> Row:
            return event_row(obj, at, new_api=new_api)

    elif (group, plural) in BUILTIN_PRINTERS:
        columns, printer = BUILTIN_PRINTERS[(group, plural)]
    else:
        columns, printer = _custom_printer(printer_columns or getattr(resource, "printer_columns", None))
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer(obj, now)}
        embedded = _row_object(obj, include_object)
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [dict(c) for c in columns] if include_headers else [],
        "rows": rows,
    }
