"""``dsctl-sim serve ...`` (also ``python -m dsctl_sim`` and ``dsctl sim serve``): the simulated cluster.

A bad flag ends in one line on stderr naming the flag and the value, exit code 2, never
argparse's usage block: the same contract as the controller's command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from dsctl_sim.cli import register


class _Parser(argparse.ArgumentParser):
    """One-line errors; subcommand parsers are built from the same class (argparse's default)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand."""
    parser = _Parser(prog="dsctl-sim", description="The dsctl simulated cluster.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register(commands)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
