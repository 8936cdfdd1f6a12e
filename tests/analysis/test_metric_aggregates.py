"""Golden test of the stored metric aggregates (metric_aggregate, written by the summarise stage): the means, n and
state counts they give equal the per-response computation (response_scores + metric_state_counts) to 1e-12, stored
and inline (stale summaries) alike, on the active backend (SQLite, and PostgreSQL in its pass)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.scoring.ias_sums import AMOUNT_METRICS, GAP_HELPERS, IAS_AGGREGATE_METRICS
from core.scoring.summaries import METRIC_NAMES, stale_summary_runs
from core.store.db import make_engine

pytestmark = pytest.mark.db

KEYS = ["model", "domain", "mode"]
IAS_SUMS = ", ".join(f"'{m}'" for m in (*IAS_AGGREGATE_METRICS, *AMOUNT_METRICS, *GAP_HELPERS))


@pytest.fixture(scope="module")
def results(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=90, seed=5, extra_judges=("llm:second",))
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _raw_means(scores: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per `by` and RAG metric: mean, n and sample sd of the per-response frame's counted values."""
    rows = [{by: key, "metric": m, "value": g[m].mean(), "n": int(g[m].notna().sum()), "sd": g[m].std(ddof=1)}
            for m in METRIC_NAMES for key, g in scores.groupby(by, sort=True)]
    return pd.DataFrame(rows).sort_values([by, "metric"], kind="stable").reset_index(drop=True)


def _mark_stale(engine, judge: str) -> None:
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM response_score_state WHERE judge = :judge"), {"judge": judge})


@pytest.mark.parametrize("judge", [pytest.param("heuristic", id="heuristic"), pytest.param("llm:second", id="second")])
@pytest.mark.parametrize("by", KEYS)
@pytest.mark.parametrize("stored", [pytest.param(True, id="stored"), pytest.param(False, id="inline")])
def test_aggregates_equal_the_per_response_computation(results, judge: str, by: str, stored: bool) -> None:
    engine = results
    from core.scoring.summaries import rebuild_summaries

    rebuild_summaries(engine, 1, judge)
    if not stored:
        _mark_stale(engine, judge)
    assert bool(stale_summary_runs(engine, [1], judge)) is not stored
    scores = readmodel.response_scores(engine, [1], judge)
    aggregates = readmodel.metric_aggregates(engine, [1], judge)
    assert int(aggregates[aggregates["metric"] == "faithfulness"]["responses"].sum()) == len(scores)

    expected, got = _raw_means(scores, by), readmodel.aggregate_means(aggregates, METRIC_NAMES, by)
    got = got.sort_values([by, "metric"], kind="stable").reset_index(drop=True)
    assert list(got[by]) == list(expected[by]) and list(got["metric"]) == list(expected["metric"])
    assert (got["n"].to_numpy() == expected["n"].to_numpy()).all()
    np.testing.assert_allclose(got["value"], expected["value"], rtol=0, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got["sd"], expected["sd"], rtol=0, atol=1e-12, equal_nan=True)

    states = readmodel.aggregate_state_counts(aggregates, list(METRIC_NAMES), by)
    pd.testing.assert_frame_equal(states.reset_index(drop=True),
                                  readmodel.metric_state_counts(scores, list(METRIC_NAMES), by).reset_index(drop=True),
                                  check_dtype=False)


def test_the_summarise_stage_writes_them_with_the_metric_rows(results) -> None:
    engine = results
    from core.scoring.summaries import rebuild_summaries

    rebuild_summaries(engine, 1, "heuristic")
    with engine.connect() as conn:
        stored = conn.execute(text("SELECT SUM(responses) FROM metric_aggregate WHERE judge = 'heuristic' "
                                   f"AND metric != '' AND metric NOT IN ({IAS_SUMS})")).scalar()
        ias_rows = conn.execute(text("SELECT SUM(responses) FROM metric_aggregate WHERE judge = 'heuristic' "
                                     "AND metric = 'loose_ias'")).scalar()
        done = conn.execute(text("SELECT COUNT(*) FROM response WHERE status = 'done'")).scalar()
        metric_rows = conn.execute(text("SELECT COUNT(*) FROM response_metric m JOIN response r ON r.id = "
                                        "m.response_id WHERE m.judge = 'heuristic' AND r.status = 'done'")).scalar()
    assert int(stored) == int(metric_rows) > 0
    assert int(ias_rows) == int(done)  # the IAS sums, stored in the same transaction: one per done response


def test_the_migration_marks_the_summaries_stale_until_summarised_again(results) -> None:
    """0027 back-filled the aggregates; 0029 (origin, has_protocol and the IAS sums, which SQL cannot freeze) drops
    them and marks every run stale, so the pages aggregate inline until the summarise stage writes them again."""
    from alembic import command

    from core.scoring.summaries import rebuild_summaries
    from core.store.db import alembic_config

    engine = results
    for judge in ("heuristic", "llm:second"):  # current summaries of both judges (other tests mark one stale)
        rebuild_summaries(engine, 1, judge)
    query = text("SELECT run_id, judge, model_id, protocol, mode, domain_id, language, origin, has_protocol, metric, "
                 "state, responses, n_values, total, total_sq FROM metric_aggregate ORDER BY run_id, judge, model_id, "
                 "protocol, mode, domain_id, language, origin, has_protocol, metric, state")
    with engine.connect() as conn:
        written = [tuple(r) for r in conn.execute(query)]
    url = engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0026")
    command.upgrade(alembic_config(url), "head")
    engine.dispose()
    assert stale_summary_runs(engine, [1], "heuristic") == [1]
    with engine.connect() as conn:
        assert not list(conn.execute(query))
    for judge in ("heuristic", "llm:second"):
        rebuild_summaries(engine, 1, judge)
    with engine.connect() as conn:
        again = [tuple(r) for r in conn.execute(query)]
    assert [r[:13] for r in again] == [r[:13] for r in written] and written
    np.testing.assert_allclose([r[13:] for r in again], [r[13:] for r in written], rtol=0, atol=1e-12)
    assert not stale_summary_runs(engine, [1], "heuristic")
