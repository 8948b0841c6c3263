"""``dsctl sim serve``: run the simulated cluster until SIGINT or SIGTERM.

When the API server is listening it prints exactly one line on stdout,
``READY url=<url> kubeconfig=<path>``, and flushes; logs go to stderr. ``register`` adds the
subcommand to an argparse subparsers object (``dsctl sim`` and ``python -m dsctl_sim`` both
use it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys
from typing import Any

import structlog

from dsctl_api.argtypes import int_range, non_negative
from dsctl_sim.cluster import SimCluster, SimOptions
from dsctl_sim.controllers.nodelifecycle import DEFAULT_GRACE_SECONDS
from dsctl_sim.faults import FaultConfig, parse_error_rule

__all__ = ["options_from_args", "register", "serve_main"]

log = structlog.get_logger(__name__)


def _error_rule(text: str) -> object:
    try:
        return parse_error_rule(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def register(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand; its ``handler`` default runs it and returns the exit code."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="run only the simulated cluster (API server + control plane)",
        description="Serve a simulated Kubernetes API until SIGINT/SIGTERM. Prints "
        "'READY url=<url> kubeconfig=<path>' once listening.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="listen address")
    p.add_argument("--port", type=int_range(0, 65535), default=0, help="listen port (0 = any free port)")
    p.add_argument("--nodes", type=int_range(0), default=3, help="create Ready nodes node-0..node-{N-1}")
    p.add_argument("--kubeconfig", default=None, help="write a kubeconfig here (context dsctl-sim)")
    p.add_argument("--pod-startup-seconds", type=non_negative, default=1.0,
                   help="default delay until a bound pod is Running and Ready")
    p.add_argument("--seed", type=int, default=None, help="seed for names, UIDs and fault dice")
    p.add_argument("--fault-error-rate", action="append", type=_error_rule, default=[],
                   metavar="VERB:RESOURCE:CODE:RATE[:RETRY_AFTER]",
                   help="fail RATE (0..1) of VERB requests on RESOURCE with CODE (500, 429, 409...); "
                   "VERB/RESOURCE may be '*'; RETRY_AFTER (seconds) for this rule's 429s; repeatable")
    p.add_argument("--latency-ms", type=non_negative, default=0.0, help="added latency per request")
    p.add_argument("--watch-event-latency-ms", type=non_negative, default=0.0,
                   help="added latency before each batch of watch events")
    p.add_argument("--watch-drop-seconds", type=non_negative, default=0.0,
                   help="close every watch stream after this long (0 = never)")
    p.add_argument("--gone-as-http", action="store_true",
                   help="answer too-old watch resourceVersions with HTTP 410 instead of an ERROR event")
    p.add_argument("--history-size", type=int_range(1), default=50_000, help="watch events kept per resource type")
    p.add_argument("--bookmark-seconds", type=non_negative, default=15.0, help="interval between watch bookmarks")
    p.add_argument("--token", default=None,
                   help="accept only this bearer token on the API (others get 401); default: any. "
                   "kubectl sends no token over plain http, so use it for token-auth tests of other clients")
    p.add_argument("--node-monitor-grace-seconds", type=non_negative, default=DEFAULT_GRACE_SECONDS,
                   help="seconds without a kubelet heartbeat (a kubelet stopped through the admin API) before "
                   "the node lifecycle marks the node Unknown; kube-controller-manager's "
                   "--node-monitor-grace-period is 50s (40s before Kubernetes 1.32)")
    p.add_argument("--max-termination-seconds", type=non_negative, default=1.0,
                   help="cap on every pod's graceful termination by a running kubelet (tests stay quick); a "
                   "stopped kubelet still keeps its deleted pods Terminating")
    p.add_argument("--no-control-plane", action="store_true",
                   help="serve the API only: no scheduler, kubelet, node lifecycle or GC")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                   help="log level of the simulator's own log (stderr)")
    p.set_defaults(handler=serve_main)
    return p


def options_from_args(args: argparse.Namespace) -> SimOptions:
    """``SimOptions`` from parsed ``serve`` arguments."""
    if args.nodes < 0:
        raise ValueError("--nodes must not be negative")
    faults = FaultConfig(
        errors=list(args.fault_error_rate),
        latency_ms=args.latency_ms,
        watch_event_latency_ms=args.watch_event_latency_ms,
        watch_drop_seconds=args.watch_drop_seconds,
        gone_as_http=args.gone_as_http,
    )
    return SimOptions(
        host=args.host, port=args.port, nodes=args.nodes, kubeconfig=args.kubeconfig,
        pod_startup_seconds=args.pod_startup_seconds, seed=args.seed, faults=faults,
        history_size=args.history_size, bookmark_seconds=args.bookmark_seconds,
        control_plane=not args.no_control_plane, token=args.token or None,
        node_monitor_grace_seconds=args.node_monitor_grace_seconds,
        max_termination_seconds=args.max_termination_seconds,
    )


def _configure_logging(level_name: str) -> None:
    level = getattr(logging, level_name.upper())
    logging.basicConfig(level=level, stream=sys.stderr, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"]),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


async def _freeze_periodically(interval: float = 20.0) -> None:
    # Stored objects are acyclic and long-lived; a full collection over 150,000 pods takes
    # about a second. Moving survivors to the permanent generation keeps every collection
    # small. Cyclic garbage frozen by mistake is a bounded leak (a few in-flight requests).
    while True:
        await asyncio.sleep(interval)
        gc.freeze()


async def _serve(options: SimOptions) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    cluster = SimCluster(options)
    freezer: asyncio.Task[None] | None = None
    try:
        url = await cluster.start()
        # Objects created so far live for the whole run: keep them out of the cyclic GC's scans.
        gc.freeze()
        print(f"READY url={url} kubeconfig={cluster.kubeconfig or ''}", flush=True)
        freezer = asyncio.create_task(_freeze_periodically(), name="sim-gc-freeze")
        await stop.wait()
        log.info("sim_shutdown_requested")
    finally:
        if freezer is not None:
            freezer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await freezer
        await cluster.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def serve_main(args: argparse.Namespace) -> int:
    """Run ``serve`` with parsed arguments; returns the exit code."""
    _configure_logging(args.log_level)
    try:
        options = options_from_args(args)
    except ValueError as err:
        print(f"dsctl sim serve: {err}", file=sys.stderr)
        return 2
    # Large simulated clusters hold millions of small containers; scan the young generation
    # less often so the collector does not stall request handling.
    gc.set_threshold(50_000, 50, 100)
    try:
        asyncio.run(_serve(options))
    except OSError as err:
        reason = " ".join((err.strerror or str(err)).split())
        print(f"dsctl sim serve: cannot listen on {args.host}:{args.port}: {reason}; "
              "choose another --host/--port (--port 0 picks a free port)", file=sys.stderr)
        return 2
    return 0
