"""Golden tests of the Robustness page's aggregate path (readmodel.robustness_aggregates): the knowledge-gap means
with their intervals, the conflict ranking with Spearman's rho, both knowledge-protocol effects and the state counts
behind each view equal the per-response computation (readmodel.robustness) to 1e-12, on the bundled sample after first
start and on a paper-scale synthetic set, with stored and with stale summaries, per subset and for one domain, on the
active backend (SQLite, and PostgreSQL in its pass). Also: the aggregates' origin and has_protocol groups count every
response once, as the per-response frame groups them."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from core.analysis import readmodel
from core.analysis.readmodel.enterprise_aggregates import enterprise_aggregates, filter_aggregates
from core.analysis.readmodel.robustness_aggregates import (
    conflict_from_aggregates,
    knowledge_gap_from_aggregates,
    protocol_effect_from_aggregates,
    robustness_aggregates,
    robustness_states_from_aggregates,
    robustness_views_from_aggregates,
)
from core.scoring.summaries import RESPONSES_METRIC
from tests.analysis.summary_datasets import Dataset
from tests.analysis.test_enterprise_aggregates import _same, _table_counts, read_both

# One xdist worker runs this module with the other users of paper_scale_results and of the datasets of
# tests/analysis/conftest.py (each built once per pass): on another worker they were built a second time
pytestmark = [pytest.mark.db, pytest.mark.xdist_group("paper-scale")]

# name -> (aggregate path, per-response path), given (aggregates, scores) narrowed alike, and the models
VIEWS: dict[str, tuple[Callable, Callable]] = {
    "knowledge gap (means, intervals)": (knowledge_gap_from_aggregates, lambda s, m: readmodel.knowledge_gap_view(s, m)),
    "conflict ranking": (lambda a, m: conflict_from_aggregates(a, m)[0], lambda s, m: readmodel.conflict_view(s, m)[0]),
    "conflict Spearman per paradigm": (lambda a, m: conflict_from_aggregates(a, m)[1],
                                       lambda s, m: readmodel.conflict_view(s, m)[1]),
    **{f"protocol effect on {metric}": (lambda a, m, k=metric: protocol_effect_from_aggregates(a, m, k),
                                        lambda s, m, k=metric: readmodel.protocol_effect(s, m, k))
       for metric in readmodel.PROTOCOL_EFFECT_METRICS},
    "state counts": (lambda a, m: robustness_states_from_aggregates(a), lambda s, m: readmodel.robustness_states(s)),
}
PAGE_PARTS = 6  # the page's views (robustness_views), compared part by part: "page's views, part k"


def _flat(views: tuple) -> dict[str, pd.DataFrame]:
    """The page's views (gap, (ranking, rho), effects, states) by name "page's views, part k"."""
    gap, (ranking, rho), effects, states = views
    parts = [gap, ranking, rho, *(effects[k] for k in sorted(effects)), states]
    assert len(parts) == PAGE_PARTS
    return {f"page's views, part {k}": part for k, part in enumerate(parts)}


