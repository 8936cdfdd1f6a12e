"""The Model pairs page (EnterpriseRAG) under every score state: a caption per subset, metric and model under the
table with each state's count among the model's responses of that subset."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine

from core.analysis import readmodel
from tests.pages import state_counts as sc
from tests.pages.test_dashboards import REPO

PAGE = str(REPO / "pages" / "model_pairs.py")


@pytest.fixture(scope="module")
def results_url(session_url_factory):
    return sc.synthetic_results(session_url_factory())


def model_counts(model: str, metric: str, label: str, spy: sc.DownloadSpy | None = None) -> dict[str, int]:
    """The state counts of `model` summed over the subsets' captions, with `metric` chosen and `model` as model A;
    with `spy`, checks that model_pair.csv's a_n_* columns hold the same counts."""
    at = sc.open_page(PAGE, {"mp_metric": metric, "mp_a": model})
    texts = [c.value for c in at.caption if f"· {label}, {model}: n = " in c.value]
    assert texts, [c.value for c in at.caption]
    totals: dict[str, int] = {}
    for text in texts:
        for state, n in sc.caption_counts(text).items():
            totals[state] = totals.get(state, 0) + n
    if spy is not None:
        frame = spy.frame("model_pair.csv")
        assert {state: int(frame[f"a_{column}"].sum()) for state, column in sc.COUNT_COLUMNS.items()} == totals
    return totals


@pytest.mark.parametrize(("metric", "label"), [
    pytest.param("faithfulness", "Faithfulness", id="faithfulness"),
    pytest.param("coverage", "Answer Coverage", id="coverage"),
])
def test_every_state_is_counted_under_the_pair(results_url, monkeypatch, metric, label) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(results_url)
    spy = sc.DownloadSpy(monkeypatch)
    model = sorted(readmodel.load_scores(engine, [1], "heuristic")["model"].unique())[0]
    before = model_counts(model, metric, label, spy)
    with sc.injected_states(engine, run_ids=[1], judge="heuristic", metric=metric, model=model, condition="",
                            protocol="enterprise_rag", replace=True):
        after = model_counts(model, metric, label, spy)
    assert {state: after[state] - before[state] for state in after} == sc.DELTAS
    engine.dispose()
