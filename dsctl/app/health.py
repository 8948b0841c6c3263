"""Liveness and readiness as named checks, so /healthz can say *which* loop is unwell.

A check is a zero-argument callable returning ``None`` when healthy or a short reason when
not. Components register their own checks: informers report a dead reflector, the worker pool
reports a sync stuck past its deadline, the runner reports caches not yet synced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Check", "HealthChecks"]

Check = Callable[[], str | None]


@dataclass
class HealthChecks:
    """Two named sets of checks: liveness (``/healthz``) and readiness (``/readyz``)."""

    liveness: dict[str, Check] = field(default_factory=dict)
    readiness: dict[str, Check] = field(default_factory=dict)

    def add_liveness(self, name: str, check: Check) -> None:
        """Register a liveness check; a failure makes /healthz answer 500."""
        self.liveness[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        """Register a readiness check; a failure makes /readyz answer 500."""
        self.readiness[name] = check

    @staticmethod
    def evaluate(checks: dict[str, Check]) -> tuple[bool, list[str]]:
        """Run every check; returns (all ok, one ``[+]name ok`` / ``[-]name: reason`` line each)."""
        ok = True
        lines: list[str] = []
        for name, check in sorted(checks.items()):
            try:
                reason = check()
            except Exception as exc:  # a broken check is itself a failure, never a crash
                reason = f"check raised {type(exc).__name__}: {exc}"
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                ok = False
                lines.append(f"[-]{name} failed: {reason}")
        return ok, lines
