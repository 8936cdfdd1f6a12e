"""The Misleading evidence page under every score state: a caption under each table and chart with each state's
count, and the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
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


@dataclass(frozen=True)
class AuditTables:
    before: pd.DataFrame
    after: pd.DataFrame


def audit_table(url: str) -> pd.DataFrame:
    """The paired-audit table of the page with MODEL as model A, indexed by (outcome, condition)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GAUNTLET_DATABASE_URL", url)
        mp.setenv("GAUNTLET_FIRST_START", "0")
        at = sc.open_page(PAGE, {"rs_a": MODEL})
    return next(t.value for t in at.dataframe if "a_only" in t.value.columns).set_index(["outcome", "condition"])


@pytest.fixture(scope="module")
def clean_audit(calibration) -> AuditTables:
    """The paired-audit table before and while MODEL's clean answers carry every state (one render each, shared)."""
    before = audit_table(calibration.url)
    engine = create_engine(calibration.url)
    with sc.injected_states(engine, run_ids=[calibration.run_id], judge="heuristic", metric="exact_match",
                            metrics=("mcq_accuracy",), model=MODEL, condition=CLEAN,
                            protocol="misleading_evidence"):
        after = audit_table(calibration.url)
    engine.dispose()
    return AuditTables(before, after)


def audit_counts(table: pd.DataFrame, row: tuple[str, str]) -> dict[str, dict[str, int]]:
    """Each side's state counts in one row of the paired-audit table."""
    return {side: {state: int(table.loc[row, f"{side}_{column}"]) for state, column in sc.COUNT_COLUMNS.items()}
            for side in "ab"}


@pytest.mark.parametrize("row", [
    pytest.param(("harmful override", CLEAN), id="harmful-override-clean"),
    pytest.param(("beneficial correction", CLEAN), id="beneficial-correction"),
])
def test_paired_audit_counts_the_states_of_each_model(clean_audit, row) -> None:
    before, after = audit_counts(clean_audit.before, row), audit_counts(clean_audit.after, row)
    assert sum(after["a"].values()) == 2 * QUESTIONS  # closed-book and clean answers of model A
    assert {state: after["a"][state] - before["a"][state] for state in after["a"]} == sc.DELTAS
    assert after["b"] == before["b"]


@dataclass(frozen=True)
class PageView:
    captions: dict[str, str]
    tables: list[pd.DataFrame]


POSITION_PREFIXES = ("Answers behind the policy gap", "Answers behind the position means")


@pytest.fixture(scope="module")
def misled_end_view(calibration) -> PageView:
    """The page while MODEL's answers under misleading documents at the end carry every state (one render, shared)."""
    engine = create_engine(calibration.url)
    with pytest.MonkeyPatch.context() as mp, sc.injected_states(
            engine, run_ids=[calibration.run_id], judge="heuristic", metric="exact_match",
            metrics=("mcq_accuracy",), model=MODEL, condition="misleading_documents_end",
            protocol="misleading_evidence"):
        mp.setenv("GAUNTLET_DATABASE_URL", calibration.url)
        mp.setenv("GAUNTLET_FIRST_START", "0")
        at = sc.open_page(PAGE)
        view = PageView({prefix: sc.captions_with(at, prefix)[0] for prefix in POSITION_PREFIXES},
                        [t.value for t in at.dataframe])
    engine.dispose()
    return view


@pytest.mark.parametrize(("table_column", "rows", "prefix"), [
    pytest.param("n_pairs", "position == 'all'", POSITION_PREFIXES[0], id="policy-gap-over-all-positions"),
    pytest.param("n_pairs", "position != 'all'", POSITION_PREFIXES[0], id="policy-gap-per-position"),
    pytest.param("mean_mr", "index == index", POSITION_PREFIXES[1], id="mr-by-position"),
])
def test_policy_gap_and_position_rows_count_the_answers_behind_them(misled_end_view, table_column, rows,
                                                                     prefix) -> None:
    caption = sc.caption_counts(misled_end_view.captions[prefix])
    table = next(t for t in misled_end_view.tables if table_column in t.columns).query(rows)
    assert {state: int(table[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == caption
    assert caption["judge_error"] == caption["unparseable"] == caption["unjudged"] == 1
