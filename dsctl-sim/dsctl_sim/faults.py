"""Fault injection: the simulator misbehaving on purpose, so clients prove they cope.

Knobs (all settable from the CLI and at run time through ``GET``/``PUT /sim/faults``):

- ``errors``: rules ``{verb, resource, code, rate}``; each matching request fails with that
  code (500 InternalError, 429 TooManyRequests with ``Retry-After``, 409 Conflict, or any
  other 4xx/5xx) with probability ``rate``. ``verb`` and ``resource`` may be ``*``;
  ``resource`` is a plural (``pods``), a subresource (``pods/status``) or ``group/plural``.
- ``latency_ms`` for every resource request, ``verb_latency_ms`` per verb and
  ``resource_latency_ms`` per resource (``leases``, ``pods/status``, ``group/plural``) on top,
  and ``watch_event_latency_ms`` before each batch of watch events is written.
- ``watch_drop_seconds``: every watch stream is closed after this long (clients re-watch).
- ``gone_as_http``: answer a watch from a too-old resourceVersion with an HTTP 410 Status
  instead of kube-apiserver's usual 200 stream carrying an ERROR event.
- ``retry_after_seconds`` for injected 429s; a rule's own ``retry_after`` overrides it, so
  one resource can be throttled for a minute while the others are told to wait a second.
- ``compact_before_continue``: the next N list requests carrying a ``continue`` token compact
  the history first, so their token expires (410 Expired) as when etcd compacts in the middle
  of a paginated list; their client must start the list again.
- ``too_large_rv_watches``: the next N watches from a resourceVersion are answered as by an
  apiserver whose watch cache lags behind that resourceVersion (after a failover): an in-stream
  ERROR with 504 Timeout "Too large resource version" and the ``ResourceVersionTooLarge`` cause.

The two counters count down as they fire (``GET /sim/faults`` shows what is left).

Randomness comes from one seeded ``random.Random``, so a seeded run fails the same requests.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from dsctl_sim.errors import (
    BadRequest,
    Conflict,
    InternalError,
    StorageError,
    TooManyRequests,
)

__all__ = ["ErrorRule", "FaultConfig", "Faults", "parse_error_rule"]

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}
"""The ``reason`` kube-apiserver gives each status code; any other code says InternalError."""


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """Fail ``rate`` (0..1) of the requests matching ``verb`` and ``resource`` with ``code``;
    ``retry_after`` (seconds, 429 only) overrides the config's ``retry_after_seconds``."""

    verb: str
    resource: str
    code: int
    rate: float
    retry_after: int | None = None

    def matches(self, verb: str, resource: str, group: str) -> bool:
        """Whether a request for ``verb`` on ``resource`` (``plural[/sub]``) in ``group`` is covered."""
        if self.verb not in ("*", verb):
            return False
        if self.resource == "*":
            return True
        return self.resource in (resource, f"{group}/{resource}" if group else resource)


def parse_error_rule(text: str) -> ErrorRule:
    """``VERB:RESOURCE:CODE:RATE[:RETRY_AFTER]`` (e.g. ``create:pods:500:0.1``,
    ``*:leases:429:1:60``); raises ``ValueError``."""
    parts = text.split(":")
    if len(parts) not in (4, 5):
        raise ValueError(f"expected VERB:RESOURCE:CODE:RATE[:RETRY_AFTER], got {text!r}")
    return _rule(*parts)


def _rule(verb: Any, resource: Any, code: Any, rate: Any, retry_after: Any = None) -> ErrorRule:
    try:
        code_i, rate_f = int(code), float(rate)
    except (TypeError, ValueError) as err:
        raise ValueError(f"bad fault code or rate: {code!r}, {rate!r}") from err
    if not 400 <= code_i <= 599:
        raise ValueError(f"fault code must be 4xx or 5xx, got {code_i}")
    if not 0.0 <= rate_f <= 1.0:
        raise ValueError(f"fault rate must be within 0..1, got {rate_f}")
    if not verb or not resource:
        raise ValueError("fault verb and resource must be non-empty (use * for any)")
    after: int | None = None
    if retry_after is not None:
        try:
            after = int(retry_after)
        except (TypeError, ValueError) as err:
            raise ValueError(f"bad fault retry_after: {retry_after!r}") from err
        if after < 0:
            raise ValueError(f"fault retry_after must not be negative, got {after}")
    return ErrorRule(str(verb), str(resource), code_i, rate_f, after)


