"""Golden tests of the aggregate path of the results pages (readmodel.enterprise_aggregates, leaderboard_aggregates):
every frame the Domains and Leaderboard pages draw from the aggregates (RAG metrics from metric_aggregate; IAS, amounts
and the gap's helpers summed from the stored constraint counts) equals the one the
per-response path (response_scores + the breakdowns) gives, to 1e-12, on the bundled sample after first start and on
a paper-scale synthetic set (15 models x 983 instances, baselines included), with stored and with stale summaries (then the aggregates
are computed inline from the verdicts), on the active backend (SQLite, and PostgreSQL in its pass). Reading them
never writes."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest
from sqlalchemy import text

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.analysis.readmodel.enterprise_aggregates import (
    DOMAIN_READS,
    IAS_AGGREGATE_METRICS,
    domain_aggregates,
    domain_metrics_from_aggregates,
    domain_pooled_from_aggregates,
    enterprise_aggregates,
    filter_aggregates,
    group_metric_states,
)
from core.analysis.readmodel.leaderboard_aggregates import (
    BOARD_READS,
    board_aggregates,
    board_from_aggregates,
    gap_bounds_from_aggregates,
    leaderboard_from_aggregates,
    leaderboard_states_from_aggregates,
)
from core.scoring.summaries import METRIC_NAMES
from core.store.db import make_engine
from core.store.models import Response
from tests.analysis.summary_datasets import Dataset, fresh

# One xdist worker runs this module with the other users of paper_scale_results and of the datasets of
# tests/analysis/conftest.py (each built once per pass)
pytestmark = [pytest.mark.db, pytest.mark.xdist_group("paper-scale")]

METRICS = [*METRIC_NAMES, *IAS_AGGREGATE_METRICS]
DOMAIN_METRICS = list(readmodel.DOMAIN_METRICS)
TABLES = ("metric_aggregate", "response_metric", "response_score", "response_score_state", "failure_count")


def _table_counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: int(conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar_one()) for t in TABLES}


def _read(dataset: Dataset, stale: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    engine, run_ids, judge = dataset.at(stale)
    scores = readmodel.scores_from_responses(readmodel.response_scores(engine, run_ids, judge))
    before = _table_counts(engine)
    aggregates = enterprise_aggregates(engine, run_ids, judge)
    assert _table_counts(engine) == before  # reading never writes
    assert not scores.empty
    if stale:  # the per-response frame is the same either way: one reference serves both cases
        pd.testing.assert_frame_equal(scores, read_both(dataset, False)[0], check_exact=True)
    return scores, aggregates, readmodel.model_catalog(engine)  # the leaderboard's model order and marks


def read_both(dataset: Dataset, stale: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(per-response scores, aggregates, model catalogue) of `dataset` with stored or stale summaries, read once per
    pass; the aggregate read writes nothing, also when the summaries are stale, and the stale copy's per-response
    scores equal the stored copy's exactly."""
    return fresh(dataset.once(("read_both", stale), lambda: _read(dataset, stale)))


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False,
                                  check_index_type=False, check_column_type=False, rtol=0, atol=1e-12)


def _pooled(scores: pd.DataFrame) -> list[str]:
    return sorted(scores["model"].unique())[:5]


# name -> (aggregate path given (aggregates, scores) narrowed to the subset and the models, per-response path given
# (scores, models))
VIEWS: dict[str, tuple[Callable, Callable]] = {
    "states by model": (lambda a, s, m: group_metric_states(a, ["model"], METRICS),
                        lambda s, m: readmodel.domain_metric_states(s, ["model"], METRICS)),
    "states by model and domain": (lambda a, s, m: group_metric_states(a, ["model", "domain"], METRICS),
                                   lambda s, m: readmodel.domain_metric_states(s, ["model", "domain"], METRICS)),
    "states by model, domain and mode": (
        lambda a, s, m: group_metric_states(a, ["model", "domain", "mode"], METRICS),
        lambda s, m: readmodel.domain_metric_states(s, ["model", "domain", "mode"], METRICS)),
    "state counts by domain": (
        lambda a, s, m: group_metric_states(a, ["domain"], METRICS).drop(columns=["mean", "n"]),
        lambda s, m: readmodel.metric_state_counts(s, METRICS, by="domain")),
    "domain metrics (radars)": (lambda a, s, m: domain_metrics_from_aggregates(a, DOMAIN_METRICS),
                                lambda s, m: readmodel.domain_metrics(s)),
    "radar points of five models": (
        lambda a, s, m: domain_pooled_from_aggregates(filter_aggregates(a, models=_pooled(s)), DOMAIN_METRICS)[1],
        lambda s, m: readmodel.domain_metric_states(s[s["model"].isin(_pooled(s))], ["model", "domain"])),
    "heatmap cells of five models": (
        lambda a, s, m: domain_pooled_from_aggregates(filter_aggregates(a, models=_pooled(s)), DOMAIN_METRICS)[2],
        lambda s, m: readmodel.domain_metric_states(s[s["model"].isin(_pooled(s))], ["domain"])),
    "heatmap means": (lambda a, s, m: domain_pooled_from_aggregates(a, DOMAIN_METRICS)[3],
                      lambda s, m: readmodel.domain_heatmap(s)),
    "heatmap counts": (lambda a, s, m: domain_pooled_from_aggregates(a, DOMAIN_METRICS)[4],
                       lambda s, m: s.groupby("domain", sort=True)[DOMAIN_METRICS].count()),
    "heatmap means of no model": (  # the Domains page with every model deselected
        lambda a, s, m: domain_pooled_from_aggregates(filter_aggregates(a, models=[]), DOMAIN_METRICS)[3],
        lambda s, m: readmodel.domain_heatmap(s[s["model"].isin([])])),
    "heatmap counts of no model": (
        lambda a, s, m: domain_pooled_from_aggregates(filter_aggregates(a, models=[]), DOMAIN_METRICS)[4],
        lambda s, m: s[s["model"].isin([])].groupby("domain", sort=True)[DOMAIN_METRICS].count()),
    "leaderboard (means, intervals, gap, marks)": (
        lambda a, s, m: leaderboard_from_aggregates(a, m), lambda s, m: readmodel.leaderboard(s, m)),
    "leaderboard state counts": (lambda a, s, m: leaderboard_states_from_aggregates(a),
                                 lambda s, m: readmodel.leaderboard_states(s)),
    "orchestration gap bounds": (lambda a, s, m: gap_bounds_from_aggregates(a), lambda s, m: readmodel.gap_bounds(s)),
}
SUBSETS = {"all": [], "noisy": ["noisy"], "gap": ["gap"], "conflict": ["conflict"]}


