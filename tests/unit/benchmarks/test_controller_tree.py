"""``DSCTL_BENCH_CONTROLLER_PATH``: a result names another tree's controller only if that one runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness.cluster import controller
from benchmarks.harness.results import CONTROLLER_PATH, controller_tree


def _tree(root: Path) -> Path:
    """A source tree holding a package named ``dsctl`` (not a git checkout)."""
    (root / "dsctl").mkdir(parents=True)
    (root / "dsctl" / "__init__.py").write_text("")
    return root


def test_without_the_path_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usual run: the controller is this tree's, and the result says nothing more."""
    monkeypatch.delenv(CONTROLLER_PATH, raising=False)
    assert controller_tree() == {}
    assert "-P" not in controller("kubeconfig").launcher


def test_a_tree_that_holds_dsctl_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree's commit is recorded (unknown outside git), whatever the working directory holds."""
    monkeypatch.chdir(Path(__file__).resolve().parents[3])  # the repository root, with its own dsctl
    monkeypatch.setenv(CONTROLLER_PATH, str(_tree(tmp_path / "other")))
    assert controller_tree() == {"controller_commit": "unknown"}
    assert controller("kubeconfig").launcher[0] == "-P"


def test_a_path_without_dsctl_stops_the_benchmark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path whose first entry has no dsctl would run this tree's controller under another name."""
    monkeypatch.setenv(CONTROLLER_PATH, str(tmp_path))
    with pytest.raises(SystemExit, match=CONTROLLER_PATH):
        controller_tree()
