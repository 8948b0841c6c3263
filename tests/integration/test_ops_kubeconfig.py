"""Out-of-cluster use of ``dsctl run``: a named kubeconfig context works, and every way the
configuration or the server can be wrong ends in one clear line on stderr and a non-zero exit,
never a traceback (a crash-looping pod full of tracebacks is what this guards against).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS
from tests.support.builders import daemonset
from tests.support.clusterview import ds_status
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

EXIT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Outcome:
    """A finished ``dsctl run``: exit code, and stderr split into JSON log lines and plain lines."""

    code: int
    stderr: str

    @property
    def plain_lines(self) -> list[str]:
        """Lines that are not JSON log records: what a person reads."""
        out = []
        for line in self.stderr.splitlines():
            try:
                json.loads(line)
            except ValueError:
                if line.strip():
                    out.append(line)
        return out


async def run_dsctl(*args: str) -> Outcome:
    """``python -m dsctl run <args>`` to completion; fails the test if it keeps running."""
    argv = [sys.executable, "-m", "dsctl", "run", "--metrics-bind-address", "127.0.0.1:0",
            "--health-probe-bind-address", "127.0.0.1:0", "--log-format", "json", *args]
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        _, err = await asyncio.wait_for(proc.communicate(), EXIT_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"dsctl run {' '.join(args)} still running after {EXIT_TIMEOUT}s") from None
    return Outcome(proc.returncode or 0, err.decode(errors="replace"))


def assert_one_line_error(outcome: Outcome, *, mentions: str) -> None:
    """Non-zero exit, no traceback anywhere, exactly one human line naming the problem."""
    assert outcome.code != 0, outcome.stderr
    assert "Traceback" not in outcome.stderr, outcome.stderr
    assert len(outcome.plain_lines) == 1, outcome.stderr
    line = outcome.plain_lines[0]
    assert line.startswith("dsctl run: "), line
    assert mentions in line, line


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_kubeconfig(path: Path, *, server: str, token: str = "t0ken", context: str = "ctx") -> Path:
    """A minimal token kubeconfig."""
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)
async def test_named_context_of_the_sim_kubeconfig_works(sim: SimProcess, kube: KubeClient) -> None:
    """dsctl run --kubeconfig <sim kubeconfig> --context dsctl-sim reconciles a DaemonSet."""
    async with ControllerProcess(sim.kubeconfig, args=["--context", "dsctl-sim"]) as ctl:
        await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

        async def converged() -> bool:
            return (await ds_status(kube, "agent")).get("numberAvailable") == 3

        await eventually(converged, message="DaemonSet converged")
        assert not ctl.errors(), ctl.errors()[:3]


def _unknown_context(tmp: Path) -> tuple[list[str], str]:
    path = write_kubeconfig(tmp / "config", server=f"http://127.0.0.1:{closed_port()}")
    return ["--kubeconfig", str(path), "--context", "no-such-context"], "no-such-context"


def _malformed(tmp: Path) -> tuple[list[str], str]:
    path = tmp / "config"
    path.write_text("apiVersion: v1\nclusters: [\n")
    return ["--kubeconfig", str(path)], str(path)


def _missing(tmp: Path) -> tuple[list[str], str]:
    path = tmp / "absent"
    return ["--kubeconfig", str(path)], str(path)


def _unreachable(tmp: Path) -> tuple[list[str], str]:
    server = f"http://127.0.0.1:{closed_port()}"
    return ["--kubeconfig", str(write_kubeconfig(tmp / "config", server=server))], server


@pytest.mark.parametrize("case", [
    pytest.param(_unknown_context, id="unknown-context"),
    pytest.param(_malformed, id="malformed-kubeconfig"),
    pytest.param(_missing, id="missing-kubeconfig"),
    pytest.param(_unreachable, id="unreachable-server"),
])
async def test_bad_configuration_is_one_line_and_non_zero(tmp_path: Path, case: object) -> None:
    """A bad kubeconfig or an unreachable server: one stderr line naming it, non-zero exit, no traceback."""
    assert callable(case)
    args, mentions = await asyncio.to_thread(case, tmp_path)
    assert_one_line_error(await run_dsctl(*args), mentions=mentions)


@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_server_rejecting_the_credentials_is_one_line_and_non_zero(sim: SimProcess) -> None:
    """A 401 from the API server (injected on the first request) exits non-zero with one line, no traceback."""
    await sim.set_faults(errors=[{"verb": "*", "resource": "*", "code": 401, "rate": 1.0}])
    outcome = await run_dsctl("--kubeconfig", sim.kubeconfig)
    assert_one_line_error(outcome, mentions="401")


async def test_invalid_token_is_one_line_and_non_zero(tmp_path: Path) -> None:
    """A kubeconfig whose token the server rejects exits non-zero with one line, no traceback."""
    async with SimProcess(nodes=1, args=["--token", "the-right-token"]) as sim:
        config = write_kubeconfig(tmp_path / "config", server=sim.url, token="a-wrong-token")
        outcome = await run_dsctl("--kubeconfig", str(config))
        assert_one_line_error(outcome, mentions="401")
