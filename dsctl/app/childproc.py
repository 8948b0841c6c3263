"""Child-process hygiene shared by everything that starts a simulator or controller process."""

from __future__ import annotations

import signal

__all__ = ["die_with_parent"]


def die_with_parent() -> None:
    """Run in the child before exec: ask Linux for SIGTERM when the parent dies, so a killed
    ``dsctl sim`` or test run never leaves a simulator or controller behind. Elsewhere a no-op."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
