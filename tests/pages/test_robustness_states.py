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


@pytest.mark.parametrize(("metric", "prefix", "radio"), [
    pytest.param("rejection", "Knowledge gaps, Rejection accuracy", None, id="gap-bars"),
    pytest.param("conflict_recognition", "Factual conflicts, Conflict recognition", None, id="conflict-table"),
    pytest.param("rejection", "Protocol effect, Rejection accuracy", None, id="effect-rejection"),
    pytest.param("conflict_recognition", "Protocol effect, Conflict recognition", "conflict_recognition",
                 id="effect-conflict"),
])
def test_every_state_is_counted_under_the_view(results_url, monkeypatch, metric, prefix, radio) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(results_url)
    model = sorted(readmodel.load_scores(engine, [1], "heuristic")["model"].unique())[0]

    def shown() -> dict[str, int]:
        at = sc.open_page(PAGE)
        if radio:
            at.radio(key="rb_protocol_metric").set_value(radio).run()
        return sc.caption_counts(sc.captions_with(at, prefix)[0])

    before = shown()
    with sc.injected_states(engine, run_ids=[1], judge="heuristic", metric=metric, model=model, condition="",
                            protocol="enterprise_rag", replace=True):
        after = shown()
    assert {state: after[state] - before[state] for state in after} == sc.DELTAS
    engine.dispose()
