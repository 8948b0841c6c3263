"""``running_view``: the view's parts started in order and stopped in reverse.

Shared by ``dsctl view`` and ``dsctl sim`` (which serves the view beside the simulated
cluster). Order: the client (bad kubeconfig fails here), the listener (a busy port fails
here, before any request), one read to check the cluster answers and serves the DaemonSet
kind asked for, then the informers and the flush task. Stopping runs the other way, each
step even if an earlier one failed.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass

from dsctl import __version__
from dsctl.app.collector import tune_collector
from dsctl.app.preflight import preflight
from dsctl.daemonset.readinessgate import DEFAULT_TAINT, ReadinessTaint
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import Resource
from dsctl.view.planfile import PlanOverlay
from dsctl.view.server import DEFAULT_PERIOD, ViewServer
from dsctl.view.source import ClusterSource, read_pod_events

__all__ = ["USER_AGENT", "RunningView", "running_view"]

USER_AGENT = f"dsctl-view/{__version__}"
"""What the view's requests say they are (request logs tell its reads from the controller's)."""


@dataclass(frozen=True, slots=True)
class RunningView:
    """A started view: its URL, server and cluster source."""

    url: str
    server: ViewServer
    source: ClusterSource


@contextlib.asynccontextmanager
async def running_view(
    *,
    resource: Resource,
    kubeconfig: str | None = None,
    context: str | None = None,
    namespace: str | None = None,
    plan: PlanOverlay | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    period: float = DEFAULT_PERIOD,
    own_process: bool = False,
    readiness_taint: ReadinessTaint | None = DEFAULT_TAINT,
) -> AsyncIterator[RunningView]:
    """Serve the view of the cluster ``kubeconfig``/``context`` reaches until the block exits.

    Raises ``dsctl.kube.errors.KubeError`` (configuration, unreachable cluster, kind not
    served) or ``OSError`` (cannot listen) before yielding; nothing is left running then.
    ``own_process`` tunes the cyclic garbage collector for the caches, as ``dsctl run`` does
    (``dsctl.app.collector``); leave it off when sharing a process with the controller.
    ``readiness_taint`` is the controller's ``--readiness-taint`` (None: no gate).
    """
    if own_process:
        tune_collector()
    client = await KubeClient.from_config(kubeconfig=kubeconfig, context=context, user_agent=USER_AGENT)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(client.close)
        source = ClusterSource(client, resource, namespace=namespace, plan=plan, freeze_after_sync=own_process,
                               readiness_taint=readiness_taint)
        server = ViewServer(source.model, read_events=functools.partial(read_pod_events, client), period=period)
        url = await server.start(host=host, port=port)
        stack.push_async_callback(server.stop)
        await preflight(client, resource, namespace=namespace)
        source.start()
        stack.push_async_callback(source.stop)
        yield RunningView(url=url, server=server, source=source)
