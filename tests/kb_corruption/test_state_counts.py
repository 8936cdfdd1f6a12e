"""The Stress tests page under every score state: a caption under each table and chart with each state's count, and
the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from tests.kb_corruption.conftest import HEURISTIC, MARKED, REPO
from tests.pages import state_counts as sc

CONDITION = "clean"
QUESTIONS = 12  # the world's slice: every model answers each question once per condition


def cell_counts(spy: sc.DownloadSpy, csv: str) -> dict[str, int]:
    """The state counts of the (MARKED, clean) row of a CSV the page offers."""
    row = spy.frame(csv).query("model == @MARKED and condition == @CONDITION").iloc[0]
    return {state: int(row[column]) for state, column in sc.COUNT_COLUMNS.items()}


@pytest.mark.parametrize(("prefix", "widgets", "csv"), [
    pytest.param("Every cell above", {}, "ragstress_accuracy.csv", id="accuracy-grid"),
    pytest.param(f"Responses of {MARKED} behind the curves", {"rs_curve_model": MARKED}, "ragstress_severity.csv",
                 id="severity-curves"),
    pytest.param(f"Responses of {MARKED} behind the map", {"rs_delta_model": MARKED}, None,
                 id="corruption-impact-map"),
])
def test_every_state_is_counted_under_the_view(world, monkeypatch, prefix, widgets, csv) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    before = sc.caption_counts(sc.captions_with(sc.open_page(str(REPO / "pages" / "stress_tests.py"), widgets), prefix)[0])
    cell_before = cell_counts(spy, csv) if csv else {}
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=HEURISTIC, metric="mcq_accuracy", model=MARKED,
                         condition=CONDITION, protocol="kb_corruption"):
        at = sc.open_page(str(REPO / "pages" / "stress_tests.py"), widgets)
        after = sc.caption_counts(sc.captions_with(at, prefix)[0])
        assert {state: after[state] - before[state] for state in after} == sc.DELTAS
        if csv:
            cell = cell_counts(spy, csv)
            assert sum(cell.values()) == QUESTIONS
            assert {state: cell[state] - cell_before[state] for state in cell} == sc.DELTAS
    engine.dispose()