@dataclass(slots=True)
class FaultConfig:
    """Every fault knob; the defaults inject nothing."""

    errors: list[ErrorRule] = field(default_factory=list)
    latency_ms: float = 0.0
    verb_latency_ms: dict[str, float] = field(default_factory=dict)
    resource_latency_ms: dict[str, float] = field(default_factory=dict)
    watch_event_latency_ms: float = 0.0
    watch_drop_seconds: float = 0.0
    gone_as_http: bool = False
    retry_after_seconds: int = 1
    compact_before_continue: int = 0
    too_large_rv_watches: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON shape served by ``GET /sim/faults``."""
        out = asdict(self)
        out["errors"] = [asdict(r) for r in self.errors]
        return out

    @classmethod
    def from_json(cls, data: Any) -> FaultConfig:
        """Parse the ``PUT /sim/faults`` body; omitted knobs take their defaults."""
        if not isinstance(data, dict):
            raise BadRequest("fault config must be a JSON object")
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise BadRequest(f"unknown fault knobs: {sorted(unknown)}")
        try:
            errors = [_rule(r.get("verb", "*"), r.get("resource", "*"), r.get("code"), r.get("rate"),
                            r.get("retry_after"))
                      for r in data.get("errors") or []]
            verb_latency = {str(k): float(v) for k, v in (data.get("verb_latency_ms") or {}).items()}
            resource_latency = {str(k): float(v) for k, v in (data.get("resource_latency_ms") or {}).items()}
            cfg = cls(
                errors=errors,
                latency_ms=float(data.get("latency_ms", 0.0)),
                verb_latency_ms=verb_latency,
                resource_latency_ms=resource_latency,
                watch_event_latency_ms=float(data.get("watch_event_latency_ms", 0.0)),
                watch_drop_seconds=float(data.get("watch_drop_seconds", 0.0)),
                gone_as_http=bool(data.get("gone_as_http", False)),
                retry_after_seconds=int(data.get("retry_after_seconds", 1)),
                compact_before_continue=int(data.get("compact_before_continue", 0)),
                too_large_rv_watches=int(data.get("too_large_rv_watches", 0)),
            )
        except (AttributeError, TypeError, ValueError) as err:
            raise BadRequest(f"bad fault config: {err}") from err
        if min(cfg.latency_ms, cfg.watch_event_latency_ms, cfg.watch_drop_seconds,
               *cfg.verb_latency_ms.values(), *cfg.resource_latency_ms.values(), 0.0) < 0:
            raise BadRequest("fault latencies and intervals must not be negative")
        if min(cfg.compact_before_continue, cfg.too_large_rv_watches) < 0:
            raise BadRequest("fault counters must not be negative")
        return cfg


class Faults:
    """The live fault configuration plus the seeded dice it rolls."""

    def __init__(self, config: FaultConfig | None = None, *, rng: random.Random | None = None) -> None:
        self.config = config or FaultConfig()
        self.rng = rng or random.Random()
        self.injected = 0

    def latency_seconds(self, verb: str, resource: str = "", group: str = "") -> float:
        """Delay to add before serving a request with this verb on ``resource`` (``plural[/sub]``)."""
        cfg = self.config
        extra = 0.0
        if cfg.resource_latency_ms and resource:
            by_resource = cfg.resource_latency_ms
            extra = by_resource.get(resource, 0.0) or by_resource.get(f"{group}/{resource}", 0.0)
        return (cfg.latency_ms + cfg.verb_latency_ms.get(verb, 0.0) + extra) / 1000.0

    def take_compact_before_continue(self) -> bool:
        """Whether this continue request compacts the history first (one use of the counter)."""
        if self.config.compact_before_continue <= 0:
            return False
        self.config.compact_before_continue -= 1
        self.injected += 1
        return True

    def take_too_large_rv(self) -> bool:
        """Whether this watch from a resourceVersion gets the 504 (one use of the counter)."""
        if self.config.too_large_rv_watches <= 0:
            return False
        self.config.too_large_rv_watches -= 1
        self.injected += 1
        return True

    def error_for(self, verb: str, resource: str, group: str) -> StorageError | None:
        """The injected error for this request, if the dice say so."""
        for rule in self.config.errors:
            if rule.matches(verb, resource, group) and self.rng.random() < rule.rate:
                self.injected += 1
                return self._error(rule.code, verb, resource, retry_after=rule.retry_after)
        return None

    def _error(self, code: int, verb: str, resource: str, *, retry_after: int | None = None) -> StorageError:
        message = f"injected fault: {verb} {resource} failed with {code}"
        if code == 429:
            return TooManyRequests(message, retry_after=self.config.retry_after_seconds
                                   if retry_after is None else retry_after)
        if code == 409:
            return Conflict(message)
        if code == 500:
            return InternalError(message)
        return StorageError(message, code=code, reason=_REASONS.get(code, "InternalError"))
