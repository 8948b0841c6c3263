"""Hypothesis profiles: ``ci`` keeps every property test's full example count, ``dev`` runs a
tenth of it for the inner loop (``make unit`` passes ``--hypothesis-profile=dev``).

A test's own ``@settings(max_examples=N)`` would override any profile, so property tests
write ``max_examples=examples(N)``: N under ``ci``, scaled down under ``dev``.
"""

from __future__ import annotations

from hypothesis import settings

__all__ = ["FULL", "examples", "register_profiles"]

FULL = 100
"""``max_examples`` of the ``ci`` profile; a profile's share of it scales every ``examples(N)``."""


def register_profiles() -> None:
    """Register ``ci`` and ``dev`` and load ``ci``; ``--hypothesis-profile`` loads another after."""
    settings.register_profile("ci", max_examples=FULL)
    settings.register_profile("dev", max_examples=FULL // 10)
    settings.load_profile("ci")


def examples(full: int) -> int:
    """``full`` under the ``ci`` profile, scaled by the loaded profile's share of it (at least 1)."""
    return max(1, full * settings().max_examples // FULL)
