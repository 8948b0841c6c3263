"""``python -m dsctl_sim serve ...``: the simulated cluster without the rest of the CLI."""

from __future__ import annotations

import argparse
import sys

from dsctl_sim.cli import register


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand."""
    parser = argparse.ArgumentParser(prog="dsctl-sim", description="The dsctl simulated cluster.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register(commands)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
