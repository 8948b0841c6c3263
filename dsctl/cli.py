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


def build_parser(*, sim_commands: bool = True) -> argparse.ArgumentParser:
    """The argument parser; ``sim_commands=False`` leaves out the simulator's subcommands.

    The simulator is half the package; ``dsctl run`` (and the controller image, which does
    not ship it) must start without importing it, so ``main`` asks for its subcommands only
    when the command is ``sim``.
    """
    from dsctl.app import config

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
    if sim_commands:
        from dsctl.sim import cli as sim_cli

        sim_cli.register(sim.add_subparsers(dest="sim_command", metavar="SUBCOMMAND"))
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: the first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dsctl`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_sim = _command(argv) == "sim"
    try:
        parser = build_parser(sim_commands=wants_sim)
    except ModuleNotFoundError as exc:
        if not wants_sim or not (exc.name or "").startswith(("dsctl.sim", "jsonpatch")):
            raise
        print(f"dsctl sim: the simulated cluster is not installed here ({exc.name} is missing)", file=sys.stderr)
        return 2
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
