"""What a sync returns, as a value: the worker maps it to one queue action and one metric label.

- ``Done(requeue_after=None)``: success; forget the key's failure history, and requeue after a
  delay if the planner asked for one (backoff expiry, minReadySeconds).
- ``Retry(error)``: a transient failure (API error, conflict); requeue rate-limited.
- ``Terminal(error)``: the object cannot be acted on until it changes (invalid spec). Do not
  requeue: the next watch event on it will.
- ``Deferred(requeue_after)``: the sync was put off without acting (``Syncer``); requeue after
  the delay, and keep the key's failure history, since nothing succeeded.
An exception escaping ``sync`` counts as ``Retry`` and is logged with its traceback; it never
kills a worker.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Deferred", "Done", "Outcome", "Retry", "Terminal"]


@dataclass(frozen=True, slots=True)
class Done:
    """The sync succeeded."""

    requeue_after: float | None = None
    label: str = "success"


@dataclass(frozen=True, slots=True)
class Retry:
    """A transient failure: requeue with per-key exponential backoff."""

    error: str
    label: str = "error"


@dataclass(frozen=True, slots=True)
class Terminal:
    """A failure that retrying cannot fix; wait for the object to change."""

    error: str
    label: str = "terminal"


@dataclass(frozen=True, slots=True)
class Deferred:
    """The sync was put off; try again after ``requeue_after`` seconds."""

    requeue_after: float
    label: str = "deferred"


Outcome = Done | Retry | Terminal | Deferred
