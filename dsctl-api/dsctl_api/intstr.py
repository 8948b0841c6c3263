"""Int-or-percent values (``maxUnavailable: 1`` or ``"10%"``) scaled against a total."""

from __future__ import annotations

import math
import re

__all__ = ["IntStrError", "scaled_value", "validate_int_or_percent"]

_PERCENT = re.compile(r"^(\d+)%$")


class IntStrError(ValueError):
    """An int-or-percent value that is malformed or negative."""


def validate_int_or_percent(value: object) -> None:
    """Raise ``IntStrError`` unless ``value`` is a non-negative int or a ``"N%"`` string."""
    if isinstance(value, bool):
        raise IntStrError(f"invalid value {value!r}: must be an integer or a percentage")
    if isinstance(value, int):
        if value < 0:
            raise IntStrError(f"invalid value {value}: must be greater than or equal to 0")
        return
    if isinstance(value, str):
        if not _PERCENT.match(value):
            raise IntStrError(f"invalid value {value!r}: a string must be a percentage like '10%'")
        return
    raise IntStrError(f"invalid value {value!r}: must be an integer or a percentage")


def scaled_value(value: int | str | None, total: int, *, round_up: bool) -> int:
    """The absolute value of ``value`` against ``total``; percentages round up or down.

    ``None`` counts as 0. Percentages above 100 are allowed here; whether they are
    acceptable is the validator's call, not the arithmetic's.
    """
    if value is None:
        return 0
    validate_int_or_percent(value)
    if isinstance(value, int):
        return value
    percent = int(value[:-1])
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)