def views_from_aggregates(aggregates: pd.DataFrame, models: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every view of VIEWS and the page's views by the aggregate path (the page's views built once)."""
    views = {name: from_aggregates(aggregates, models) for name, (from_aggregates, _) in VIEWS.items()}
    return views | _flat(robustness_views_from_aggregates(aggregates, models))


SUBSETS = {"all": [], "gap": ["gap"], "conflict": ["conflict"]}
STATE_METRICS = {"gap": ("loose_knowledge_protocol", "rejection"), "conflict": ("conflict_recognition", "coverage"),
                 "effect": ("conflict_recognition",)}  # the metrics each view's state counts read


def _one_domain(scores: pd.DataFrame) -> list[str]:
    return [sorted(scores["domain"].unique())[0]]


def reference(dataset: Dataset, subset: str, domains: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """Every view of VIEWS and the page's views by the per-response path (readmodel.robustness and friends), and the
    state counts of each view's metrics, in `subset` and `domains`: computed once per pass, for both tests and for the
    stored and the stale copy (whose per-response scores read_both holds equal)."""
    def compute() -> dict[str, pd.DataFrame]:
        scores, _, models = read_both(dataset, False)
        chosen = readmodel.filter_scores(scores, SUBSETS[subset], list(domains))
        views = {name: from_responses(chosen, models) for name, (_, from_responses) in VIEWS.items()}
        states = views["state counts"]
        views |= {f"{view} view's states": _states_of(states, metrics) for view, metrics in STATE_METRICS.items()}
        return views | _flat(readmodel.robustness_views(chosen, models))

    return {name: frame.copy() for name, frame in dataset.once(("robustness views", subset, domains), compute).items()}


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_every_robustness_view_equals_the_per_response_computation(dataset, stale: bool) -> None:
    scores, aggregates, models = read_both(dataset, stale)
    for subset, modes in SUBSETS.items():
        for domains in ([], _one_domain(scores)):
            got = views_from_aggregates(filter_aggregates(aggregates, modes, domains), models)
            want = reference(dataset, subset, tuple(domains))
            assert len(got) == len(VIEWS) + PAGE_PARTS
            for name, frame in got.items():
                try:
                    _same(frame, want[name])
                except AssertionError as error:
                    raise AssertionError(f"{name}, subset {subset}, domains {domains}: {error}") from error


# name -> a view of the page (as results_view computes it) from the aggregates, given (aggregates, models)
PAGE_VIEWS: dict[str, Callable] = {
    "knowledge gap": knowledge_gap_from_aggregates,
    "conflict ranking": lambda a, m: conflict_from_aggregates(a, m)[0],
    "conflict Spearman": lambda a, m: conflict_from_aggregates(a, m)[1],
    **{f"protocol effect on {k}": (lambda a, m, k=k: protocol_effect_from_aggregates(a, m, k))
       for k in readmodel.PROTOCOL_EFFECT_METRICS},
    **{f"{view} view's states": (lambda a, m, k=metrics: robustness_states_from_aggregates(a, k))
       for view, metrics in STATE_METRICS.items()},
}
# a page view -> its name in reference() (the per-response computation it equals)
PAGE_REFERENCE = {"knowledge gap": "knowledge gap (means, intervals)", "conflict Spearman":
                  "conflict Spearman per paradigm"}


def _states_of(states: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """The rows of the per-response state counts a view's states read (its metrics)."""
    return pd.concat([states[states["metric"] == m] for m in metrics], ignore_index=True)


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_the_pages_narrowed_read_gives_every_view_of_the_full_read(dataset, stale: bool) -> None:
    """The page reads only its subsets' and metrics' aggregates (robustness_aggregates, selected by the database) and
    builds one view at a time, the states of its metrics only: each equals the per-response computation to 1e-12."""
    scores, _, models = read_both(dataset, stale)
    engine, run_ids, judge = dataset.at(stale)
    before = _table_counts(engine)
    narrowed = robustness_aggregates(engine, run_ids, judge)
    assert _table_counts(engine) == before  # reading never writes
    assert set(narrowed["mode"]) <= {"gap", "conflict"} and len(narrowed) > 0
    for subset, modes in SUBSETS.items():
        for domains in ([], _one_domain(scores)):
            agg = filter_aggregates(narrowed, modes, domains)
            want = reference(dataset, subset, tuple(domains))
            for name, view in PAGE_VIEWS.items():
                try:
                    _same(view(agg, models), want[PAGE_REFERENCE.get(name, name)])
                except AssertionError as error:
                    raise AssertionError(f"{name}, subset {subset}, domains {domains}: {error}") from error


@pytest.mark.parametrize("column", ["origin", "has_protocol"])
def test_the_new_groups_count_every_response_once(dataset, column: str, request) -> None:
    engine, run_ids, judge = dataset.at(False)
    scores = readmodel.response_scores(engine, run_ids, judge)
    aggregates = enterprise_aggregates(engine, run_ids, judge)
    done = aggregates[aggregates["metric"] == RESPONSES_METRIC]
    want = scores[column].astype(int if column == "has_protocol" else str).value_counts().sort_index()
    got = done.groupby(column)["responses"].sum().sort_index()
    pd.testing.assert_series_equal(got, want, check_names=False, check_dtype=False, check_index_type=False)
    if request.node.callspec.params["dataset"] == "paper":
        assert len(want) == 2  # both origins and both protocol groups occur at paper scale
