"""The command line and its configuration: help texts, ``DSCTL_*`` environment twins, and the
command-line reference's configuration table, all against the one source of truth, ``Settings``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from dsctl.app.config import Settings, settings_from_args, settings_table
from dsctl.cli import build_parser
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

CLI_REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"
DSCTL = str(Path(sys.executable).parent / "dsctl")
FIELDS = dataclasses.fields(Settings)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _env(name: str) -> str:
    return "DSCTL_" + name.upper()


async def _run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"{' '.join(argv)} did not exit") from None
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.parametrize("argv", [
    pytest.param([DSCTL, "--help"], id="dsctl"),
    pytest.param([sys.executable, "-m", "dsctl", "--help"], id="python-m-dsctl"),
])
async def test_top_level_help_lists_the_commands(argv: list[str]) -> None:
    """dsctl --help and python -m dsctl --help exit 0 and name the run and sim commands."""
    code, out, err = await _run(*argv)
    assert code == 0, err
    assert out.startswith("usage: dsctl"), out
    for command in ("run", "sim"):
        assert re.search(rf"^\s+{command}\s+\S", out, re.MULTILINE), out


async def test_run_help_lists_every_setting_and_its_env_twin() -> None:
    """dsctl run --help exits 0 and shows every setting's flag and DSCTL_* variable; env sets the default."""
    code, out, err = await _run(DSCTL, "run", "--help", env={"DSCTL_WORKERS": "3"})
    assert code == 0, err
    for f in FIELDS:
        assert _flag(f.name) in out, f"{_flag(f.name)} missing from run --help"
        assert _env(f.name) in out, f"{_env(f.name)} missing from run --help"
    workers = out[out.index("  --workers"):].split("\n  --", 1)[0]
    assert re.search(r"default:? 3\b", workers), workers


def _other_value(f: dataclasses.Field[Any]) -> tuple[str, Any]:
    """A valid non-default value for a setting, as env text and as the parsed value."""
    default = f.default
    choices = f.metadata.get("choices")
    if isinstance(default, bool):
        return ("false" if default else "true"), not default
    if isinstance(default, int):
        return str(default + 1), default + 1
    if isinstance(default, float):
        return str(default * 2), default * 2
    if choices:
        pick = next(c for c in choices if c != default)
        return pick, pick
    if f.name.endswith("_bind_address"):  # validated as host:port
        return "127.0.0.1:9", "127.0.0.1:9"
    if f.name.endswith("_timeout") and isinstance(default, str):  # validated as a Go duration
        return "90s", "90s"
    return f"from-env-{f.name}", f"from-env-{f.name}"


def test_every_env_twin_sets_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """With DSCTL_<NAME> set for every setting and no flags, each setting takes its variable's value."""
    expected: dict[str, Any] = {}
    for f in FIELDS:
        text, value = _other_value(f)
        monkeypatch.setenv(_env(f.name), text)
        expected[f.name] = value
    settings = settings_from_args(build_parser().parse_args(["run"]))
    assert dataclasses.asdict(settings) == expected


def test_a_flag_wins_over_its_env_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    """--workers 5 beats DSCTL_WORKERS=3."""
    monkeypatch.setenv("DSCTL_WORKERS", "3")
    assert settings_from_args(build_parser().parse_args(["run", "--workers", "5"])).workers == 5


@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_a_running_controller_honours_an_env_twin(sim: SimProcess) -> None:
    """DSCTL_WORKERS=3 in the environment of dsctl run starts three workers."""
    async with ControllerProcess(sim.kubeconfig, env={"DSCTL_WORKERS": "3"}) as ctl:
        async def started() -> dict[str, Any] | None:
            return next((e for e in ctl.logs if e.get("event") == "controller_started"), None)

        entry = await eventually(started, message="controller_started")
        assert entry["workers"] == 3


@pytest.mark.parametrize(("name", "value"), [
    pytest.param("WORKERS", "0", id="workers-zero"),
    pytest.param("WORKERS", "abc", id="workers-not-int"),
    pytest.param("LEADER_ELECT", "maybe", id="leader-elect-not-bool"),
    pytest.param("RESOURCE", "example.com/v9", id="resource-not-a-choice"),
    pytest.param("LOG_FORMAT", "xml", id="log-format-not-a-choice"),
])
async def test_a_bad_env_value_is_a_clean_error(name: str, value: str, tmp_path: Path) -> None:
    """A bad DSCTL_* value exits 2 with one stderr line naming the variable or its flag, no traceback."""
    missing = tmp_path / "never-read"
    code, _, err = await _run(sys.executable, "-m", "dsctl", "run", "--kubeconfig", str(missing),
                              env={f"DSCTL_{name}": value})
    assert code == 2, err
    assert "Traceback" not in err, err
    assert len(_plain_lines(err)) == 1, err
    flag = _flag(name.lower())
    assert f"DSCTL_{name}" in err or flag in err, f"error does not name DSCTL_{name} or {flag}: {err}"


def _plain_lines(stderr: str) -> list[str]:
    """stderr lines that are not JSON log records."""
    out = []
    for line in stderr.splitlines():
        try:
            json.loads(line)
        except ValueError:
            if line.strip():
                out.append(line)
    return out


def _reference_table() -> str:
    lines = CLI_REFERENCE.read_text().splitlines()
    start = lines.index("| flag | env | default | meaning |")
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def test_reference_configuration_table_is_settings_table() -> None:
    """The command-line reference's configuration table is exactly settings_table()."""
    assert _reference_table() == settings_table()
