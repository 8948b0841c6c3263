"""structlog configuration: JSON for machines, console for people, one switch.

Library loggers (aiohttp, kubernetes_asyncio) go through the same renderer via the stdlib
bridge, so a deployment sees one format. Secrets never reach a log line: ``redact`` drops
any key that looks like a credential before rendering.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

__all__ = ["configure_logging", "redact"]

_SECRET_KEYS = ("token", "password", "secret", "authorization", "bearer", "client_key", "cert_data")


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace the value of any credential-like key with ``[redacted]``."""
    for key in list(event):
        lowered = key.lower()
        if any(marker in lowered for marker in _SECRET_KEYS):
            event[key] = "[redacted]"
    return event


def configure_logging(*, fmt: str = "auto", level: str = "info", stream: Any = None) -> None:
    """Set up structlog and the stdlib root logger. ``fmt`` is json, console or auto."""
    out = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if getattr(out, "isatty", lambda: False)() else "json"
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=False)
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info,
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                        structlog.processors.format_exc_info, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for noisy in ("aiohttp.access",):
        logging.getLogger(noisy).setLevel(logging.WARNING)
