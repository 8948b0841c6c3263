"""List responses: ``limit``/``continue`` pagination and the List body built from cached bytes.

Pagination is snapshot-based. The first page of a limited list keeps the full filtered
result (a list of ``Doc`` references, ~8 bytes per object) under a snapshot id; continue
tokens name that snapshot and an offset, so every page comes from one consistent state and
carries the first page's resourceVersion, exactly as an etcd-backed apiserver serves pages.

Snapshots are bounded in number and age, and compaction (:meth:`Paginator.compact`) drops
them all, as etcd's compaction makes older continue tokens unusable. A token whose snapshot
is gone is refused with kube-apiserver's 410 Expired, never answered from the current state:
a client that joined such a page to the earlier ones and watched from its newer
resourceVersion would never hear of what changed in the earlier pages meanwhile. As upstream,
that 410 carries an inconsistent continue token (resourceVersion -1) in its ``metadata``; a
client that accepts an inconsistent list may send it, and gets the rest of the current list
after the last key it saw, at the current resourceVersion.
"""

from __future__ import annotations

import base64
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from dsctl_sim.errors import BadRequest, Gone
from dsctl_sim.watch import Doc

__all__ = ["INCONSISTENT_RV", "Page", "Paginator", "continue_expired", "list_body", "list_chunks"]

INCONSISTENT_RV = -1
"""The resourceVersion of an inconsistent continue token: "from the latest state", as upstream."""


@dataclass(slots=True)
class _Snapshot:
    docs: list[Doc]
    rv: int
    scope: str
    created: float


@dataclass(frozen=True, slots=True)
class Page:
    """One page: its objects, the snapshot RV, the next token (``""`` at the end), and how
    many objects remain after it."""

    docs: list[Doc]
    rv: int
    token: str
    remaining: int


def _key_of(doc: Doc) -> tuple[str, str]:
    meta = doc.peek()["metadata"]
    return meta.get("namespace", ""), meta["name"]


class Paginator:
    """Holds list snapshots for continue tokens; one per server."""

    def __init__(self, *, max_snapshots: int = 32, ttl_seconds: float = 300.0,
                 now: Callable[[], float] = time.monotonic) -> None:
        self._snapshots: OrderedDict[int, _Snapshot] = OrderedDict()
        self._ids = itertools.count(1)
        self._max = max_snapshots
        self._ttl = ttl_seconds
        self._now = now

    def _expire(self) -> None:
        deadline = self._now() - self._ttl
        while self._snapshots:
            oldest = next(iter(self._snapshots.values()))
            if oldest.created >= deadline and len(self._snapshots) <= self._max:
                break
            self._snapshots.popitem(last=False)

    def compact(self) -> None:
        """The history was compacted: no open list can be continued from its snapshot."""
        self._snapshots.clear()

    def first(self, docs: list[Doc], rv: int, *, limit: int, scope: str) -> Page:
        """Page one of a fresh list; ``scope`` identifies the type and filters."""
        if limit <= 0 or len(docs) <= limit:
            return Page(docs, rv, "", 0)
        snap_id = next(self._ids)
        self._snapshots[snap_id] = _Snapshot(docs, rv, scope, self._now())
        self._expire()
        return self._slice(snap_id, docs, rv, 0, limit)

    def _slice(self, snap_id: int, docs: list[Doc], rv: int, start: int, limit: int) -> Page:
        end = min(len(docs), start + limit)
        page = docs[start:end]
        if end >= len(docs):
            self._snapshots.pop(snap_id, None)
            return Page(page, rv, "", 0)
        ns, name = _key_of(page[-1]) if page else ("", "")
        token = _encode({"rv": rv, "id": snap_id, "off": end, "ns": ns, "name": name})
        return Page(page, rv, token, len(docs) - end)

    def next(self, token: str, *, limit: int, scope: str, relist: Callable[[], tuple[list[Doc], int]]) -> Page:
        """The page after ``token``. ``relist`` gives the current sorted list, read only for
        an inconsistent token (the one a 410 hands out)."""
        data = _decode(token)
        self._expire()
        if data["rv"] >= 0:
            snap = self._snapshots.get(data["id"])
            if snap is None or snap.scope != scope:
                raise continue_expired(token)
            return self._slice(data["id"], snap.docs, snap.rv, data["off"], limit if limit > 0 else 1 << 62)
        docs, rv = relist()
        last = (data["ns"], data["name"])
        rest = [d for d in docs if _key_of(d) > last]
        if limit <= 0 or len(rest) <= limit:
            return Page(rest, rv, "", 0)
        snap_id = next(self._ids)
        self._snapshots[snap_id] = _Snapshot(rest, rv, scope, self._now())
        return self._slice(snap_id, rest, rv, 0, limit)


def continue_expired(token: str) -> Gone:
    """kube-apiserver's 410 for a continue token it can no longer serve consistently, with
    the inconsistent token for the rest of the list (after the same key, from now on)."""
    data = _decode(token)
    inconsistent = _encode({"rv": INCONSISTENT_RV, "id": 0, "off": 0, "ns": data["ns"], "name": data["name"]})
    return Gone("The provided continue parameter is too old to display a consistent list result. Start a new "
                "list without it, or send the continue token in this response to get the rest of the results "
                "as an inconsistent list: objects created, changed or deleted since the first page may show.",
                list_continue=inconsistent)


def _encode(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")


def _decode(token: str) -> dict[str, Any]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return {"rv": int(data["rv"]), "id": int(data["id"]), "off": int(data["off"]),
                "ns": str(data["ns"]), "name": str(data["name"])}
    except (ValueError, KeyError, TypeError) as err:
        raise BadRequest(f"invalid continue token: {err}") from err


def list_chunks(*, kind: str, api_version: str, page: Page, chunk: int = 1000) -> Iterator[bytes]:
    """The List JSON in pieces of ``chunk`` objects, splicing each object's cached encoding.

    A 150,000-pod list is ~230 MB; streaming it in pieces keeps the server from holding two
    or three whole copies at once (the join, then the concatenation).
    """
    meta: dict[str, Any] = {"resourceVersion": str(page.rv)}
    if page.token:
        meta["continue"] = page.token
        meta["remainingItemCount"] = page.remaining
    head = orjson.dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})
    docs = page.docs
    prefix = head[:-1] + b',"items":['
    for start in range(0, len(docs), chunk):
        body = b",".join(d.raw for d in docs[start:start + chunk])
        yield prefix + body
        prefix = b","
    yield (prefix if not docs else b"") + b"]}"


def list_body(*, kind: str, api_version: str, page: Page) -> bytes:
    """The whole List JSON as one bytes object (for small lists)."""
    return b"".join(list_chunks(kind=kind, api_version=api_version, page=page))
