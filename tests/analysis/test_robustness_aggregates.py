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
from tests.analysis.test_enterprise_aggregates import (
    _same,
    _set_stale,
    _table_counts,
    dataset,
    paper,
    read_both,
    sample,
)

__all__ = ["dataset", "paper", "sample"]  # the shared fixtures

pytestmark = pytest.mark.db

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
    **{f"page's views, part {k}": (lambda a, m, k=k: _flat(robustness_views_from_aggregates(a, m))[k],
                                   lambda s, m, k=k: _flat(readmodel.robustness_views(s, m))[k]) for k in range(6)},
}
def _flat(views: tuple) -> list[pd.DataFrame]:
    """The page's views (gap, (ranking, rho), effects, states) as one list of frames."""
    gap, (ranking, rho), effects, states = views
    return [gap, ranking, rho, *(effects[k] for k in sorted(effects)), states]


SUBSETS = {"all": [], "gap": ["gap"], "conflict": ["conflict"]}


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_every_robustness_view_equals_the_per_response_computation(dataset, stale: bool) -> None:
    scores, aggregates, models = read_both(dataset, stale)
    one_domain = [sorted(scores["domain"].unique())[0]]
    for subset, modes in SUBSETS.items():
        for domains in ([], one_domain):
            narrowed, agg = readmodel.filter_scores(scores, modes, domains), filter_aggregates(aggregates, modes, domains)
            for name, (from_aggregates, from_responses) in VIEWS.items():
                try:
                    _same(from_aggregates(agg, models), from_responses(narrowed, models))
                except AssertionError as error:
                    raise AssertionError(f"{name}, subset {subset}, domains {domains}: {error}") from error


# name -> a view of the page (as results_view computes it) from the aggregates, given (aggregates, models)
PAGE_VIEWS: dict[str, Callable] = {
    "knowledge gap": knowledge_gap_from_aggregates,
    "conflict ranking": lambda a, m: conflict_from_aggregates(a, m)[0],
    "conflict Spearman": lambda a, m: conflict_from_aggregates(a, m)[1],
    **{f"protocol effect on {k}": (lambda a, m, k=k: protocol_effect_from_aggregates(a, m, k))
       for k in readmodel.PROTOCOL_EFFECT_METRICS},
    "gap view's states": lambda a, m: robustness_states_from_aggregates(a, ("loose_knowledge_protocol", "rejection")),
    "conflict view's states": lambda a, m: robustness_states_from_aggregates(a, ("conflict_recognition", "coverage")),
    "effect view's states": lambda a, m: robustness_states_from_aggregates(a, ("conflict_recognition",)),
}


def _states_of(states: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of the per-response state counts a view's states read (the metrics its name says)."""
    metrics = {"gap": ["loose_knowledge_protocol", "rejection"], "conflict": ["conflict_recognition", "coverage"],
               "effect": ["conflict_recognition"]}[name.split(" ")[0]]
    return pd.concat([states[states["metric"] == m] for m in metrics], ignore_index=True)


@pytest.mark.parametrize("stale", [pytest.param(False, id="stored"), pytest.param(True, id="stale-inline")])
def test_the_pages_narrowed_read_gives_every_view_of_the_full_read(dataset, stale: bool) -> None:
    """The page reads only its subsets' and metrics' aggregates (robustness_aggregates, selected by the database) and
    builds one view at a time, the states of its metrics only: each equals the per-response computation to 1e-12."""
    scores, _, models = read_both(dataset, stale)
    engine, run_ids, judge = dataset
    before = _table_counts(engine)
    narrowed = robustness_aggregates(engine, run_ids, judge)
    assert _table_counts(engine) == before  # reading never writes
    assert set(narrowed["mode"]) <= {"gap", "conflict"} and len(narrowed) > 0
    one_domain = [sorted(scores["domain"].unique())[0]]
    for subset, modes in SUBSETS.items():
        for domains in ([], one_domain):
            chosen, agg = readmodel.filter_scores(scores, modes, domains), filter_aggregates(narrowed, modes, domains)
            want = {"knowledge gap": readmodel.knowledge_gap_view(chosen, models),
                    "conflict ranking": readmodel.conflict_view(chosen, models)[0],
                    "conflict Spearman": readmodel.conflict_view(chosen, models)[1],
                    **{f"protocol effect on {k}": readmodel.protocol_effect(chosen, models, k)
                       for k in readmodel.PROTOCOL_EFFECT_METRICS}}
            states = readmodel.robustness_states(chosen)
            for name, view in PAGE_VIEWS.items():
                expected = want[name] if name in want else _states_of(states, name)
                try:
                    _same(view(agg, models), expected)
                except AssertionError as error:
                    raise AssertionError(f"{name}, subset {subset}, domains {domains}: {error}") from error


@pytest.mark.parametrize("column", ["origin", "has_protocol"])
def test_the_new_groups_count_every_response_once(dataset, column: str, request) -> None:
    engine, run_ids, judge = dataset
    _set_stale(engine, run_ids, judge, False)
    scores = readmodel.response_scores(engine, run_ids, judge)
    aggregates = enterprise_aggregates(engine, run_ids, judge)
    done = aggregates[aggregates["metric"] == RESPONSES_METRIC]
    want = scores[column].astype(int if column == "has_protocol" else str).value_counts().sort_index()
    got = done.groupby(column)["responses"].sum().sort_index()
    pd.testing.assert_series_equal(got, want, check_names=False, check_dtype=False, check_index_type=False)
    if request.node.callspec.params["dataset"] == "paper":
        assert len(want) == 2  # both origins and both protocol groups occur at paper scale
