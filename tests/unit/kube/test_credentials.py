"""The credential cache (``dsctl.kube.credentials``): skew, single flight, failures, 401 renewal.

A fake token source at the seam counts fetches; time is an injected clock, so nothing sleeps.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsctl.kube.credentials import CachedCredentials, FileTokenSource, Token, jwt_expiry
from dsctl.kube.errors import ConnectionFailed


class Clock:
    """Wall time that moves only when told."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class FakeSource:
    """Hands out ``tok-<n>`` valid for ``lifetime`` seconds; can be made to fail or to block."""

    kind = "fake"

    def __init__(self, *, lifetime: float | None = 600.0) -> None:
        self.lifetime = lifetime
        self.fetches = 0
        self.fail: Exception | None = None
        self.gate: asyncio.Event | None = None

    async def fetch(self, *, now: float) -> Token:
        self.fetches += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return Token(f"tok-{self.fetches}", obtained=now,
                     expiry=None if self.lifetime is None else now + self.lifetime)


@pytest.mark.parametrize(("lifetime", "renew_before"), [
    pytest.param(3600.0, 60.0, id="hour-60s"),
    pytest.param(900.0, 60.0, id="15min-60s"),
    pytest.param(300.0, 30.0, id="5min-30s"),
    pytest.param(120.0, 12.0, id="2min-12s"),
    pytest.param(10.0, 1.0, id="10s-1s"),
    pytest.param(0.0, 0.0, id="expired-on-arrival"),
])
def test_renewal_skew(lifetime: float, renew_before: float) -> None:
    """A token is renewed min(60 s, lifetime / 10) before it expires."""
    token = Token("t", obtained=100.0, expiry=100.0 + lifetime)
    assert token.renew_at == pytest.approx(100.0 + lifetime - renew_before)


def test_no_expiry_never_renews() -> None:
    """A token without an expiry is used until a 401."""
    assert Token("t", obtained=0.0).renew_at is None


@pytest.mark.parametrize(("advance", "fetches"), [
    pytest.param(0.0, 1, id="fresh"),
    pytest.param(539.0, 1, id="before-skew"),
    pytest.param(541.0, 2, id="inside-skew"),
    pytest.param(700.0, 2, id="expired"),
])
async def test_refresh_when_due(advance: float, fetches: int) -> None:
    """The cached token is reused until expiry minus the skew, then fetched once."""
    clock, source = Clock(), FakeSource(lifetime=600.0)
    creds = CachedCredentials(source, clock=clock)
    await creds.token()
    clock.now += advance
    await creds.token()
    assert source.fetches == fetches


async def test_fifty_waiters_share_one_refresh() -> None:
    """Fifty callers that find the token due wait for a single fetch and all get its token."""
    clock, source = Clock(), FakeSource()
    creds = CachedCredentials(source, clock=clock, initial=Token("old", obtained=clock.now, expiry=clock.now))
    source.gate = asyncio.Event()
    waiters = [asyncio.create_task(creds.token()) for _ in range(50)]
    await asyncio.sleep(0)  # let every waiter reach the refresh in flight
    source.gate.set()
    assert set(await asyncio.gather(*waiters)) == {"tok-1"}
    assert source.fetches == 1


async def test_failed_refresh_keeps_unexpired_token() -> None:
    """A refresh failing inside the skew keeps the cached token and waits 5 s before trying again."""
    clock, source = Clock(), FakeSource(lifetime=600.0)
    creds = CachedCredentials(source, clock=clock)
    assert await creds.token() == "tok-1"
    clock.now += 580.0
    source.fail = RuntimeError("plugin down")
    assert await creds.token() == "tok-1"
    assert await creds.token() == "tok-1"
    assert source.fetches == 2
    clock.now += 6.0
    source.fail = None
    assert await creds.token() == "tok-3"


async def test_failed_refresh_without_usable_token_raises() -> None:
    """With nothing unexpired cached, a failing source fails the request with ConnectionFailed."""
    clock, source = Clock(), FakeSource()
    source.fail = RuntimeError("plugin down")
    creds = CachedCredentials(source, clock=clock)
    with pytest.raises(ConnectionFailed, match="plugin down"):
        await creds.token()


async def test_rejection_renews_once_for_all_reporters() -> None:
    """Many 401s for the same token cause one fetch; a later report of the old token fetches nothing."""
    clock, source = Clock(), FakeSource(lifetime=None)
    creds = CachedCredentials(source, clock=clock)
    assert await creds.token() == "tok-1"
    retries = await asyncio.gather(*(creds.rejected("tok-1") for _ in range(20)))
    assert set(retries) == {"tok-2"}
    assert await creds.rejected("tok-1") == "tok-2"
    assert source.fetches == 2


async def test_rejection_without_a_new_token_gives_none() -> None:
    """When the source hands back the rejected token, there is nothing to retry with."""
    clock = Clock()

    class Same(FakeSource):
        async def fetch(self, *, now: float) -> Token:
            self.fetches += 1
            return Token("same", obtained=now)

    creds = CachedCredentials(Same(), clock=clock)
    assert await creds.token() == "same"
    assert await creds.rejected("same") is None


@pytest.mark.parametrize(("content", "fallback", "expected"), [
    pytest.param("abc\n", None, "abc", id="trimmed"),
    pytest.param(None, "static", "static", id="missing-file-falls-back"),
    pytest.param("  \n", "static", "static", id="empty-file-falls-back"),
])
async def test_file_token_source(tmp_path: Path, content: str | None, fallback: str | None, expected: str) -> None:
    """A token file is trimmed and trusted for 60 s; the kubeconfig's token stands in when unreadable."""
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    token = await FileTokenSource(str(path), fallback=fallback).fetch(now=10.0)
    assert token.value == expected
    assert token.expiry == 70.0


async def test_file_token_reread_after_period(tmp_path: Path) -> None:
    """A rewritten token file is picked up within a minute, without any 401."""
    path = tmp_path / "token"
    path.write_text("one")
    clock = Clock()
    creds = CachedCredentials(FileTokenSource(str(path)), clock=clock)
    assert await creds.token() == "one"
    path.write_text("two")
    clock.now += 30.0
    assert await creds.token() == "one"
    clock.now += 25.0  # 55 s: inside the 6 s skew of a 60 s token
    assert await creds.token() == "two"


@pytest.mark.parametrize(("token", "expected"), [
    pytest.param("e30.eyJleHAiOjE3MDAwMDAwMDB9.sig", 1_700_000_000.0, id="exp"),
    pytest.param("e30.e30.sig", None, id="no-exp"),
    pytest.param("opaque-token", None, id="not-a-jwt"),
    pytest.param("a.!!!.c", None, id="bad-base64"),
])
def test_jwt_expiry(token: str, expected: float | None) -> None:
    """The exp claim of an OIDC id-token sets its expiry; anything else has none."""
    assert jwt_expiry(token) == expected
