"""RFC 3339 timestamps as Kubernetes writes them, always in UTC.

``metav1.Time`` has second precision (``2026-11-30T23:28:27Z``); ``metav1.MicroTime``, used by
Leases and events.k8s.io Events, has microseconds. Internally times are epoch seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_micro", "format_rfc3339", "parse_rfc3339"]


def format_rfc3339(epoch: float) -> str:
    """Second-precision UTC timestamp for ``epoch`` seconds."""
    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro(epoch: float) -> str:
    """Microsecond-precision UTC timestamp (``MicroTime``)."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> float:
    """Epoch seconds for an RFC 3339 timestamp; a missing offset means UTC.

    Raises ``ValueError`` for anything that is not a timestamp.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"not a timestamp: {text!r}")
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
