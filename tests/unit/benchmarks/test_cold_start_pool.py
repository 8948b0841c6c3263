"""The pooled cold-start ratio: rounds read from result files, grouped and summarized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.cold_start_pool import load_sources, pool, round_rates, rounds_of


def _summary(raw: float | None, ctl: float | None, **extra: float) -> dict[str, Any]:
    out: dict[str, Any] = {f"{k}_creates_per_second": v for k, v in extra.items()}
    if raw is not None:
        out["raw_creates_per_second"] = raw
    if ctl is not None:
        out["controller_unlimited"] = {"creates_per_second": ctl}
    return out


def test_rounds_of_reads_the_round_summaries_and_skips_incomplete_rounds() -> None:
    """A round counts only when it ran both the baseline and the measured phase."""
    result = {"nodes": 5000, "rounds": [_summary(1000, 800, raw_slowstart_owned=900), _summary(None, 700),
                                        _summary(1100, None), _summary(1200, 960, raw_slowstart_owned=1000)]}
    assert rounds_of(result) == [(1000.0, 800.0), (1200.0, 960.0)]
    assert rounds_of(result, baseline="raw_slowstart_owned") == [(900.0, 800.0), (1000.0, 960.0)]
    # a raw phase over the raw client: the ceiling of any client with its semantics
    assert rounds_of(result, phase="raw_slowstart_owned") == [(1000.0, 900.0), (1200.0, 1000.0)]


@pytest.mark.parametrize(("summary", "expected"), [
    (_summary(1000, 800), {"raw": 1000.0, "unlimited": 800.0}),
    (_summary(1000, None, raw_slowstart_owned=900), {"raw": 1000.0, "raw_slowstart_owned": 900.0}),
    # a phase that created nothing has no rate
    ({"raw_creates_per_second": None, "controller_default": {"creates_per_second": None}}, {}),
])
def test_round_rates_names_each_phase(summary: dict[str, Any], expected: dict[str, float]) -> None:
    """Raw phases' rates are flat keys, controller phases' nested; a phase without a rate is left out."""
    assert round_rates(summary) == expected


def test_rounds_of_a_result_without_rounds_is_empty() -> None:
    """A result without round summaries gives no rounds."""
    assert rounds_of({"nodes": 1000, "raw": {"sim_log": {"creates_per_second": 1200.0}}}) == []


def test_pool_groups_by_label_and_node_count() -> None:
    """Rounds pool by label and node count, with the geometric mean inside its interval."""
    def result(nodes: int, *pairs: tuple[float, float]) -> dict[str, Any]:
        return {"nodes": nodes, "rounds": [_summary(raw, ctl) for raw, ctl in pairs]}

    pooled = pool([
        ("pinned", result(5000, (1000, 800), (1000, 900))),
        ("pinned", result(5000, (1000, 700))),
        ("pinned", result(1000, (1000, 1000))),
        ("shared", result(5000, (1000, 500))),
        ("shared", {"nodes": 5000, "rounds": []}),
    ], goal=0.8)
    assert sorted(pooled) == ["pinned 1000", "pinned 5000", "shared 5000"]
    five = pooled["pinned 5000"]
    assert five["rounds"] == 3
    assert five["ratio_of_medians"] == pytest.approx(0.8)
    assert five["per_round_at_or_above_goal"] == pytest.approx(0.667, abs=1e-3)
    assert five["geometric_mean_ci90"][0] <= five["geometric_mean"] <= five["geometric_mean_ci90"][1]
    assert pooled["shared 5000"]["geometric_mean"] == pytest.approx(0.5)


def test_load_sources_labels_files_and_counts_each_once_per_label(tmp_path: Path) -> None:
    """A file matched by two globs of one label counts once."""
    for name, nodes in (("run-a-5000.json", 5000), ("run-b-5000.json", 5000), ("run-c-1000.json", 1000)):
        (tmp_path / name).write_text(json.dumps({"nodes": nodes, "rounds": [_summary(1000, 800)]}))
    sources = load_sources([f"x={tmp_path}/run-*.json", f"x={tmp_path}/run-a-*.json", f"{tmp_path}/run-c-*.json"])
    assert [(label, result["nodes"]) for label, result in sources] == [
        ("x", 5000), ("x", 5000), ("x", 1000), (f"{tmp_path}/run-c-*.json", 1000)]
    assert {key: value["rounds"] for key, value in pool(sources).items()} == {
        "x 5000": 2, "x 1000": 1, f"{tmp_path}/run-c-*.json 1000": 1}


def test_load_sources_refuses_a_glob_that_matches_nothing(tmp_path: Path) -> None:
    """A glob that matches no file stops the pooling."""
    with pytest.raises(SystemExit, match="no result file"):
        load_sources([f"{tmp_path}/missing-*.json"])