def reference(dataset: Dataset, subset: str) -> dict[str, pd.DataFrame]:
    """Every view of VIEWS by the per-response path in `subset`, computed once per pass (the same for the stored and
    the stale copy, whose per-response scores read_both holds equal)."""
    def compute() -> dict[str, pd.DataFrame]:
        scores, _, models = read_both(dataset, False)
        narrowed = readmodel.filter_scores(scores, SUBSETS[subset])
        return {name: from_responses(narrowed, models) for name, (_, from_responses) in VIEWS.items()}

    return {name: frame.copy() for name, frame in dataset.once(("enterprise views", subset), compute).items()}


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_every_view_equals_the_per_response_computation(dataset, stale: bool) -> None:
    scores, aggregates, models = read_both(dataset, stale)
    for subset, modes in SUBSETS.items():
        narrowed, agg = readmodel.filter_scores(scores, modes), filter_aggregates(aggregates, modes)
        want = reference(dataset, subset)
        for name, (from_aggregates, _) in VIEWS.items():
            try:
                _same(from_aggregates(agg, narrowed, models), want[name])
            except AssertionError as error:
                raise AssertionError(f"{name}, subset {subset}: {error}") from error


# The Domains page's narrowed read (domain_aggregates): its metrics' rows as stored, in every mode
DOMAIN_VIEWS = ("domain metrics (radars)", "radar points of five models", "heatmap cells of five models", "heatmap means",
                "heatmap counts", "heatmap means of no model", "heatmap counts of no model")


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_the_domain_read_gives_the_full_reads_domain_views(dataset, stale: bool) -> None:
    """Every Domains view from domain_aggregates equals the one from the full read (bit for bit on SQLite, where both
    reads return the rows in the same order; to 1e-12 elsewhere) and the per-response path's, in every subset."""
    scores, aggregates, models = read_both(dataset, stale)
    engine, run_ids, judge = dataset.at(stale)
    before = _table_counts(engine)
    narrowed = domain_aggregates(engine, run_ids, judge)
    assert _table_counts(engine) == before  # reading never writes
    assert set(narrowed["metric"]) == set(DOMAIN_READS)
    assert len(narrowed) == int(aggregates["metric"].isin(list(DOMAIN_READS)).sum())  # the same rows, none summed
    exact = engine.dialect.name == "sqlite"
    for subset, modes in SUBSETS.items():
        chosen, whole = filter_aggregates(narrowed, modes), filter_aggregates(aggregates, modes)
        responses = readmodel.filter_scores(scores, modes)
        want = reference(dataset, subset)
        for name in DOMAIN_VIEWS:
            from_aggregates = VIEWS[name][0]
            got = from_aggregates(chosen, responses, models)
            try:
                if exact:
                    pd.testing.assert_frame_equal(got, from_aggregates(whole, responses, models), check_exact=True)
                _same(got, from_aggregates(whole, responses, models))
                _same(got, want[name])
            except AssertionError as error:
                raise AssertionError(f"{name}, subset {subset}: {error}") from error


def test_the_aggregates_count_every_response_once(dataset) -> None:
    engine, run_ids, judge = dataset.at(False)
    scores = readmodel.response_scores(engine, run_ids, judge)
    aggregates = enterprise_aggregates(engine, run_ids, judge)
    for metric in [*METRICS, "cost_per_1k", "latency_min_per_1k"]:
        assert int(aggregates.loc[aggregates["metric"] == metric, "responses"].sum()) == len(scores), metric


