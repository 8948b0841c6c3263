"""Go's ``strconv.ParseInt(s, 10, 64)``, for the places where Kubernetes parses integers from strings.

Node-affinity ``Gt``/``Lt`` compare a node label with the requirement's single value, and both
sides are parsed with ``ParseInt(v, 10, 64)`` (apimachinery's ``labels.Requirement``): an
optional ``+`` or ``-``, then one or more ASCII digits, within int64. Python's ``int()`` is far
more lenient (underscores, surrounding whitespace, non-ASCII digits, unbounded size), so the
controller and the simulated scheduler would admit nodes that kube-scheduler and
kube-controller-manager refuse. Both use this one function.
"""

from __future__ import annotations

import re

__all__ = ["INT64_MAX", "INT64_MIN", "parse_int64"]

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

# re.ASCII keeps \d to 0-9; fullmatch rejects a trailing newline that $ would let through.
_DECIMAL = re.compile(r"[+-]?[0-9]+", re.ASCII)


def parse_int64(text: object) -> int | None:
    """The value of ``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it; None where Go errs.

    Accepts a leading sign and leading zeros; refuses underscores (only base 0 allows them),
    whitespace, an empty string or a bare sign, non-ASCII digits, and values outside int64.
    """
    if not isinstance(text, str) or _DECIMAL.fullmatch(text) is None:
        return None
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else None
