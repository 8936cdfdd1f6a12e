"""The Misleading evidence page under every score state: a caption under each table and chart with each state's
count, and the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from core.protocols.misleading_evidence import CLEAN
from tests.misleading_evidence.conftest import repo_path
from tests.pages import state_counts as sc

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("misleading_evidence-calibration")

PAGE = str(repo_path("pages", "misleading_evidence.py"))
MODEL = "follower"
QUESTIONS = 4  # the calibration's HotpotQA instances (the page's first dataset), each answered once per condition


def clean_counts(spy: sc.DownloadSpy) -> dict[str, int]:
    """The clean-evidence state counts of MODEL in the MR-against-clean-accuracy CSV."""
    row = spy.frame("mr_vs_clean.csv").set_index("model").loc[MODEL]
    return {state: int(row[f"{CLEAN}_{column}"]) for state, column in sc.COUNT_COLUMNS.items()}


@pytest.mark.parametrize(("prefix", "csv"), [
    pytest.param("Clean and closed-book answers behind the chart and table", True, id="mr-against-clean-accuracy"),
])
def test_every_state_is_counted_under_the_view(calibration, monkeypatch, prefix, csv) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", calibration.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    before = sc.caption_counts(sc.captions_with(sc.open_page(PAGE), prefix)[0])
    cell_before = clean_counts(spy)
    engine = create_engine(calibration.url)
    with sc.injected_states(engine, run_ids=[calibration.run_id], judge="heuristic", metric="exact_match",
                         metrics=("mcq_accuracy",), model=MODEL, condition=CLEAN, protocol="misleading_evidence"):
        after = sc.caption_counts(sc.captions_with(sc.open_page(PAGE), prefix)[0])
        assert {state: after[state] - before[state] for state in after} == sc.DELTAS
        if csv:
            cell = clean_counts(spy)
            assert sum(cell.values()) == QUESTIONS
            assert {state: cell[state] - cell_before[state] for state in cell} == sc.DELTAS
    engine.dispose()


@pytest.mark.parametrize(("condition", "row"), [
    pytest.param(CLEAN, ("harmful override", CLEAN), id="harmful-override-clean"),
    pytest.param(CLEAN, ("beneficial correction", CLEAN), id="beneficial-correction"),
])
def test_paired_audit_counts_the_states_of_each_model(calibration, monkeypatch, condition, row) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", calibration.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")

    def audit_counts() -> dict[str, dict[str, int]]:
        at = sc.open_page(PAGE, {"rs_a": MODEL})
        table = next(t.value for t in at.dataframe if "a_only" in t.value.columns).set_index(["outcome", "condition"])
        return {side: {state: int(table.loc[row, f"{side}_{column}"]) for state, column in sc.COUNT_COLUMNS.items()}
                for side in "ab"}

    before = audit_counts()
    engine = create_engine(calibration.url)
    with sc.injected_states(engine, run_ids=[calibration.run_id], judge="heuristic", metric="exact_match",
                            metrics=("mcq_accuracy",), model=MODEL, condition=condition,
                            protocol="misleading_evidence"):
        after = audit_counts()
    engine.dispose()
    assert sum(after["a"].values()) == 2 * QUESTIONS  # closed-book and clean answers of model A
    assert {state: after["a"][state] - before["a"][state] for state in after["a"]} == sc.DELTAS
    assert after["b"] == before["b"]


@pytest.mark.parametrize(("table_column", "rows", "prefix"), [
    pytest.param("n_pairs", "position == 'all'", "Answers behind the policy gap", id="policy-gap-over-all-positions"),
    pytest.param("n_pairs", "position != 'all'", "Answers behind the policy gap", id="policy-gap-per-position"),
    pytest.param("mean_mr", "index == index", "Answers behind the position means", id="mr-by-position"),
])
def test_policy_gap_and_position_rows_count_the_answers_behind_them(calibration, monkeypatch, table_column, rows,
                                                                     prefix) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", calibration.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(calibration.url)
    with sc.injected_states(engine, run_ids=[calibration.run_id], judge="heuristic", metric="exact_match",
                            metrics=("mcq_accuracy",), model=MODEL, condition="misleading_documents_end",
                            protocol="misleading_evidence"):
        at = sc.open_page(PAGE)
        caption = sc.caption_counts(sc.captions_with(at, prefix)[0])
        table = next(t.value for t in at.dataframe if table_column in t.value.columns).query(rows)
    engine.dispose()
    assert {state: int(table[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == caption
    assert caption["judge_error"] == caption["unparseable"] == caption["unjudged"] == 1
