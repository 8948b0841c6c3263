"""``dsctl rollout VERB DAEMONSET``: the argparse wiring, also serving ``kubectl dsctl rollout``.

kubectl runs a plugin with the words after ``kubectl dsctl``, so ``kubectl dsctl rollout pause
ds/agent -n kube-system`` reaches this module as ``rollout pause ds/agent -n kube-system``, and
``$KUBECONFIG`` carries over from kubectl's environment.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from dsctl import __version__
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.rollout.commands import VERBS, Options, run_verb
from dsctl.rollout.target import TargetError, parse_target

__all__ = ["register"]

_HELP = {
    "status": "show the rollout's progress until it finishes",
    "history": "list the DaemonSet's revisions",
    "undo": "roll back to a previous revision",
    "pause": "hold the rolling update: no pod is deleted or updated",
    "resume": "let a paused rolling update go on",
    "restart": "replace every pod with a fresh one",
}


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``rollout`` with one subcommand per verb."""
    rollout = subparsers.add_parser(
        "rollout", help="manage a DaemonSet's rollout (both modes; also 'kubectl dsctl rollout')",
        description="kubectl rollout for dsctl's DaemonSets: apps/v1 (ds/NAME) and dsctl.io/v1 (dds/NAME).",
    )
    verbs = rollout.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in VERBS:
        p = verbs.add_parser(verb, help=_HELP[verb], description=_HELP[verb],
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        p.add_argument("daemonset", metavar="DAEMONSET",
                       help="ds/NAME or daemonset.apps/NAME (apps/v1), dds/NAME (dsctl.io/v1), or NAME")
        p.add_argument("-n", "--namespace", default="", help="namespace (default: the context's, else 'default')")
        p.add_argument("--kubeconfig", default="", help="path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
        p.add_argument("--context", default="", help="kubeconfig context (default: the current one)")
        p.add_argument("--resource", default="apps/v1", choices=["apps/v1", "dsctl.io/v1"],
                       help="the DaemonSet kind a bare NAME means")
        if verb == "status":
            p.add_argument("-w", "--watch", default=True, action=argparse.BooleanOptionalAction,
                           help="watch until the rollout finishes")
            p.add_argument("--timeout", type=float, default=0.0, help="seconds to wait; 0 waits for ever")
        if verb == "history":
            p.add_argument("--revision", type=int, default=0, help="print this revision's pod template")
        if verb == "undo":
            p.add_argument("--to-revision", type=int, default=0, help="the revision to roll back to (0: previous)")
        p.set_defaults(handler=_main)


def _context_namespace(kubeconfig: str, context: str) -> str:
    """The namespace of the kubeconfig context in use, as kubectl picks it; '' when none."""
    paths = [kubeconfig] if kubeconfig else (os.environ.get("KUBECONFIG") or "").split(os.pathsep)
    paths = [p for p in paths if p] or [str(Path.home() / ".kube" / "config")]
    for path in paths:
        try:
            doc: Any = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue
        name = context or doc.get("current-context") or ""
        for entry in doc.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                return str((entry.get("context") or {}).get("namespace") or "")
    return ""


def _main(args: argparse.Namespace) -> int:
    namespace = args.namespace or _context_namespace(args.kubeconfig, args.context) or "default"
    try:
        target = parse_target(args.daemonset, namespace=namespace, resource=args.resource)
    except TargetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    options = Options(watch=getattr(args, "watch", True), timeout=getattr(args, "timeout", 0.0),
                      revision=getattr(args, "revision", 0), to_revision=getattr(args, "to_revision", 0))
    return asyncio.run(_run(args, target, options))


async def _run(args: argparse.Namespace, target: Any, options: Options) -> int:
    try:
        client = await KubeClient.from_config(kubeconfig=args.kubeconfig or None, context=args.context or None,
                                              user_agent=f"dsctl-rollout/{__version__}")
    except errors.KubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    async with client:
        return await run_verb(args.verb, client, target, options)
