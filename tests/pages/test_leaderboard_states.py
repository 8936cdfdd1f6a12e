"""The Leaderboard and Domains pages (EnterpriseRAG) under every score state: a caption per metric under the table and
under each chart with each state's count, and the count columns in the chart's CSV."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from core.analysis import readmodel
from tests.pages import state_counts as sc
from tests.pages.test_dashboards import REPO

METRIC = "faithfulness"


@pytest.fixture(scope="module")
def results_url(session_url_factory):
    return sc.synthetic_results(session_url_factory())


@pytest.mark.parametrize(("page", "template", "csv"), [
    pytest.param("leaderboard", "Faithfulness: n = ", None, id="leaderboard-table"),
    pytest.param("leaderboard", "Bars of Faithfulness", "leaderboard_metrics.csv", id="leaderboard-metric-bars"),
    pytest.param("domains", "Heatmap: Faithfulness", "domain_heatmap.csv", id="domains-heatmap"),
    pytest.param("domains", "Radars, {model}: Faithfulness", "domain_radars.csv", id="domains-radars-per-model"),
])
def test_every_state_is_counted_under_the_view(results_url, monkeypatch, page, template, csv) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(results_url)
    model = sorted(readmodel.load_scores(engine, [1], "heuristic")["model"].unique())[0]
    spy = sc.DownloadSpy(monkeypatch)
    prefix = template.format(model=model)
    before = sc.caption_counts(sc.captions_with(sc.open_page(str(REPO / "pages" / f"{page}.py")), prefix)[0])
    with sc.injected_states(engine, run_ids=[1], judge="heuristic", metric=METRIC, model=model, condition="",
                            protocol="enterprise_rag", replace=True):
        after = sc.caption_counts(sc.captions_with(sc.open_page(str(REPO / "pages" / f"{page}.py")), prefix)[0])
        assert {state: after[state] - before[state] for state in after} == sc.DELTAS
        if csv:
            shown = spy.frame(csv).query("metric == @METRIC")
            shown = shown[shown["model"] == model] if "{model}" in template else shown
            assert {state: int(shown[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == after
    engine.dispose()
