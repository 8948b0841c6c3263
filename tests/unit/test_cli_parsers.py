"""Every argparse parser of dsctl and dsctl-sim: no abbreviations, and unknown words blamed precisely."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator

import pytest

from dsctl import cli
from dsctl_sim import __main__ as sim_cli


def _walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _walk(child)


PARSERS = {p.prog: p for root in (cli.build_parser(), sim_cli.build_parser()) for p in _walk(root)}


def test_the_walk_reaches_every_command() -> None:
    """The parsers walked include each program's nested subcommands (the test below is not vacuous)."""
    assert {"dsctl", "dsctl run", "dsctl sim", "dsctl rollout status", "dsctl set image", "dsctl-sim",
            "dsctl-sim serve"} <= set(PARSERS)


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_no_parser_takes_an_abbreviation(prog: str) -> None:
    """allow_abbrev is off everywhere: '--node 5' never silently means '--nodes 5'."""
    assert PARSERS[prog].allow_abbrev is False


def _dsctl(argv: list[str]) -> int:
    return cli.main(argv)


def _dsctl_sim(argv: list[str]) -> int:
    return sim_cli.main(argv)


@pytest.mark.parametrize(
    ("main", "argv", "line"),
    [
        pytest.param(_dsctl, ["sim", "--nodez", "5"], "dsctl sim: unrecognized arguments: --nodez", id="sim-typo"),
        # Each would start something if the prefix were taken; a missing file ends that at once.
        pytest.param(_dsctl, ["sim", "--node", "5", "--example", "/nonexistent"],
                     "dsctl sim: unrecognized arguments: --node", id="sim-prefix"),
        pytest.param(_dsctl, ["run", "--metrics", "0", "--kubeconfig", "/nonexistent"],
                     "dsctl run: unrecognized arguments: --metrics", id="run-prefix"),
        pytest.param(_dsctl, ["rollout", "status", "ds/x", "--wat"],
                     "dsctl rollout status: unrecognized arguments: --wat", id="nested-subcommand"),
        pytest.param(_dsctl, ["sim", "bogus"], "dsctl sim: unrecognized arguments: bogus", id="stray-word"),
        pytest.param(_dsctl_sim, ["serve", "--node", "3"], "dsctl-sim serve: unrecognized arguments: --node",
                     id="serve-prefix"),
    ],
)
def test_unknown_words_are_one_line_naming_them(main: Callable[[list[str]], int], argv: list[str], line: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The error names the unknown flag (not its value) and the subcommand it was given to; exit 2."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.splitlines() == [f"{line} (see '{line.split(':', maxsplit=1)[0]} --help')"]
