"""The elector's own client over real HTTP: one attempt per request, never waiting out Retry-After."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsctl.app.leader import lease_client
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import LEASES
from tests.unit.kube.fakeserver import FakeServer, reply, status_body, write_kubeconfig

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/dsctl"


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    """A scriptable HTTP server on 127.0.0.1."""
    fake = FakeServer()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def client(server: FakeServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """The elector's client as the runner builds it (renew deadline 10 s, retry period 2 s)."""
    path = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    kube = await lease_client(kubeconfig=str(path), context=None, user_agent="dsctl/test (me_0000000a)",
                              renew_deadline=10.0, retry_period=2.0, environ={})
    try:
        yield kube
    finally:
        await kube.close()


FAILURES = [
    pytest.param((429, "TooManyRequests", "60"), errors.TooManyRequests, id="429-retry-after-60"),
    pytest.param((500, "InternalError", ""), errors.ServerError, id="500"),
    pytest.param((503, "ServiceUnavailable", "30"), errors.ServerError, id="503-retry-after-30"),
]


@pytest.mark.parametrize(("answer", "raised"), FAILURES)
async def test_a_failed_lease_request_is_raised_at_once_without_retry(
    server: FakeServer, client: KubeClient, answer: tuple[int, str, str], raised: type[errors.ApiError]
) -> None:
    """A 429 or 5xx on the Lease is raised after one request: no retry, no waiting out Retry-After."""
    code, reason, retry_after = answer
    headers = {"Retry-After": retry_after} if retry_after else None
    server.always("GET", LEASE_PATH, reply(code, status_body(code, reason, "busy"), headers=headers))
    with pytest.raises(raised) as info:
        await client.get(LEASES, "dsctl", namespace="default")
    assert len(server.requests("GET", LEASE_PATH)) == 1
    assert info.value.retry_after == (float(retry_after) if retry_after else None)
