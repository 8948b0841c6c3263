"""User-fixable client failures give one-line errors, from the API and from the CLI."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import yaml

from dsctl.kube import NODES, ConfigError, ConnectionFailed, KubeClient, RetryPolicy


def _write_kubeconfig(path: Path, server: str, *, context: str = "ctx") -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
    }))
    return str(path)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        pytest.param("missing", "file not found", id="missing-kubeconfig"),
        pytest.param("malformed", "malformed YAML", id="malformed-kubeconfig"),
        pytest.param("context", "context 'nope' not found (available: ctx)", id="unknown-context"),
    ],
)
async def test_bad_configuration_one_line(tmp_path: Path, kind: str, expected: str) -> None:
    """from_config raises ConfigError with one line naming the file and the problem."""
    path = tmp_path / "kubeconfig"
    context = None
    if kind == "malformed":
        path.write_text("apiVersion: v1\nclusters: [\n")
    elif kind == "context":
        _write_kubeconfig(path, "http://127.0.0.1:1")
        context = "nope"
    with pytest.raises(ConfigError) as info:
        await KubeClient.from_config(kubeconfig=str(path), context=context)
    assert expected in str(info.value)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


async def test_unreachable_server_one_line(tmp_path: Path) -> None:
    """A server that refuses connections fails after retries with one line naming it."""
    path = _write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    client = await KubeClient.from_config(
        kubeconfig=path, retry=RetryPolicy(max_attempts=2, backoff_base=0.01))
    try:
        with pytest.raises(ConnectionFailed) as info:
            await client.list(NODES)
    finally:
        await client.close()
    assert str(info.value) == (
        "ConnectionFailed: cannot connect to http://127.0.0.1:9: Connection refused")


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        pytest.param("missing", "file not found", id="missing-kubeconfig"),
        pytest.param("context", "context 'nope' not found", id="unknown-context"),
        pytest.param("unreachable", "cannot connect to http://127.0.0.1:9", id="unreachable"),
    ],
)
async def test_cli_prints_one_line_without_traceback(
    tmp_path: Path, setup: str, expected: str
) -> None:
    """`dsctl run` exits non-zero with the one-line error and no traceback."""
    path = tmp_path / "kubeconfig"
    args = ["--kubeconfig", str(path)]
    if setup == "context":
        _write_kubeconfig(path, "http://127.0.0.1:9")
        args += ["--context", "nope"]
    elif setup == "unreachable":
        _write_kubeconfig(path, "http://127.0.0.1:9")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsctl", "run", *args, "--metrics-bind-address", "127.0.0.1:0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        _out, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = err.decode()
    assert proc.returncode != 0
    assert "Traceback" not in text
    assert expected in text
