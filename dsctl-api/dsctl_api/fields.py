"""Field selectors: ``?fieldSelector=metadata.name=x,spec.nodeName!=y``.

Only equality and inequality exist for fields. Which field paths a resource supports is the
server's business; this module parses and matches against a getter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FieldSelector", "FieldSelectorError", "parse_field_selector"]


class FieldSelectorError(ValueError):
    """A field selector that cannot be parsed; the message names the bad term."""


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A conjunction of ``(field, op, value)`` terms, ``op`` being ``=`` or ``!=``."""

    requirements: tuple[tuple[str, str, str], ...] = ()

    @property
    def empty(self) -> bool:
        """True when there are no terms."""
        return not self.requirements

    def exact(self, field: str) -> str | None:
        """The value a term pins ``field`` to with ``=``, for index lookups; else None."""
        for name, op, value in self.requirements:
            if name == field and op == "=":
                return value
        return None

    def matches(self, getter: Callable[[str], str | None]) -> bool:
        """Whether the object whose fields ``getter`` returns satisfies every term.

        A field the getter cannot resolve reads as the empty string, as in kube-apiserver.
        """
        for name, op, value in self.requirements:
            have = getter(name) or ""
            if (have == value) != (op == "="):
                return False
        return True

    def fields(self) -> set[str]:
        """The field paths this selector mentions."""
        return {name for name, _, _ in self.requirements}

    def __str__(self) -> str:
        return ",".join(f"{n}{op}{v}" for n, op, v in self.requirements)


def parse_field_selector(text: str) -> FieldSelector:
    """Parse the query-parameter form. ``==`` is accepted as ``=``."""
    terms: list[tuple[str, str, str]] = []
    for raw in (text or "").split(","):
        part = raw.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                name, _, value = part.partition(op)
                name = name.strip()
                if not name:
                    raise FieldSelectorError(f"invalid field selector term {part!r}")
                terms.append((name, "!=" if op == "!=" else "=", value.strip()))
                break
        else:
            raise FieldSelectorError(f"invalid field selector term {part!r}: expected = or !=")
    return FieldSelector(tuple(terms))
