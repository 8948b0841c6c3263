"""``dsctl plan -f FILE`` (also ``kubectl dsctl plan -f FILE``): the argparse wiring and the
blocking entry point.

Exit codes follow ``terraform plan -detailed-exitcode``: 0 nothing would change, 2 something
would (the object, or any pod), 1 an error, which is one line on stderr. A flag nobody takes
is an error too (1, not argparse's usual 2, which would read as "changes").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import yaml

from dsctl import __version__
from dsctl.daemonset.readinessgate import DEFAULT_READINESS_TAINT, ReadinessTaint, parse_readiness_taint
from dsctl.kube import errors
from dsctl_api.argtypes import int_range, non_negative

__all__ = ["EXIT_CHANGES", "EXIT_ERROR", "EXIT_NO_CHANGES", "add_readiness_taint", "register"]

EXIT_NO_CHANGES = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2


def _readiness_taint(text: str) -> ReadinessTaint | None:
    try:
        return parse_readiness_taint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_readiness_taint(parser: argparse.ArgumentParser) -> None:
    """``--readiness-taint``, with ``dsctl run``'s default and parser: the taint every daemon pod
    the controller creates tolerates, so a node that carries it still gets the pod."""
    parser.add_argument("--readiness-taint", type=_readiness_taint, default=DEFAULT_READINESS_TAINT,
                        metavar="KEY[:EFFECT]",
                        help="the controller's --readiness-taint (effect NoSchedule unless given): every daemon "
                        "pod tolerates it, so a node that carries it still gets the pod; empty: the controller "
                        "runs without the gate")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``plan``."""
    plan = subparsers.add_parser(
        "plan", help="show what applying a DaemonSet manifest would do (read-only; also 'kubectl dsctl plan')",
        description="A dry run of a DaemonSet manifest (apps/v1 or dsctl.io/v1) against the cluster, computed by "
        "the controller's own planners: the nodes that gain, lose or keep a pod and why, the pods that change "
        "revision, the waves of the rolling update, and the risks. Read-only: it lists and gets, and never writes. "
        "Exit codes: 0 no change, 2 changes, 1 error.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, error_status=EXIT_ERROR,
    )
    plan.add_argument("-f", "--filename", required=True, metavar="FILE",
                      help="the DaemonSet manifest (YAML or JSON; - reads standard input)")
    plan.add_argument("-n", "--namespace", default="",
                      help="namespace (default: the file's, else the context's, else 'default')")
    plan.add_argument("--kubeconfig", default="", help="path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    plan.add_argument("--context", default="", help="kubeconfig context (default: the current one)")
    plan.add_argument("-o", "--output", default="table", choices=("table", "json", "yaml"),
                      help="table for people; json or yaml for machines (schema: dsctl/plan/plan.schema.json)")
    plan.add_argument("--show-nodes", action="store_true",
                      help="list every node of every group and wave (the table shows a few)")
    plan.add_argument("--pod-startup", type=non_negative, default=None, metavar="SECONDS",
                      help="seconds a pod takes from creation to Ready (default: the median of the live pods)")
    plan.add_argument("--burst-replicas", type=int_range(1), default=250,
                      help="the controller's --burst-replicas: most pod creates or deletes per sync")
    plan.add_argument("--max-waves", type=int_range(1), default=100,
                      help="simulate at most this many waves of the rolling update; the rest are listed in update "
                      "order and counted in the estimate")
    add_readiness_taint(plan)
    plan.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """Make and print the plan; 0, 2 or 1 (see the module docstring)."""
    from dsctl.plan.manifest import ManifestError, load_manifest
    from dsctl.rollout.cli import _context_namespace

    try:
        manifest = load_manifest(args.filename, namespace=args.namespace or None,
                                 context_namespace=_context_namespace(args.kubeconfig, args.context))
    except ManifestError as exc:
        print(f"dsctl plan: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        doc = asyncio.run(_plan(args, manifest))
    except (errors.KubeError, ValueError) as exc:
        print(f"dsctl plan: {errors.one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    if args.output == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif args.output == "yaml":
        sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
    else:
        from dsctl.plan.render import render_table

        sys.stdout.write(render_table(doc, all_names=args.show_nodes))
    return EXIT_CHANGES if doc["changes"] else EXIT_NO_CHANGES


async def _plan(args: argparse.Namespace, manifest: Any) -> dict[str, Any]:
    from dsctl.kube.client import KubeClient
    from dsctl.plan.report import Options, make_plan
    from dsctl.plan.snapshot import read_cluster, read_only

    client = await KubeClient.from_config(kubeconfig=args.kubeconfig or None, context=args.context or None,
                                          user_agent=f"dsctl-plan/{__version__}", qps=100, burst=200)
    client.write_fence = read_only
    async with client:
        cluster = await read_cluster(client, manifest)
    options = Options(now=time.time(), burst=args.burst_replicas, pod_startup=args.pod_startup,
                      max_waves=args.max_waves, readiness_taint=args.readiness_taint)
    return make_plan(manifest, cluster, options)

