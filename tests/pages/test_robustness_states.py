"""The Robustness page (EnterpriseRAG) under every score state: a caption under each view per metric with each state's
count over the responses of the subset behind it."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from core.analysis import readmodel
from tests.pages import state_counts as sc
from tests.pages.test_dashboards import REPO

PAGE = str(REPO / "pages" / "robustness.py")


@pytest.fixture(scope="module")
def results_url(session_url_factory):
    return sc.synthetic_results(session_url_factory())


def csv_counts(frame, metric: str) -> dict[str, int]:
    """The state counts of `metric` in a view's CSV, summed over its models: a long CSV's rows of the metric, or a
    wide CSV's <metric>_n_* columns."""
    if "metric" in frame.columns:
        frame = frame[frame["metric"] == metric]
        return {state: int(frame[column].sum()) for state, column in sc.COUNT_COLUMNS.items()}
    return {state: int(frame[f"{metric}_{column}"].sum()) for state, column in sc.COUNT_COLUMNS.items()}


@pytest.mark.parametrize(("metric", "prefix", "view", "radio", "csv"), [
    pytest.param("rejection", "Knowledge gaps, Rejection accuracy", "gap", None, "knowledge_gap.csv", id="gap-bars"),
    pytest.param("conflict_recognition", "Factual conflicts, Conflict recognition", "conflict", None,
                 "conflict_scatter.csv", id="conflict-table"),
    pytest.param("rejection", "Protocol effect, Rejection accuracy", "protocol", None, "table",
                 id="effect-rejection"),
    pytest.param("conflict_recognition", "Protocol effect, Conflict recognition", "protocol", "conflict_recognition",
                 "table", id="effect-conflict"),
])
def test_every_state_is_counted_under_the_view(results_url, monkeypatch, metric, prefix, view, radio, csv) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(results_url)
    spy = sc.DownloadSpy(monkeypatch)
    model = sorted(readmodel.load_scores(engine, [1], "heuristic")["model"].unique())[0]

    tables: list = []

    def shown() -> dict[str, int]:
        at = sc.open_page(PAGE)
        if view != "gap":  # the page opens on the knowledge gaps; the other views are built when chosen
            at.segmented_control(key="rb_view").set_value(view).run()
        if radio:
            at.radio(key="rb_protocol_metric").set_value(radio).run()
        tables[:] = [t.value for t in at.dataframe if "k_with" in t.value.columns]
        return sc.caption_counts(sc.captions_with(at, prefix)[0])

    before = shown()
    with sc.injected_states(engine, run_ids=[1], judge="heuristic", metric=metric, model=model, condition="",
                            protocol="enterprise_rag", replace=True):
        after = shown()
        in_csv = csv_counts(tables[0].assign(metric=metric) if csv == "table" else spy.frame(csv), metric)
    assert {state: after[state] - before[state] for state in after} == sc.DELTAS
    assert in_csv == after
    engine.dispose()
