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
from typing import NoReturn, cast

from dsctl import __version__

__all__ = ["build_parser", "main"]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in ``--help``, quoted, so an empty default shows as ``''``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "%(default)" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if not isinstance(action.default, (str, int, float)):  # None, lists, paths say it in the text
            return text
        return text + " (default: %(default)r)"


class _Parser(argparse.ArgumentParser):
    """A bad flag is one line on stderr, naming the flag, the value and where help is; exit 2.
    Subcommand parsers are built from the same class (argparse's default)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, subcommands included."""
    from dsctl.app import config
    from dsctl.sim import cli as sim_cli

    parser = _Parser(
        prog="dsctl",
        description="A Kubernetes DaemonSet controller, with an embedded simulated cluster.",
    )
    parser.add_argument("--version", action="version", version=f"dsctl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the controller against a cluster",
        description="Reconcile DaemonSets: one daemon pod on every eligible node.",
        formatter_class=_HelpFormatter,
    )
    config.add_arguments(run)

    sim = commands.add_parser(
        "sim",
        help="run the controller on a simulated cluster (the main job)",
        description="Start a simulated cluster, the controller and an example DaemonSet, "
        "and show progress until Ctrl-C. 'dsctl sim serve' runs only the simulated cluster.",
        formatter_class=_HelpFormatter,
    )
    from dsctl.app import demo

    demo.add_arguments(sim)
    # Typed as the base class: register() takes any parser's subcommands (python -m dsctl.sim's too).
    sim_commands = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
                        sim.add_subparsers(dest="sim_command", metavar="SUBCOMMAND"))
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
        from dsctl.app import config, http, runner

        try:
            settings = config.settings_from_args(args, argv)
            # Before any network call: a bad or busy address is reported first and alone.
            http.check_bindable({"--metrics-bind-address": settings.metrics_bind_address,
                                 "--health-probe-bind-address": settings.health_probe_bind_address})
        except (config.ConfigError, http.BindError) as exc:
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
