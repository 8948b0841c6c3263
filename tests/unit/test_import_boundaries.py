"""What ``dsctl run`` loads: none of the simulator, which is a separate distribution."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Runs in a fresh interpreter: blocks the simulator's packages, then walks the code path of
# ``dsctl run`` up to the point where it would connect, and prints what got imported.
PROBE = textwrap.dedent("""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"dsctl_sim", "jsonpatch"}:
                raise ModuleNotFoundError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, Block())
    from dsctl import cli
    from dsctl.app import config, runner  # everything 'dsctl run' runs
    import dsctl.controller.controller, dsctl.informer.informer, dsctl.kube.client  # noqa: F401
    argv = ["run", "--kubeconfig", "/nonexistent", "--metrics-bind-address", "0",
            "--health-probe-bind-address", "0"]
    args = cli.build_parser().parse_args(argv)
    config.settings_from_args(args, argv)
    print(sorted(m for m in sys.modules if m.split(".")[0] in {"dsctl_sim", "jsonpatch"}))
""")


def test_dsctl_run_needs_no_simulator() -> None:
    """With dsctl_sim and jsonpatch unimportable, the run path imports and configures cleanly."""
    out = subprocess.run([sys.executable, "-c", PROBE], check=False, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("argv", [
    pytest.param(["sim", "serve", "--help"], id="dsctl-sim-serve"),
    pytest.param(["-m", "dsctl_sim", "serve", "--help"], id="python-m-dsctl_sim"),
])
def test_sim_serve_is_handed_to_the_simulator(argv: list[str]) -> None:
    """'dsctl sim serve' runs the simulator's own command line (its --help lists its flags)."""
    cmd = [sys.executable, *argv] if argv[0] == "-m" else [sys.executable, "-m", "dsctl", *argv]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--fault-error-rate" in out.stdout
