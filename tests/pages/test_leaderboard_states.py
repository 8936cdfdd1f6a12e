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


@pytest.mark.parametrize(("prefix", "metric", "csv"), [
    pytest.param("Cost and latency: Generation cost per 1k", "cost_per_1k", "cost_latency.csv", id="cost-chart"),
    pytest.param("Cost and latency: Latency per 1k", "latency_min_per_1k", "cost_latency.csv", id="latency-chart"),
    pytest.param("Generation cost per 1k instances (USD): n = ", "cost_per_1k", None, id="cost-table-column"),
    pytest.param("Latency per 1k instances (min, sequential): n = ", "latency_min_per_1k", None,
                 id="latency-table-column"),
])
def test_amounts_count_their_responses(results_url, monkeypatch, prefix, metric, csv) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    shown = sc.caption_counts(sc.captions_with(sc.open_page(str(REPO / "pages" / "leaderboard.py")), prefix)[0])
    engine = create_engine(results_url)
    responses = len(readmodel.load_scores(engine, [1], "heuristic"))
    engine.dispose()
    assert sum(shown.values()) == responses > 0
    if csv:
        rows = spy.frame(csv).query("metric == @metric")
        assert {state: int(rows[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == shown
        assert shown["scored"] == int(rows["n"].sum())
