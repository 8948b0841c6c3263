"""The generated documentation pages against the code they are read from (``tools/docgen.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import docgen


def test_every_generated_page_matches_the_code() -> None:
    """Each page in docgen.PAGES is exactly what the code gives today (else: make docs-gen)."""
    stale = docgen.stale_pages(docgen.render_all())
    assert stale == [], f"out of date, run 'make docs-gen': {[str(p.relative_to(docgen.REPO)) for p in stale]}"


def test_the_metrics_page_lists_every_family_of_each_component() -> None:
    """The registry docgen builds holds the families of the client, informers, queue, controller and leader."""
    names = {family.name for family in docgen.metric_families()}
    for wanted in ("rest_client_requests_total", "informer_events_total", "workqueue_depth", "dsctl_sync_total",
                   "dsctl_daemonset_rollout_stuck", "leader_election_master_status",
                   "dsctl_leader_fenced_writes_total", "dsctl_build_info", "process_resident_memory_bytes"):
        assert wanted in names, wanted


def test_table_cells_stay_on_one_line_and_escape_pipes() -> None:
    """A cell with newlines and pipes renders as one table cell."""
    assert docgen.table(("a", "b"), [("x\n y", "p|q")]) == "| a | b |\n|---|---|\n| x y | p\\|q |\n"


GOOD = "# 0001. A title\n\n- Date: 2026-12-07\n- Status: Accepted\n\n## Context\n"


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        pytest.param("0001-a-title.md", GOOD.replace("# 0001.", "# 0002."), "first line", id="number-mismatch"),
        pytest.param("0001-a-title.md", GOOD.replace("- Date: 2026-12-07\n", ""), "Date", id="no-date"),
        pytest.param("0001-a-title.md", GOOD.replace("Accepted", "Done"), "Status", id="unknown-status"),
        pytest.param("0001-a-title.md", GOOD.replace("Accepted", "Superseded by 0009"), "0009",
                     id="superseded-by-a-missing-record"),
        pytest.param("0001-A_Title.md", GOOD, "kebab", id="not-kebab-case"),
    ],
)
def test_a_malformed_decision_record_is_refused(tmp_path: Path, name: str, text: str, error: str) -> None:
    """The ADR index refuses a record whose name or header is malformed, naming the file and the rule."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=error):
        docgen.adr_records(tmp_path)


def test_a_new_record_file_is_picked_up_by_the_index(tmp_path: Path) -> None:
    """A record file added beside the others appears in the index read, in number order."""
    (tmp_path / "0002-later.md").write_text(GOOD.replace("0001", "0002").replace("Accepted", "Superseded by 0001"),
                                            encoding="utf-8")
    (tmp_path / "0001-a-title.md").write_text(GOOD, encoding="utf-8")
    assert [(r.number, r.status) for r in docgen.adr_records(tmp_path)] == [
        ("0001", "Accepted"), ("0002", "Superseded by 0001")]
