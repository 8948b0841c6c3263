"""A bounded log of the requests the simulated API server answered.

Tests read it through ``GET /sim/requests?since=<seq>`` to measure a client's QPS, to derive
the least-privilege RBAC rules a component needs (verbs × resources it actually used), and
to tell which process made a write (by User-Agent). Each record gets a sequence number; a
reader keeps the ``next`` cursor from one answer and passes it as ``since`` to the next, and
sees every record exactly once unless the ring buffer wrapped in between (``dropped`` says
how many it missed).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["RequestLog", "RequestRecord"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One answered request. ``verb`` is the API verb (``get``, ``watch`` ...) or the HTTP
    method for non-resource paths; ``resource`` is the plural, ``""`` for non-resource paths.
    Watches are recorded when the stream starts (``code`` 200) or is refused."""

    seq: int
    time: float
    method: str
    path: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    user_agent: str
    latency_ms: float

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the admin endpoint."""
        return asdict(self)


class RequestLog:
    """A ring buffer of ``RequestRecord`` with a monotonically increasing ``seq`` cursor."""

    def __init__(self, *, capacity: int = 200_000, now: Callable[[], float] = time.time) -> None:
        self._ring: deque[RequestRecord] = deque(maxlen=max(1, capacity))
        self._seq = 0
        self._now = now
        self._strings: dict[str, str] = {}

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest record (0 when empty)."""
        return self._seq

    def add(
        self,
        *,
        method: str,
        path: str,
        verb: str,
        group: str,
        resource: str,
        subresource: str,
        namespace: str,
        name: str,
        code: int,
        user_agent: str,
        latency_ms: float,
    ) -> None:
        """Append one record."""
        self._seq += 1
        share = self._share
        self._ring.append(RequestRecord(
            self._seq, self._now(), share(method), share(path), verb, group, resource, subresource,
            share(namespace), name, code, share(user_agent), round(latency_ms, 3),
        ))

    def _share(self, text: str) -> str:
        # The same paths and user agents repeat across 100,000s of records: keep one copy.
        found = self._strings.get(text)
        if found is not None:
            return found
        if len(self._strings) >= 20_000:
            self._strings.clear()
        self._strings[text] = text
        return text

    def since(self, seq: int, *, limit: int = 10_000) -> dict[str, Any]:
        """Records with ``seq`` greater than ``seq``, oldest first, at most ``limit`` of them.

        Returns ``{"items": [...], "next": <cursor>, "dropped": <records lost to wrap-around>}``.
        """
        ring = self._ring
        first = ring[0].seq if ring else self._seq + 1
        dropped = max(0, first - seq - 1) if seq < first else 0
        start = max(0, seq - first + 1)
        items = [r.to_json() for r in itertools.islice(ring, start, start + max(0, limit))]
        nxt = items[-1]["seq"] if items else max(seq, self._seq)
        return {"items": items, "next": nxt, "dropped": dropped}

    def clear(self) -> None:
        """Forget every record; the sequence keeps counting."""
        self._ring.clear()
