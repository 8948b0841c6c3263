"""The ``dsctl`` command line.

- ``dsctl run``: the controller, against a real cluster or any kubeconfig.
- ``dsctl sim``: the main job on a fresh machine: a simulated cluster, the controller and an
  example DaemonSet, with live progress. ``dsctl sim serve`` runs only the simulated cluster.

Errors a user can fix (bad kubeconfig, bad flag, unreachable server) end in one line on
stderr and exit code 2 or 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dsctl import __version__

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, subcommands included."""
    from dsctl.app import config
    from dsctl.sim import cli as sim_cli

    parser = argparse.ArgumentParser(
        prog="dsctl",
        description="A Kubernetes DaemonSet controller, with an embedded simulated cluster.",
    )
    parser.add_argument("--version", action="version", version=f"dsctl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the controller against a cluster",
        description="Reconcile DaemonSets: one daemon pod on every eligible node.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    config.add_arguments(run)

    sim = commands.add_parser(
        "sim",
        help="run the controller on a simulated cluster (the main job)",
        description="Start a simulated cluster, the controller and an example DaemonSet, "
        "and show progress until Ctrl-C. 'dsctl sim serve' runs only the simulated cluster.",
    )
    from dsctl.app import demo

    demo.add_arguments(sim)
    sim_commands = sim.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    sim_cli.register(sim_commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dsctl`` console script; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = getattr(args, "handler", None)
    if args.command == "run":
        from dsctl.app import config, runner

        try:
            settings = config.settings_from_args(args, argv)
        except config.ConfigError as exc:
            print(f"dsctl run: {exc}", file=sys.stderr)
            return 2
        return runner.main(settings)
    if args.command == "sim" and getattr(args, "sim_command", None) is None:
        from dsctl.app import demo

        return demo.main(args)
    if handler is None:
        parser.print_help()
        return 2
    result = handler(args)
    return int(result or 0)
