"""``dsctl run`` starts without the simulated cluster: the controller image ships no
``dsctl/sim`` and no ``jsonpatch``, so neither may be imported on the ``run`` path.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# Runs the real `dsctl run` entry point in a fresh interpreter (a kubeconfig that does not
# exist ends it early, after the runner and everything it wires are imported), then prints
# which forbidden modules got loaded.
_PROBE = """
import contextlib, io, sys
from dsctl.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main([{argv}])
    except SystemExit as exc:
        code = exc.code
loaded = sorted(m for m in sys.modules if m.split('.')[:2] == ['dsctl', 'sim'] or m.split('.')[0] == 'jsonpatch')
print(code, ' '.join(loaded) or '-')
"""


def _probe(*argv: str) -> tuple[int, list[str]]:
    script = _PROBE.format(argv=", ".join(repr(a) for a in argv))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    code, loaded = result.stdout.split()
    return int(code), [] if loaded == "-" else loaded.split()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("run", "--kubeconfig", "/nonexistent/kubeconfig", "--metrics-bind-address", "0",
                      "--health-probe-bind-address", "0"), id="run"),
        pytest.param(("--version",), id="version"),
    ],
)
def test_controller_paths_import_no_simulator(argv: tuple[str, ...]) -> None:
    """dsctl run and dsctl --version load neither dsctl.sim nor jsonpatch."""
    code, loaded = _probe(*argv)
    assert code in (0, 2), code
    assert loaded == []


def test_sim_command_still_loads_the_simulator() -> None:
    """dsctl sim serve --help still builds the simulator's parser (the import is lazy, not gone)."""
    result = subprocess.run([sys.executable, "-m", "dsctl", "sim", "serve", "--help"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: dsctl sim serve")
