"""``dsctl view`` (also ``kubectl dsctl view``): the argparse wiring and the blocking entry point."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from dsctl.kube import errors
from dsctl.kube.resources import DAEMONSETS, crd_daemonsets
from dsctl.plan.cli import add_readiness_taint
from dsctl_api.argtypes import int_range

__all__ = ["DEFAULT_PORT", "register"]

DEFAULT_PORT = 8089


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``view``."""
    view = subparsers.add_parser(
        "view", help="a live, read-only web page of DaemonSets x nodes (also 'kubectl dsctl view')",
        description="Serve a local web page showing every DaemonSet's pod on every node, live from the "
        "cluster's watch. Read-only: it lists and watches, and never writes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    view.add_argument("--kubeconfig", default="", help="path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    view.add_argument("--context", default="", help="kubeconfig context (default: the current one)")
    view.add_argument("-n", "--namespace", default="", help="show the DaemonSets of one namespace (default: all)")
    view.add_argument("--resource", default="apps/v1", choices=["apps/v1", "dsctl.io/v1"],
                      help="the DaemonSet kind to show: apps/v1 or dsctl's custom resource")
    view.add_argument("--address", default="127.0.0.1",
                      help="address to listen on; anything but loopback exposes the cluster's state to the network")
    view.add_argument("--port", type=int_range(0, 65535), default=DEFAULT_PORT,
                      help="port to listen on (0: any free port)")
    view.add_argument("--plan", type=Path, default=None,
                      help="a saved 'dsctl plan -o json' whose planned waves the page can overlay")
    add_readiness_taint(view)
    view.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"),
                      help="log level (logs go to stderr)")
    view.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM; 0 then, 1 for a cluster error, 2 for bad input."""
    from dsctl.app.logging import configure_logging
    from dsctl.view.planfile import PlanError, load_plan

    configure_logging(fmt="console", level=args.log_level, stream=sys.stderr)
    try:
        plan = load_plan(args.plan) if args.plan is not None else None
    except PlanError as exc:
        print(f"dsctl view: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_serve(args, plan))
    except errors.KubeError as exc:
        print(f"dsctl view: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"dsctl view: --address {args.address} --port {args.port}: cannot listen: "
              f"{exc.strerror or exc}; choose another with --port (0: any free port)", file=sys.stderr)
        return 2


async def _serve(args: argparse.Namespace, plan: Any) -> int:
    from dsctl.view.app import running_view

    resource = crd_daemonsets() if args.resource == "dsctl.io/v1" else DAEMONSETS
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with running_view(resource=resource, kubeconfig=args.kubeconfig or None, context=args.context or None,
                            namespace=args.namespace or None, plan=plan, host=args.address, port=args.port,
                            own_process=True, readiness_taint=args.readiness_taint) as view:
        scope = f"namespace {args.namespace}" if args.namespace else "all namespaces"
        print(f"dsctl view: {view.url} ({args.resource} DaemonSets, {scope}; read-only; Ctrl-C to stop)",
              flush=True)
        await stop.wait()
    return 0
