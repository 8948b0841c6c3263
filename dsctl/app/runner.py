"""``dsctl run``: start the components in order, stop them in reverse.

Start order: API client (with a preflight request, so a bad token fails fast with one line),
HTTP endpoints, informers (readiness turns green when their caches sync), event recorder,
leader election on its own client, and only once leading, the workers. With leader election
every write of the workers' client passes a :class:`~dsctl.kube.fence.WriteFence` that the
elector keeps open only while the Lease is trusted. Shutdown (SIGTERM, SIGINT) runs the stack
backwards: stop intake and drain in-flight syncs within ``shutdown_timeout``, release the
lease, stop informers, close the HTTP server and the clients. A lost Lease (``on_lost``)
cancels in-flight syncs at once instead of draining them, and the process exits 1.
Every component is pushed on one ``AsyncExitStack``, so a failure half-way through start-up
still tears down exactly what was started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable

import structlog
from prometheus_client import Info, disable_created_metrics

from dsctl import __version__
from dsctl.app.collector import CollectionTimer, freeze_caches, freeze_relisted, tune_collector
from dsctl.app.config import RESOURCE_CRD, Settings
from dsctl.app.health import HealthChecks
from dsctl.app.http import HttpEndpoints, build_registry
from dsctl.app.leader import LeaderElector, lease_client
from dsctl.app.logging import configure_logging
from dsctl.app.preflight import preflight
from dsctl.controller.controller import DaemonSetController
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.fence import WriteFence
from dsctl.kube.resources import DAEMONSETS, Resource, crd_daemonsets

__all__ = ["main", "run"]

log = structlog.get_logger(__name__)


def identity() -> str:
    """A replica identity: the pod name when set (downward API), else host plus a nonce."""
    base = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{base}_{uuid.uuid4().hex[:8]}"


def daemonset_resource(settings: Settings) -> Resource:
    """The DaemonSet kind this process reconciles."""
    if settings.resource == RESOURCE_CRD:
        return crd_daemonsets()
    return DAEMONSETS


async def run(
    settings: Settings,
    *,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[HttpEndpoints, DaemonSetController], None] | None = None,
) -> int:
    """Run the controller until ``stop`` is set or leadership is lost; returns the exit code."""
    stop = stop or asyncio.Event()
    tune_collector()
    disable_created_metrics()  # type: ignore[no-untyped-call]
    me = identity()
    registry = build_registry()
    gc_timer = CollectionTimer(registry=registry)
    Info("dsctl_build", "Build information.", registry=registry).info(
        {"version": __version__, "python": sys.version.split()[0]}
    )
    health = HealthChecks()
    exit_code = 0
    lost = asyncio.Event()
    async with contextlib.AsyncExitStack() as stack:
        gc_timer.start()
        stack.callback(gc_timer.stop)
        agent = f"dsctl/{__version__} ({me})"
        client = await KubeClient.from_config(
            kubeconfig=settings.kubeconfig or None,
            context=settings.context or None,
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            user_agent=agent,
            registry=registry,
        )
        stack.push_async_callback(client.close)
        # With leader election, every write of the workers' client passes the fence, closed
        # until this process leads and again as soon as it cannot be sure it still does.
        fence = WriteFence(registry=registry) if settings.leader_elect else None
        if fence is not None:
            client.write_fence = fence.check
        resource = daemonset_resource(settings)
        await preflight(client, resource, namespace=settings.namespace or None)

        http = HttpEndpoints(registry=registry, health=health,
                             metrics_address=settings.metrics_bind_address,
                             probe_address=settings.health_probe_bind_address)
        await http.start()
        stack.push_async_callback(http.stop)

        controller = DaemonSetController(client=client, settings=settings, resource=resource,
                                         registry=registry, identity=me)
        await controller.start_informers()
        stack.push_async_callback(controller.stop_informers)
        health.add_liveness("informers", controller.informers_unhealthy)
        health.add_readiness("informers-synced", controller.not_synced)
        if on_ready is not None:
            on_ready(http, controller)

        synced = await _wait_either(controller.wait_for_sync(), stop)
        if not synced:
            return 0
        frozen = freeze_caches()
        log.info("caches_synced", resource=resource.label, namespace=settings.namespace or "*",
                 frozen_objects=frozen)
        controller.caches.on_listed(_freeze_relisted)

        if settings.leader_elect:
            # Its own client: own session and token bucket, no in-place retries, reads bounded
            # by the renew deadline, so renewals never queue behind the workers' writes.
            elector_client = await lease_client(
                kubeconfig=settings.kubeconfig or None,
                context=settings.context or None,
                user_agent=agent,
                renew_deadline=settings.leader_elect_renew_deadline,
                retry_period=settings.leader_elect_retry_period,
                registry=registry,
            )
            stack.push_async_callback(elector_client.close)
            elector = LeaderElector(
                client=elector_client, namespace=settings.leader_elect_namespace, name=settings.leader_elect_id,
                identity=me, lease_duration=settings.leader_elect_lease_duration,
                renew_deadline=settings.leader_elect_renew_deadline,
                retry_period=settings.leader_elect_retry_period, registry=registry, on_lost=lost.set,
                fence=fence,
            )
            election = asyncio.create_task(elector.run(), name="leader-election")

            async def stop_election() -> None:
                election.cancel()
                await asyncio.gather(election, return_exceptions=True)

            stack.push_async_callback(stop_election)
            health.add_liveness("leader-election", elector.unhealthy)
            if not await _wait_either(_leading_or_lost(elector, lost), stop):
                return 0
            if lost.is_set():
                log.error("leader_election_ended_before_leading")
                return 1

        controller.start_workers()

        async def stop_workers() -> None:
            # A leader that lost its lease must stop writing now, not drain: a standby may
            # take over once the lease expires, and renew_deadline < lease_duration is the
            # only margin we have.
            await controller.stop_workers(timeout=0.05 if lost.is_set() else settings.shutdown_timeout)

        stack.push_async_callback(stop_workers)
        health.add_liveness("workers", controller.workers_stuck)
        log.info("controller_started", identity=me, workers=settings.workers)

        await _wait_either(lost.wait(), stop)
        if lost.is_set():
            log.error("shutting_down_after_lost_leadership")
            exit_code = 1
        log.info("shutting_down", deadline_s=settings.shutdown_timeout)
    log.info("stopped", exit_code=exit_code)
    return exit_code


def _freeze_relisted(resource: str) -> None:
    log.info("caches_refrozen", resource=resource, frozen_objects=freeze_relisted())


async def _leading_or_lost(elector: LeaderElector, lost: asyncio.Event) -> None:
    """Return once ``elector`` leads, or once its task ended without ever leading."""
    await _wait_either(elector.wait_leading(), lost)


async def _wait_either(work: Awaitable[object], stop: asyncio.Event) -> bool:
    """Await ``work`` unless ``stop`` is set first; True when ``work`` finished."""
    task: asyncio.Future[object] = asyncio.ensure_future(work)
    stopper: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    for pending in (task, stopper):
        if pending not in done:
            pending.cancel()
    await asyncio.gather(task, stopper, return_exceptions=True)
    return task in done and not task.cancelled()


def main(settings: Settings) -> int:
    """Blocking entry point for the CLI: logging, signals, one-line errors."""
    configure_logging(fmt=settings.log_format, level=settings.log_level)

    async def body() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        return await run(settings, stop=stop)

    try:
        return asyncio.run(body())
    except errors.ConfigError as exc:
        print(f"dsctl run: configuration error: {exc}", file=sys.stderr)
        return 2
    except errors.ApiError as exc:
        print(f"dsctl run: cannot use the API server: {exc}", file=sys.stderr)
        return 1
