"""Tolerations against taints, with Kubernetes' matching rules.

A toleration with an empty key and operator ``Exists`` tolerates every taint; an empty effect
matches every effect. ``tolerationSeconds`` does not affect matching.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["find_untolerated", "tolerates"]


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether ``toleration`` tolerates ``taint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def find_untolerated(
    taints: Iterable[Any] | None,
    tolerations: Iterable[Any] | None,
    effects: Iterable[str],
) -> Mapping[str, Any] | None:
    """The first taint with one of ``effects`` that no toleration tolerates, or None."""
    wanted = set(effects)
    tols = [t for t in (tolerations or []) if isinstance(t, Mapping)]
    for taint in taints or []:
        if not isinstance(taint, Mapping) or taint.get("effect") not in wanted:
            continue
        if not any(tolerates(t, taint) for t in tols):
            return taint
    return None
