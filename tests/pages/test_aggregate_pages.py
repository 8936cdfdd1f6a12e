"""The Leaderboard and Domains pages drawn from aggregates: the same tables as from the responses (a benchmark-set or
'accepted only' scope sends them to the responses), and a drill-down that reads the responses only once switched on."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from bench.make_synthetic_results import make_results
from core.store.db import make_engine
from tests.pages.test_dashboards import page_as

pytestmark = pytest.mark.db


@pytest.fixture(scope="module")
def db_url(session_url_factory):
    """A small synthetic results set with every instance accepted by an expert, so 'accepted only' keeps them all."""
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=60, seed=2)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE instance SET status = 'accepted'"))
    engine.dispose()
    return url


@pytest.fixture
def opened(db_url, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")

    def run(page: str, accepted_only: bool = False):
        at = page_as(page, "analyst")
        if accepted_only:
            at.session_state["results_accepted"] = True
        at = at.run()
        assert not at.exception, at.exception
        return at

    return run


def _tables(at) -> list:
    return [frame.value.to_dict("list") for frame in at.dataframe]


@pytest.mark.parametrize("page", ["leaderboard", "domains"])
def test_the_aggregate_path_draws_what_the_responses_draw(opened, page: str) -> None:
    from_aggregates, from_responses = opened(page), opened(page, accepted_only=True)
    assert from_responses.toggle(key="results_accepted").value is True
    assert _tables(from_aggregates) == _tables(from_responses)
    def states(at) -> list[str]:  # the state-count captions (the filter caption names the scope)
        return [c.value for c in at.caption if "scored" in c.value and not c.value.startswith("Judge:")]

    assert states(from_aggregates) and states(from_aggregates) == states(from_responses)


@pytest.mark.parametrize(("page", "key"), [("leaderboard", "lb_drill"), ("domains", "dom_drill"), ("robustness", "rb_drill")])
def test_the_drill_down_reads_the_responses_when_switched_on(opened, page: str, key: str) -> None:
    at = opened(page)
    with pytest.raises(KeyError):
        at.selectbox(key=f"{key}_model")  # nothing read, nothing drawn
    at.toggle(key=f"{key}_load").set_value(True).run()
    assert not at.exception, at.exception
    models = at.selectbox(key=f"{key}_model").options
    assert len(models) >= 3
    assert any("response_id" in frame.value.columns for frame in at.dataframe)  # the responses behind the cell


@pytest.mark.parametrize("accepted_only", [pytest.param(False, id="aggregates"), pytest.param(True, id="responses")])
def test_domains_with_every_model_deselected_draws_the_empty_heatmap(opened, accepted_only: bool) -> None:
    """No model chosen: the radars ask for one and the pooled heatmap is drawn empty on both paths (the aggregate
    path raised a KeyError pivoting no rows)."""
    at = opened("domains", accepted_only=accepted_only)
    at.multiselect(key="dom_models").set_value([]).run()
    assert not at.exception, at.exception
    assert any("Choose at least one model" in info.value for info in at.info)
    assert [s.value for s in at.subheader][:2] == ["Per-domain radar", "Domain x metric heatmap (chosen models pooled)"]
