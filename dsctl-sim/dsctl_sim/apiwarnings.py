"""API warnings: what a request tells its client in ``Warning: 299 - "<text>"`` response headers.

kube-apiserver gives each request a warning recorder; any stage (field validation under
``fieldValidation=Warn``, deprecations, admission) adds texts to it, and they are sent as one
``Warning`` header each, on success and on failure alike. kubectl prints each one as
``Warning: <text>`` on stderr. The recorder here is the same shape: handlers call
``add_warnings(request, texts)``, and the server's request wrapper calls
``attach_warnings(request, response)`` once the response exists.

The header list follows kube-apiserver's recorder: texts are de-duplicated in order, the
agent is ``-``, ``"`` and ``\\`` are escaped, and past 4096 characters in all the texts are
cut to 256 characters each, later ones being dropped once the budget is spent again.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

__all__ = ["add_warnings", "attach_warnings", "warning_headers"]

_TOTAL_BUDGET = 4 * 1024  # characters of warning text per response before truncation starts
_TRUNCATED_ITEM = 256  # characters kept of each text once truncating

_WARNINGS: web.RequestKey[list[str]] = web.RequestKey("sim_warnings", list)


def add_warnings(request: web.BaseRequest, texts: Iterable[str]) -> None:
    """Record warnings for this request's response."""
    pending = list(texts)
    if not pending:
        return
    recorded = request.get(_WARNINGS)
    if recorded is None:
        recorded = request[_WARNINGS] = []
    recorded.extend(pending)


def attach_warnings(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Add the recorded warnings to ``response`` as ``Warning`` headers (unless already sent)."""
    recorded = request.get(_WARNINGS)
    if not recorded or response.prepared:
        return
    for header in warning_headers(recorded):
        response.headers.add("Warning", header)


def _quoted(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def warning_headers(texts: Iterable[str]) -> list[str]:
    """The ``Warning`` header values for these texts, in order, de-duplicated and size-bounded."""
    seen: set[str] = set()
    kept: list[str] = []
    sent: list[str] = []
    written = 0
    truncating = False
    for text in texts:
        # A header value cannot span lines; such texts are refused, as the apiserver refuses them.
        if not text or text in seen or "\n" in text or "\r" in text:
            continue
        if truncating and written >= _TOTAL_BUDGET:
            break
        seen.add(text)
        kept.append(text)
        shown = text[:_TRUNCATED_ITEM] if truncating else text
        if truncating or written + len(shown) <= _TOTAL_BUDGET:
            sent.append(shown)
            written += len(shown)
            continue
        # Over budget for the first time: replay everything so far, each text cut short.
        truncating = True
        sent = [t[:_TRUNCATED_ITEM] for t in kept]
        written = sum(len(t) for t in sent)
    return [f"299 - {_quoted(text)}" for text in sent]