def test_a_narrowed_scope_reads_the_responses() -> None:
    from ui import results_view

    filters = results_view.Filters((1,), "heuristic", "all", (), ("v",), results_view.Scope(accepted_only=True))
    assert results_view.domain_aggregates_for(filters) is None  # per run: a benchmark set or 'accepted only' needs the rows


def answer_twice(engine) -> None:
    """The first response answered again (its second repeat, a new response id)."""
    with engine.begin() as conn:
        columns = [c.name for c in Response.__table__.columns]
        listed = ", ".join(f'"{c}"' for c in columns)
        new = {"id": "(SELECT MAX(id) FROM response) + 1", "repeat": '"repeat" + 1'}  # its second answer
        copied = ", ".join(new.get(c, f'"{c}"') for c in columns)
        conn.execute(text(f"INSERT INTO response ({listed}) SELECT {copied} FROM response "
                          "WHERE id = (SELECT MIN(id) FROM response)"))


@pytest.mark.parametrize("repeat", [pytest.param(False, id="once"), pytest.param(True, id="answered-twice")])
def test_repeated_items_send_the_pages_to_the_responses(backend_url_factory, repeat: bool) -> None:
    """A model answering an item twice (repeats, or overlapping runs): the per-response frame keeps one value per
    item, which sums over responses cannot give, so items_repeat sends the pages to the responses."""
    from core.analysis.readmodel.enterprise_aggregates import items_repeat

    url = backend_url_factory()
    make_results(url, n_models=2, n_instances=12, seed=1, with_baselines=False)
    engine = make_engine(url)
    if repeat:
        answer_twice(engine)
    assert items_repeat(engine, [1]) is repeat
    engine.dispose()


def test_the_leaderboards_one_pass_equals_its_three_parts(dataset) -> None:
    """board_from_aggregates (what the Leaderboard reads: sums and gap bounds made once) gives exactly the board,
    state counts and gap bounds of the three functions held to the per-response path above, in every subset."""
    engine, run_ids, judge = dataset.at(False)
    aggregates, models = enterprise_aggregates(engine, run_ids, judge), readmodel.model_catalog(engine)
    for modes in SUBSETS.values():
        chosen = filter_aggregates(aggregates, modes)
        board, states, bounds = board_from_aggregates(chosen, models)
        assert not board.empty
        pd.testing.assert_frame_equal(states, leaderboard_states_from_aggregates(chosen))
        pd.testing.assert_frame_equal(bounds, gap_bounds_from_aggregates(chosen))
        pd.testing.assert_frame_equal(board, leaderboard_from_aggregates(chosen, models))


# The Leaderboard's narrowed read (board_aggregates): only the metrics its board draws, in the chosen subset and
# domains, summed per model, mode, metric and state by the database
PARTS = ("board", "state counts", "gap bounds")


def _choices(scores: pd.DataFrame) -> list[tuple[str, list[str], list[str]]]:
    """(name, modes, domains) of every subset, with all domains and with one."""
    one_domain = [sorted(scores["domain"].unique())[0]]
    return [(f"{subset}, {'one domain' if domains else 'all domains'}", modes, domains)
            for subset, modes in SUBSETS.items() for domains in ([], one_domain)]


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_the_narrowed_read_gives_the_full_reads_board(dataset, stale: bool) -> None:
    scores, aggregates, models = read_both(dataset, stale)
    engine, run_ids, judge = dataset.at(stale)
    for name, modes, domains in _choices(scores):
        before = _table_counts(engine)
        narrowed = board_aggregates(engine, run_ids, judge, modes, domains)
        assert _table_counts(engine) == before  # reading never writes
        assert set(narrowed["metric"]) <= set(BOARD_READS) and len(narrowed) > 0
        got = board_from_aggregates(narrowed, models)
        full = board_from_aggregates(filter_aggregates(aggregates, modes, domains), models)
        chosen = readmodel.filter_scores(scores, modes, domains)
        responses = (readmodel.leaderboard(chosen, models), readmodel.leaderboard_states(chosen),
                     readmodel.gap_bounds(chosen))
        assert not got[0].empty
        for part, mine, whole, per_response in zip(PARTS, got, full, responses, strict=True):
            try:
                _same(mine, whole)
                _same(mine, per_response)
            except AssertionError as error:
                raise AssertionError(f"{part}, {name}: {error}") from error


def test_the_stored_read_is_summed_by_the_database(dataset) -> None:
    """With current summaries the read holds one row per model, mode, metric and state, and counts every done
    response once."""
    scores, _, _ = read_both(dataset, False)
    engine, run_ids, judge = dataset.at(False)
    narrowed = board_aggregates(engine, run_ids, judge)
    keys = ["model", "mode", "metric", "state"]
    assert not narrowed.duplicated(keys).any()
    assert set(narrowed["model"]) == set(scores["model"])
    assert int(narrowed.loc[narrowed["metric"] == "", "responses"].sum()) == len(scores)
