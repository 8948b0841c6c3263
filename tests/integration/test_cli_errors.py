"""Every start-up failure of the CLI is one line on stderr with the value and a hint, exit code 2,
and no traceback (issue 14, reproduction 3); bind addresses are checked before any API request.
Also: ``:PORT`` listens on IPv6 as well as IPv4 (issue 15)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.controllerproc import ControllerProcess
from tests.support.simproc import SimProcess

DSCTL = [sys.executable, "-m", "dsctl"]
ROOT = Path(__file__).resolve().parents[2]


async def _run(*argv: str, timeout: float = 30.0) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"}, cwd=str(ROOT),
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"{' '.join(argv)} did not exit") from None
    return proc.returncode or 0, err.decode()


def _plain_lines(stderr: str) -> list[str]:
    """stderr lines that are not log records (JSON, or the simulator's key=value lines)."""
    lines = []
    for line in stderr.splitlines():
        if line.startswith("timestamp="):
            continue
        try:
            json.loads(line)
        except ValueError:
            if line.strip():
                lines.append(line)
    return lines


def _assert_one_line(code: int, err: str, *needles: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = _plain_lines(err)
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port some other socket listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("flag", "value", "needles"),
    [
        pytest.param("--metrics-bind-address", "foo", ["'foo'", "host:port"], id="no-port"),
        pytest.param("--metrics-bind-address", ":abc", ["':abc'", "non-numeric port"], id="non-numeric-port"),
        pytest.param("--metrics-bind-address", "127.0.0.1:99999", ["99999", "0-65535"], id="port-out-of-range"),
        pytest.param("--health-probe-bind-address", "::1:8081", ["[::1]:8081"], id="ipv6-without-brackets"),
        # TEST-NET-1 is on no host; binding it fails locally (EADDRNOTAVAIL) and sends nothing.
        pytest.param("--metrics-bind-address", "192.0.2.1:8080", ["192.0.2.1:8080", "not on this host"],
                     id="non-local-address"),
    ],
)
async def test_a_bad_bind_address_is_one_line(flag: str, value: str, needles: list[str], tmp_path: Path) -> None:
    """A malformed or unbindable address: exit 2, one line naming flag and value, before the kubeconfig is read."""
    code, err = await _run(*DSCTL, "run", "--kubeconfig", str(tmp_path / "never-read"), flag, value)
    _assert_one_line(code, err, flag, *needles)


@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_a_busy_port_is_one_line_before_any_api_request(sim: SimProcess, busy_port: int) -> None:
    """A port in use: exit 2 with one line and a hint, and the API server never saw a request."""
    before = (await sim.requests())["next"]
    code, err = await _run(*DSCTL, "run", "--kubeconfig", sim.kubeconfig,
                           "--health-probe-bind-address", "127.0.0.1:0",
                           "--metrics-bind-address", f"127.0.0.1:{busy_port}")
    _assert_one_line(code, err, "--metrics-bind-address", str(busy_port), "in use", "choose another port")
    after = await sim.requests(since=before)
    assert not [r for r in after["items"] if "dsctl/" in str(r.get("user_agent", ""))], after["items"]


@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_crd_mode_without_the_crd_names_it_and_how_to_install_it(sim: SimProcess) -> None:
    """--resource dsctl.io/v1 without the CRD: one line with the URL tried, the CRD's name and the kubectl apply."""
    code, err = await _run(*DSCTL, "run", "--kubeconfig", sim.kubeconfig, "--resource", "dsctl.io/v1",
                           "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0")
    _assert_one_line(code, err, "daemonsets.dsctl.io", "kubectl apply -f manifests/crd/daemonsets.dsctl.io.yaml",
                     f"{sim.url}/apis/dsctl.io/v1/daemonsets", "404")


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        pytest.param(["sim", "--log-level", "verbose"], ["--log-level", "'verbose'", "debug"], id="sim-log-level"),
        pytest.param(["sim", "--nodes", "-1"], ["--nodes", "-1"], id="sim-negative-nodes"),
        pytest.param(["sim", "--example", "manifests/rbac/clusterrole.yaml"],
                     ["manifests/rbac/clusterrole.yaml", "ClusterRole"], id="sim-example-not-a-daemonset"),
        pytest.param(["sim", "--example", "README.md"], ["README.md", "not valid YAML"], id="sim-example-not-yaml"),
        pytest.param(["sim", "serve", "--nodes", "-1"], ["--nodes", "-1"], id="serve-negative-nodes"),
        pytest.param(["sim", "serve", "--port", "99999"], ["--port", "99999"], id="serve-port-out-of-range"),
        pytest.param(["sim", "serve", "--log-level", "verbose"], ["'verbose'"], id="serve-log-level"),
        pytest.param(["run", "--log-level", "verbose"], ["--log-level", "'verbose'"], id="run-log-level"),
    ],
)
async def test_bad_flags_are_one_line(argv: list[str], needles: list[str]) -> None:
    """Bad dsctl sim / sim serve / run flags: exit 2, one line naming the flag and the value, no traceback."""
    code, err = await _run(*DSCTL, *argv)
    _assert_one_line(code, err, *needles)


async def test_a_busy_sim_port_is_one_line(busy_port: int) -> None:
    """dsctl sim serve on a port in use: exit 2 with one line naming the address and a hint."""
    code, err = await _run(*DSCTL, "sim", "serve", "--port", str(busy_port), "--nodes", "0")
    _assert_one_line(code, err, f"127.0.0.1:{busy_port}", "--port 0")


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this host")
@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_port_only_address_answers_on_ipv6_and_ipv4(sim: SimProcess) -> None:
    """--health-probe-bind-address :PORT serves /healthz on [::1] as well as 127.0.0.1."""
    async with (ControllerProcess(sim.kubeconfig, args=["--health-probe-bind-address", ":0"]) as ctl,
                aiohttp.ClientSession() as session):
        for host in ("[::1]", "127.0.0.1"):
            async with session.get(f"http://{host}:{ctl.probe_port}/healthz") as resp:
                assert resp.status == 200, (host, await resp.text())
