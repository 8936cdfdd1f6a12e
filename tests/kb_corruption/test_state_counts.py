"""The Stress tests page under every score state: a caption under each table and chart with each state's count, and
the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from core.protocols.kb_corruption import SEVERITIES, TYPES
from tests.kb_corruption.conftest import HEURISTIC, MARKED, REPO
from tests.pages import state_counts as sc

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("kb_corruption-world")

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


def row_counts(spy: sc.DownloadSpy, csv: str, query: str) -> dict[str, int]:
    """The state counts of the MARKED row of a derived CSV the page offers (one row matches `query`)."""
    row = spy.frame(csv).query(query).iloc[0]
    return {state: int(row[column]) for state, column in sc.COUNT_COLUMNS.items()}


def cells_total(spy: sc.DownloadSpy, conditions: list[str]) -> int:
    """Every state count of MARKED's accuracy cells under `conditions` (ragstress_accuracy.csv), summed."""
    cells = spy.frame("ragstress_accuracy.csv").query("model == @MARKED and condition in @conditions")
    assert len(cells) == len(conditions)
    return int(cells[list(sc.COUNT_COLUMNS.values())].to_numpy().sum())


CORRUPTED = [f"{t}_{s}" for t in TYPES for s in SEVERITIES]


@pytest.mark.parametrize(("condition", "widgets", "csv", "query", "behind"), [
    pytest.param("factual_subtle", {"rs_delta_model": MARKED}, "ragstress_delta.csv",
                 "model == @MARKED and condition == 'factual_subtle'", ["clean", "factual_subtle"],
                 id="delta-clean-and-corrupted"),
    pytest.param("factual_subtle", {}, "ragstress_capability.csv", "model == @MARKED", ["no_retrieval", *CORRUPTED],
                 id="capability-no-retrieval-and-corrupted"),
    pytest.param("mixed", {}, "ragstress_mixed.csv", "model == @MARKED", None, id="mixed-and-worst"),
])
def test_derived_csvs_count_the_states_of_the_responses_behind_a_row(world, monkeypatch, condition, widgets, csv,
                                                                     query, behind) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    sc.open_page(str(REPO / "pages" / "stress_tests.py"), widgets)
    before = row_counts(spy, csv, query)
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=HEURISTIC, metric="mcq_accuracy", model=MARKED,
                            condition=condition, protocol="kb_corruption"):
        sc.open_page(str(REPO / "pages" / "stress_tests.py"), widgets)
        after = row_counts(spy, csv, query)
        behind = behind or ["mixed", spy.frame(csv).query(query).iloc[0]["worst_condition"]]
        total = cells_total(spy, behind)
    engine.dispose()
    assert sum(after.values()) == total > 0
    assert {state: after[state] - before[state] for state in after} == sc.DELTAS
