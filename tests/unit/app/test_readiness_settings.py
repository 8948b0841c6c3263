"""The ``--readiness-*`` flags: read into the gate's settings, or refused with a line naming the flag."""

from __future__ import annotations

import argparse

import pytest

from dsctl.app.config import ConfigError, Settings, add_arguments, settings_from_args
from dsctl.daemonset.readinessgate import CONTINUOUS, GateSettings, ReadinessTaint


def _settings(*argv: str) -> Settings:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return settings_from_args(parser.parse_args(list(argv)), list(argv))


@pytest.mark.parametrize(
    ("argv", "gate"),
    [
        pytest.param((), GateSettings(ReadinessTaint("dsctl.io/agents-not-ready"), "bootstrap", 600.0, 30.0),
                     id="defaults"),
        pytest.param(("--readiness-taint", "node.cilium.io/agent-not-ready:NoExecute", "--readiness-taint-mode",
                      "continuous", "--readiness-timeout", "90s", "--readiness-retaint-seconds", "5"),
                     GateSettings(ReadinessTaint("node.cilium.io/agent-not-ready", "NoExecute"), CONTINUOUS, 90.0,
                                  5.0), id="every-flag"),
        pytest.param(("--readiness-timeout", "1h30m"),
                     GateSettings(ReadinessTaint("dsctl.io/agents-not-ready"), "bootstrap", 5400.0, 30.0),
                     id="compound-duration"),
        pytest.param(("--readiness-taint", ""), None, id="empty-taint-turns-the-gate-off"),
    ],
)
def test_flags_give_the_gate_settings(argv: tuple[str, ...], gate: GateSettings | None) -> None:
    """Each flag lands in the gate's settings; the defaults are bootstrap, 10m and 30 s."""
    assert _settings(*argv).readiness_gate == gate


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        pytest.param(("--readiness-taint", "no spaces please"), "--readiness-taint", id="bad-key"),
        pytest.param(("--readiness-taint", "k:Never"), "--readiness-taint", id="bad-effect"),
        pytest.param(("--readiness-timeout", "10"), "--readiness-timeout", id="duration-without-unit"),
        pytest.param(("--readiness-timeout=-1m",), "--readiness-timeout", id="negative-duration"),
        pytest.param(("--readiness-retaint-seconds", "0"), "--readiness-retaint-seconds", id="zero-retaint"),
    ],
)
def test_bad_values_name_their_flag(argv: tuple[str, ...], flag: str) -> None:
    """A value the gate cannot use fails before any request, naming the flag."""
    with pytest.raises(ConfigError, match=flag):
        _settings(*argv)


def test_an_unknown_mode_is_refused_by_the_parser() -> None:
    """The mode is one of two words, checked like every other choice."""
    with pytest.raises(SystemExit):
        _settings("--readiness-taint-mode", "sometimes")
