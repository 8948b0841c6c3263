"""The first request of ``dsctl run``: can this identity list the DaemonSets it should reconcile?

A bad token, an unreachable server or a missing CRD should end start-up with one line that says
what was tried and what to do, not a bare ``404 NotFound`` (ADR 0040). A 404 on the collection
means the API server does not serve that group/version/resource: in CRD mode, the CRD is not
installed.

A server that answers but is overloaded (429, 5xx after the client's own retries) is not a
misconfiguration: start-up keeps trying for ``OVERLOAD_PATIENCE`` seconds before giving up, as a
controller started during an apiserver restart or a throttling storm should. A server that
cannot be reached at all (refused, reset, timed out) may be restarting too: start-up waits for
it ``UNREACHABLE_PATIENCE`` seconds, as kube-controller-manager waits for the API server's
``/healthz`` before it starts, so a wrong address still ends start-up within seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.ratelimit import Backoff
from dsctl.kube.resources import DAEMONSETS, Resource

__all__ = ["CRD_MANIFEST", "OVERLOAD_PATIENCE", "UNREACHABLE_PATIENCE", "preflight"]

CRD_MANIFEST = "manifests/crd/daemonsets.dsctl.io.yaml"
OVERLOAD_PATIENCE = 60.0
"""Seconds start-up waits out a server answering 429 or 5xx."""
UNREACHABLE_PATIENCE = 10.0
"""Seconds start-up waits for a server it cannot connect to: kube-controller-manager's wait for
``/healthz`` at start-up. A controller restarted inside an API server's restart sees a few
seconds of refused connections and must not exit; a typo in the server's address is still told
within seconds (ADR 0085)."""


def overload_backoff() -> Backoff:
    """Start-up's retry delays: 0.5 s doubling to 5 s, jittered so replicas started together
    (a rollout of the controller's Deployment) do not retry in step."""
    return Backoff(base=0.5, cap=5.0)


log = structlog.get_logger(__name__)


async def preflight(
    client: KubeClient, resource: Resource, *, namespace: str | None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    backoff: Backoff | None = None,
) -> None:
    """List one DaemonSet; raises ``errors.ConfigError`` with a hint when the kind is not served.

    Between tries it waits ``backoff``'s next delay (``overload_backoff()`` by default), or the
    server's ``Retry-After`` when that is longer. Each kind of failure is given up on once its
    own patience, counted from the first try, would run out during the next wait.
    """
    start = monotonic()
    delays = backoff if backoff is not None else overload_backoff()
    while True:
        try:
            await _list_one(client, resource, namespace=namespace)
            return
        except (errors.TooManyRequests, errors.ServerError, errors.ConnectionFailed) as exc:
            unreachable = isinstance(exc, errors.ConnectionFailed)
            patience = UNREACHABLE_PATIENCE if unreachable else OVERLOAD_PATIENCE
            delay = max(delays.next_delay(), exc.retry_after or 0.0)
            if monotonic() - start + delay > patience:
                raise
            log.info("preflight.unreachable" if unreachable else "preflight.overloaded", status=exc.status,
                     reason=exc.reason, retry_in=round(delay, 3))
            await sleep(delay)


async def _list_one(client: KubeClient, resource: Resource, *, namespace: str | None) -> None:
    try:
        await client.list(resource, namespace=namespace, limit=1)
    except errors.NotFound as exc:
        url = f"{client.host.rstrip('/')}{resource.path(namespace=namespace)}?limit=1"
        if resource == DAEMONSETS:
            hint = "this API server does not serve apps/v1 DaemonSets"
        else:
            hint = (f"the CustomResourceDefinition daemonsets.{resource.group} is not installed; install it with "
                    f"'kubectl apply -f {CRD_MANIFEST}' (or 'kubectl apply -k manifests/'), "
                    f"or reconcile apps/v1 DaemonSets with --resource apps/v1")
        raise errors.ConfigError(f"--resource {resource.api_version}: GET {url} answered "
                                 f"{exc.status} {exc.reason}: {hint}") from None
