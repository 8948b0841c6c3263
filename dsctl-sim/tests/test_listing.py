"""Pagination snapshots, the 410 for a token without one, and the request log's cursor, in process."""

from __future__ import annotations

import pytest

from dsctl_sim.errors import BadRequest, Gone
from dsctl_sim.listing import Paginator
from dsctl_sim.requestlog import RequestLog
from dsctl_sim.watch import Doc


def _docs(names: list[str]) -> list[Doc]:
    return [Doc({"metadata": {"namespace": "default", "name": n}}) for n in names]


def _names(docs: list[Doc]) -> list[str]:
    return [d.obj["metadata"]["name"] for d in docs]


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_pages_come_from_one_snapshot() -> None:
    """Continue pages serve the first page's snapshot even if the live list changed."""
    pager = Paginator()
    first = pager.first(_docs(["a", "b", "c", "d", "e"]), 10, limit=2, scope="s")
    assert _names(first.docs) == ["a", "b"] and first.remaining == 3

    def relist() -> tuple[list[Doc], int]:
        raise AssertionError("the snapshot should serve this page")

    second = pager.next(first.token, limit=2, scope="s", relist=relist)
    third = pager.next(second.token, limit=2, scope="s", relist=relist)
    assert _names(second.docs) == ["c", "d"] and _names(third.docs) == ["e"]
    assert third.token == "" and second.rv == third.rv == 10


def _no_relist() -> tuple[list[Doc], int]:
    raise AssertionError("a consistent token never reads the current list")


def test_expired_snapshot_is_gone_with_an_inconsistent_token() -> None:
    """Without its snapshot a token is 410, never a page of the current state (which, joined to
    the first page and watched from its newer resourceVersion, would hide the changes in the
    first page); the 410 hands out the inconsistent token for the rest, as kube-apiserver."""
    clock = _Clock()
    pager = Paginator(ttl_seconds=60, now=clock)
    first = pager.first(_docs(["a", "b", "c", "d"]), 10, limit=2, scope="s")
    clock.t = 120
    with pytest.raises(Gone) as caught:
        pager.next(first.token, limit=10, scope="s", relist=_no_relist)
    status = caught.value.to_status()
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert "too old to display a consistent list result" in status["message"]
    inconsistent = status["metadata"]["continue"]
    rest = pager.next(inconsistent, limit=10, scope="s", relist=lambda: (_docs(["a", "aa", "c", "d", "e"]), 12))
    assert _names(rest.docs) == ["c", "d", "e"] and rest.token == "" and rest.rv == 12


def test_inconsistent_continuation_pages_on() -> None:
    """The rest of an inconsistent list is itself paged, from one snapshot of the current state."""
    pager = Paginator()
    first = pager.first(_docs(["a", "b", "c"]), 10, limit=1, scope="s")
    pager.compact()
    with pytest.raises(Gone) as caught:
        pager.next(first.token, limit=1, scope="s", relist=_no_relist)
    token = caught.value.to_status()["metadata"]["continue"]
    second = pager.next(token, limit=1, scope="s", relist=lambda: (_docs(["a", "b", "c"]), 15))
    third = pager.next(second.token, limit=1, scope="s", relist=_no_relist)
    assert _names(second.docs) == ["b"] and _names(third.docs) == ["c"] and second.rv == third.rv == 15


def test_token_from_another_query_is_gone() -> None:
    """A token sent with other selectors than its first page's cannot be served from its snapshot."""
    pager = Paginator()
    first = pager.first(_docs(["a", "b", "c"]), 10, limit=1, scope="s")
    with pytest.raises(Gone):
        pager.next(first.token, limit=1, scope="other", relist=_no_relist)


def test_snapshot_count_is_bounded() -> None:
    """Only max_snapshots snapshots are kept; the oldest token is then refused with 410."""
    pager = Paginator(max_snapshots=2)
    tokens = [pager.first(_docs(["a", "b", "c"]), 10, limit=1, scope="s").token for _ in range(3)]
    with pytest.raises(Gone):
        pager.next(tokens[0], limit=1, scope="s", relist=_no_relist)
    assert _names(pager.next(tokens[2], limit=1, scope="s", relist=_no_relist).docs) == ["b"]


@pytest.mark.parametrize("token", [
    pytest.param("!!!", id="not-base64"),
    pytest.param("eyJ4IjoxfQ", id="missing-fields"),
])
def test_garbled_tokens_are_bad_requests(token: str) -> None:
    """A token that does not decode is a 400."""
    with pytest.raises(BadRequest):
        Paginator().next(token, limit=1, scope="s", relist=lambda: ([], 0))


def _log(log: RequestLog, n: int) -> None:
    for i in range(n):
        log.add(method="GET", path=f"/p{i}", verb="get", group="", resource="pods", subresource="",
                namespace="default", name=f"p{i}", code=200, user_agent="ua", latency_ms=1.0)


def test_request_log_cursor_and_wraparound() -> None:
    """Readers see each record once; after the ring wraps, ``dropped`` counts what they missed."""
    log = RequestLog(capacity=5)
    _log(log, 3)
    page = log.since(0)
    assert [r["name"] for r in page["items"]] == ["p0", "p1", "p2"] and page["dropped"] == 0
    _log(log, 6)
    later = log.since(page["next"])
    assert [r["seq"] for r in later["items"]] == [5, 6, 7, 8, 9]
    assert later["dropped"] == 1 and later["next"] == 9
    assert log.since(later["next"])["items"] == []
    assert [r["seq"] for r in log.since(6, limit=2)["items"]] == [7, 8]
