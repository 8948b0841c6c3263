"""Go's ``time.ParseDuration``, for settings that Kubernetes users write as ``10m`` or ``1h30m``.

Go reads a duration as a possibly signed sequence of decimal numbers, each with an optional
fraction and a unit (``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``): ``90s``, ``1.5h``,
``2m30s``. ``0`` alone needs no unit; any other number does. kubectl, kube-controller-manager and
Karpenter take their durations in this form, so a flag of dsctl's accepts the same text.
"""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)", re.ASCII)


def parse_duration(text: str) -> float:
    """Seconds in ``text`` read as Go's ``time.ParseDuration`` reads it; ``ValueError`` where Go errs.

    ``"10m"`` is 600.0, ``"-1.5s"`` is -1.5, ``"0"`` is 0.0; ``""``, ``"10"`` and ``"5 m"`` are refused.
    """
    if not isinstance(text, str):
        raise ValueError(f"not a duration: {text!r}")
    rest = text
    sign = 1.0
    if rest[:1] in ("+", "-"):
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    while rest:
        match = _PART.match(rest)
        number = match.group(1) if match else ""
        if match is None or number in ("", "."):
            unit_hint = "" if match else " (a number needs a unit: ns, us, ms, s, m, h)"
            raise ValueError(f"invalid duration {text!r}{unit_hint}")
        total += float(number) * _UNITS[match.group(2)]
        rest = rest[match.end():]
    return sign * total
