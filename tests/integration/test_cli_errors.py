"""Every start-up failure of the CLI is one line on stderr with the value and a hint, exit code 2,
and no traceback; mistakes are reported in the order a user fixes them: flag values, then the
kubeconfig, then ports another process holds, all before any API request.
Also: ``:PORT`` listens on IPv6 as well as IPv4."""

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


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig with one context, ``test``, for a server no test here contacts."""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: test, context: {{cluster: c, user: u}}}}]
current-context: test
""")
    return path


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
    """A malformed or unbindable address: exit 2, one line naming flag and value, before any API request."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    code, err = await _run(*DSCTL, "run", "--kubeconfig", str(kubeconfig), flag, value)
    _assert_one_line(code, err, flag, *needles)


async def test_a_malformed_address_is_told_before_the_kubeconfig_is_read(tmp_path: Path) -> None:
    """A flag value that cannot parse is the first thing said, even when the kubeconfig is missing too."""
    code, err = await _run(*DSCTL, "run", "--kubeconfig", str(tmp_path / "missing"),
                           "--metrics-bind-address", "foo")
    _assert_one_line(code, err, "--metrics-bind-address", "'foo'")


@pytest.mark.parametrize(
    ("kubeconfig", "context", "needles"),
    [
        pytest.param("missing", "", ["missing: file not found"], id="missing-kubeconfig"),
        pytest.param("kubeconfig", "prod", ["context 'prod' not found (available: test)"], id="unknown-context"),
    ],
)
async def test_the_kubeconfig_is_told_before_a_busy_port(tmp_path: Path, busy_port: int, kubeconfig: str,
                                                         context: str, needles: list[str]) -> None:
    """A missing kubeconfig or context is the one line, not the port another process holds."""
    write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    argv = [*DSCTL, "run", "--kubeconfig", str(tmp_path / kubeconfig), "--metrics-bind-address",
            f"127.0.0.1:{busy_port}", "--health-probe-bind-address", "127.0.0.1:0"]
    code, err = await _run(*argv, *(["--context", context] if context else []))
    line = _assert_one_line(code, err, "kubeconfig", *needles)
    assert str(busy_port) not in line


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
