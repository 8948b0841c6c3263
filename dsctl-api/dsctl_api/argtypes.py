"""Value types for argparse, shared by every command line of both distributions, so a flag
refuses a bad value with the same words wherever it is given.

Each raises ``argparse.ArgumentTypeError``, whose message argparse prints after the flag's name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["int_range", "non_negative"]


def non_negative(text: str) -> float:
    """A number of 0 or more (seconds, milliseconds); NaN and infinity's negative are refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number from ``low`` to ``high`` (no upper bound when None), both included."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bounds}: {text}")
        return value

    return parse
