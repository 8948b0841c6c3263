"""The ``dsctl`` command line.

- ``dsctl run``: the controller, against a real cluster or any kubeconfig.
- ``dsctl sim``: the main job on a fresh machine: a simulated cluster, the controller and an
  example DaemonSet, with live progress. ``dsctl sim serve`` runs only the simulated cluster.
- ``dsctl view``: a live, read-only web page of DaemonSets x nodes (``dsctl.view``).
- ``dsctl plan -f FILE``: what applying a DaemonSet manifest would do, read-only (``dsctl.plan``).

The simulated cluster is its own distribution (``dsctl-sim``, import package ``dsctl_sim``).
This module never imports it: ``dsctl sim serve`` replaces the process with
``python -m dsctl_sim serve``, and ``dsctl sim`` starts it as a child process, so ``dsctl run``
loads none of the simulator (an import-linter contract and an import-time test hold this).

Errors a user can fix (bad kubeconfig, bad flag, unreachable server) end in one line on
stderr and exit code 2 or 1, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from dsctl import __version__

__all__ = ["build_parser", "main", "parse_strictly"]


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
    """A bad flag is one line on stderr, naming the flag, the value and where help is; exit 2
    (``error_status`` changes it: ``dsctl plan`` keeps 2 for "changes").
    Subcommand parsers are built from the same class (argparse's default), so none of them
    takes an abbreviation: ``--node 5`` is an error, not ``--nodes 5``."""

    def __init__(self, *args: Any, error_status: int = 2, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self.error_status = error_status

    def error(self, message: str) -> NoReturn:
        self.exit(self.error_status, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def parse_strictly(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parse_args``, but words nobody takes are blamed on the subcommand they follow, naming
    the unknown flags alone (``dsctl sim: unrecognized arguments: --nodez``), not their values."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        unknown = [word for word in extras if word.startswith("-")] or extras
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the deepest subcommand ``args`` chose."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if isinstance(chosen, argparse.ArgumentParser):
                return _innermost(chosen, args)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, subcommands included."""
    from dsctl.app import config

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
        epilog="subcommands: " + "; ".join(f"'dsctl sim {name}': {summary} (options: dsctl sim {name} --help)"
                                           for name, summary in SIM_SUBCOMMANDS.items()),
        formatter_class=_HelpFormatter,
    )
    from dsctl.app import demo

    demo.add_arguments(sim)
    from dsctl.rollout import cli as rollout_cli
    from dsctl.rollout import setimage

    rollout_cli.register(commands)
    setimage.register(commands)
    from dsctl.view import cli as view_cli

    view_cli.register(commands)
    from dsctl.plan import cli as plan_cli

    plan_cli.register(commands)
    return parser


SIM_SUBCOMMANDS = {"serve": "run only the simulated cluster (API server + control plane)"}
"""Subcommands of ``dsctl sim`` that belong to the simulator's own command line."""
SIM_PROG_ENV = "DSCTL_SIM_PROG"
"""The program name the simulator's command line shows (``dsctl-sim`` when unset)."""


def simulator_installed(command: str) -> bool:
    """Whether ``dsctl-sim`` can be imported (found, not imported); if not, say so for ``command``."""
    if importlib.util.find_spec("dsctl_sim") is not None:
        return True
    print(f"{command}: the simulated cluster is not installed; install it with 'pip install dsctl-sim' "
          "(make sim does)", file=sys.stderr)
    return False


def _hand_off_to_simulator(argv: list[str]) -> int:
    """Replace this process with ``python -m dsctl_sim ARGV``; returns only on failure."""
    if not simulator_installed(f"dsctl sim {argv[0]}"):
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    # The simulator's usage and errors then name the command the user typed.
    os.environ[SIM_PROG_ENV] = "dsctl sim"
    os.execv(sys.executable, [sys.executable, "-m", "dsctl_sim", *argv])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dsctl`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sim"] and len(argv) > 1 and argv[1] in SIM_SUBCOMMANDS:
        return _hand_off_to_simulator(argv[1:])
    parser = build_parser()
    args = parse_strictly(parser, argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = getattr(args, "handler", None)
    if args.command == "run":
        from dsctl.app import config, http, runner
        from dsctl.kube import errors
        from dsctl.kube.config import check_config

        try:
            # Before any network call, in the order a user fixes them: flag values (the bind
            # addresses' syntax included), then the kubeconfig, then ports another process may hold.
            settings = config.settings_from_args(args, argv)
            check_config(kubeconfig=settings.kubeconfig or None, context=settings.context or None)
            http.check_bindable({"--metrics-bind-address": settings.metrics_bind_address,
                                 "--health-probe-bind-address": settings.health_probe_bind_address})
        except (config.ConfigError, http.BindError, errors.ConfigError) as exc:
            print(f"dsctl run: {exc}", file=sys.stderr)
            return 2
        return runner.main(settings)
    if args.command == "sim":
        from dsctl.app import demo

        if not simulator_installed("dsctl sim"):
            return 2
        return demo.main(args)
    if handler is None:
        parser.print_help()
        return 2
    result = handler(args)
    return int(result or 0)
