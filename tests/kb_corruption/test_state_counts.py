"""The Stress tests page shows the count of every score state beside its numbers (captions under its tables and
charts, count columns in its CSVs) on a run holding judge errors, unparseable, not-applicable and unjudged answers."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from streamlit.testing.v1 import AppTest

from tests.kb_corruption.conftest import HEURISTIC, MARKED, REPO
from tests.pages.signin import sign_in
from tests.pages.state_counts import DELTAS, DownloadSpy, caption_counts, captions_with, injected_states

CONDITION = "clean"
QUESTIONS = 12  # the world's slice: every model answers each question once per condition
COUNT_COLUMNS = {"scored": "n_scored", "judge_error": "n_error", "unparseable": "n_unparseable",
                 "not_applicable": "n_not_applicable", "unjudged": "n_unscored", "skipped": "n_skipped"}


def cell_counts(spy: DownloadSpy, csv: str) -> dict[str, int]:
    """The state counts of the (MARKED, clean) row of a CSV the page offers."""
    row = spy.frame(csv).query("model == @MARKED and condition == @CONDITION").iloc[0]
    return {state: int(row[column]) for state, column in COUNT_COLUMNS.items()}


def open_page(widgets: dict[str, str]) -> AppTest:
    at = sign_in(AppTest.from_file(str(REPO / "pages" / "stress_tests.py"), default_timeout=60), "analyst").run()
    for key, value in widgets.items():
        at.selectbox(key=key).set_value(value)
    at.run()
    assert not at.exception, at.exception
    return at


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
    spy = DownloadSpy(monkeypatch)
    before = caption_counts(captions_with(open_page(widgets), prefix)[0])
    cell_before = cell_counts(spy, csv) if csv else {}
    engine = create_engine(world.url)
    with injected_states(engine, run_ids=[world.run_id], judge=HEURISTIC, metric="mcq_accuracy", model=MARKED,
                         condition=CONDITION, protocol="kb_corruption"):
        at = open_page(widgets)
        after = caption_counts(captions_with(at, prefix)[0])
        assert {state: after[state] - before[state] for state in after} == DELTAS
        if csv:
            cell = cell_counts(spy, csv)
            assert sum(cell.values()) == QUESTIONS
            assert {state: cell[state] - cell_before[state] for state in cell} == DELTAS
    engine.dispose()
