"""A 401 makes the transport renew the credentials once and retry once, for any verb.

The real client against the scriptable server on loopback; the token comes from a ``tokenFile``
the test rewrites, so the renewal is observable in the ``Authorization`` header of each attempt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from dsctl.kube import KubeClient, RetryPolicy
from dsctl.kube.errors import Unauthorized
from dsctl.kube.resources import PODS
from tests.unit.kube.fakeserver import FakeServer, Responder, reply, status_body

PODS_PATH = "/api/v1/namespaces/default/pods"
DENIED = reply(401, status_body(401, "Unauthorized", "Unauthorized"))
CREATED = reply(201, {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}})
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}


@pytest.fixture
async def token_client(server: FakeServer, tmp_path: Path) -> AsyncIterator[tuple[KubeClient, Path]]:
    """A client whose kubeconfig user reads ``tmp_path/token``."""
    token = tmp_path / "token"
    token.write_text("one")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server.url}}],
        "users": [{"name": "u", "user": {"tokenFile": str(token)}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    kube = await KubeClient.from_config(kubeconfig=str(path), qps=0, burst=1, environ={},
                                        registry=CollectorRegistry(),
                                        retry=RetryPolicy(max_attempts=4, backoff_base=0.01, backoff_cap=0.02))
    try:
        yield kube, token
    finally:
        await kube.close()


def _sent(server: FakeServer) -> list[str]:
    return [s.headers.get("Authorization", "") for s in server.requests("POST", PODS_PATH)]


@dataclass(frozen=True)
class Case:
    """The token file's new content (None: unchanged), the server's answers, what must be seen."""

    rewrite: str | None
    responses: tuple[Responder, ...]
    sent: tuple[str, ...]
    succeeds: bool


@pytest.mark.parametrize("case", [
    pytest.param(Case("two", (DENIED, CREATED), ("Bearer one", "Bearer two"), True), id="renewed-create-retried"),
    pytest.param(Case(None, (DENIED, CREATED), ("Bearer one",), False), id="same-token-not-retried"),
    pytest.param(Case("two", (DENIED, DENIED, CREATED), ("Bearer one", "Bearer two"), False), id="second-401-raised"),
])
async def test_create_after_401(server: FakeServer, token_client: tuple[KubeClient, Path], case: Case) -> None:
    """A create rejected with 401 is sent again only with a renewed token, and only once."""
    kube, token = token_client
    if case.rewrite is not None:
        token.write_text(case.rewrite)
    server.queue("POST", PODS_PATH, *case.responses)
    if case.succeeds:
        assert (await kube.create(PODS, POD, namespace="default"))["metadata"]["name"] == "p"
    else:
        with pytest.raises(Unauthorized):
            await kube.create(PODS, POD, namespace="default")
    assert _sent(server) == list(case.sent)
