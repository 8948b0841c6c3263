"""``dsctl-sim serve ...`` (also ``python -m dsctl_sim`` and ``dsctl sim serve``): the simulated cluster.

A bad flag ends in one line on stderr naming the flag and the value, exit code 2, never
argparse's usage block: the same contract as the controller's command line. No flag may be
abbreviated (``--node 5`` is an error, not ``--nodes 5``). Usage and errors name the command
as typed: ``dsctl sim serve`` when ``dsctl`` handed over (it sets ``DSCTL_SIM_PROG``),
``dsctl-sim serve`` otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from dsctl_sim.cli import register

PROG_ENV = "DSCTL_SIM_PROG"


class _Parser(argparse.ArgumentParser):
    """One-line errors and no abbreviations; subcommand parsers are built from the same class
    (argparse's default)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def build_parser(prog: str = "dsctl-sim") -> argparse.ArgumentParser:
    """The full argument parser, subcommands included."""
    parser = _Parser(prog=prog, description="The dsctl simulated cluster.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register(commands)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Words nobody takes are blamed on the subcommand, naming the unknown flags alone."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        unknown = [word for word in extras if word.startswith("-")] or extras
        blamed = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                blamed = action.choices.get(getattr(args, action.dest, None) or "", parser)
        blamed.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand."""
    prog = os.environ.pop(PROG_ENV, "") or "dsctl-sim"
    args = _parse(build_parser(prog), argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
