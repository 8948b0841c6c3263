"""The simulator's command line names the command as it was typed: ``dsctl sim serve`` or ``dsctl-sim serve``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        pytest.param([str(BIN / "dsctl"), "sim", "serve"], "dsctl sim serve", id="dsctl-sim-serve"),
        pytest.param([str(BIN / "dsctl-sim"), "serve"], "dsctl-sim serve", id="dsctl-sim-script"),
    ],
)
@pytest.mark.parametrize("mistake", [pytest.param(False, id="help"), pytest.param(True, id="bad-flag")])
def test_usage_and_errors_name_the_command_typed(argv: list[str], prog: str, mistake: bool) -> None:
    """--help starts 'usage: PROG', and a bad flag's one line starts 'PROG:'."""
    env = {k: v for k, v in os.environ.items() if k != "DSCTL_SIM_PROG"}
    extra = ["--nodez", "1"] if mistake else ["--help"]
    result = subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=60, env=env, check=False)
    if mistake:
        assert (result.returncode, result.stderr) == (
            2, f"{prog}: unrecognized arguments: --nodez (see '{prog} --help')\n")
    else:
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: {prog} "), result.stdout
