"""The count of each score state, counted once from stored verdict statuses, and the caption sentence every results
table, chart and CSV of the pages shows beside its mean."""

from __future__ import annotations

import pandas as pd
import pytest

from core.analysis.readmodel import states


@pytest.mark.parametrize(("statuses", "expected"), [
    pytest.param(["ok", "ok"], {"n_scored": 2, "n_not_applicable": 0, "n_unparseable": 0, "n_error": 0,
                                "n_unscored": 0, "n_skipped": 0}, id="all-scored"),
    pytest.param(["ok", "error", "unparseable", "not_applicable", None, "skipped", float("nan")],
                 {"n_scored": 1, "n_not_applicable": 1, "n_unparseable": 1, "n_error": 1, "n_unscored": 2,
                  "n_skipped": 1}, id="every-state-missing-is-unjudged"),
    pytest.param([], {"n_scored": 0, "n_not_applicable": 0, "n_unparseable": 0, "n_error": 0, "n_unscored": 0,
                      "n_skipped": 0}, id="empty"),
])
def test_state_counts(statuses, expected) -> None:
    assert states.state_counts(pd.Series(statuses, dtype=object)) == expected


SUMMARY = pd.DataFrame({"metric": ["mcq_accuracy"] * 2, "n": [415, 3], "n_scored": [412, 0], "n_unparseable": [3, 0],
                        "n_error": [1, 1], "n_not_applicable": [11, 0], "n_unscored": [0, 0], "n_skipped": [0, 0]})


@pytest.mark.parametrize(("frame", "metric", "expected"), [
    pytest.param(SUMMARY, None, "n = 412 scored · 11 not applicable · 3 unparseable (counted as wrong) · "
                 "2 judge errors · 0 unjudged · 0 skipped",
                 id="summed-over-rows-metric-from-frame"),
    pytest.param(SUMMARY.drop(columns="metric"), "token_f1", "n = 412 scored · 11 not applicable · 3 unparseable "
                 "(left out) · 2 judge errors · 0 unjudged · 0 skipped", id="unparseable-left-out-by-declaration"),
    pytest.param(SUMMARY.drop(columns="metric").iloc[1:], None, "n = 0 scored · 0 not applicable · 0 unparseable · "
                 "1 judge error · 0 unjudged · 0 skipped", id="singular-and-zeros-shown"),
    pytest.param(SUMMARY[["n"]], None, "", id="no-state-columns-no-caption"),
])
def test_frame_state_text(frame, metric, expected) -> None:
    assert states.frame_state_text(frame, metric) == expected


def test_state_text_orders_the_states_as_declared_and_columns_have_readable_headers() -> None:
    assert states.state_text({"skipped": 2, "scored": 1}) == "n = 1 scored · 2 skipped"
    assert states.state_totals(SUMMARY)["not_applicable"] == 11
    assert list(states.state_columns(SUMMARY)) == ["scored", "not applicable", "unparseable", "judge errors", "unjudged",
                                            "skipped"]


STATE_FRAMES = {
    "integer counts": SUMMARY,
    "float counts with gaps": SUMMARY.assign(n_scored=[411.0, None]),
    "text in a count": SUMMARY.assign(n_error=["2", "x"]),
    "boolean flags": SUMMARY.assign(n_skipped=[True, True]),
    "one state column": pd.DataFrame({"n_skipped": [4, 5]}),
    "no state column": pd.DataFrame({"model": ["m"]}),
    "no rows": SUMMARY.iloc[:0],
}


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in STATE_FRAMES])
def test_state_totals_are_each_state_columns_sum(name) -> None:
    frame = STATE_FRAMES[name]
    want = {state: int(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum())
            for state, column in states.STATE_COLUMNS.items() if column in frame.columns}
    assert states.state_totals(frame) == want

ENTERPRISE = pd.DataFrame({
    "model": ["m"] * 5, "mode": ["noisy", "noisy", "gap", "noisy", "noisy"],
    "strict_ias": [1.0, None, None, None, 0.0], "n_constraint_errors": [0, 2, 0, 0, 0],
    "n_constraint_unjudged": [0, 0, 1, 0, 0], "refusal": [0.0, 1.0, 1.0, None, 0.0],
    "refusal_status": ["ok", "ok", "ok", "error", "ok"], "cost_usd": [0.1, None, 0.2, 0.3, 0.1]})


@pytest.mark.parametrize(("metric", "expected"), [
    pytest.param("strict_ias", ["ok", "error", None, "not_applicable", "ok"], id="ias-missing-by-cause"),
    pytest.param("over_abstention", ["ok", "ok", "not_applicable", "error", "ok"], id="gap-not-applicable"),
    pytest.param("refusal", ["ok", "ok", "ok", "error", "ok"], id="stored-status"),
    pytest.param("cost_usd", ["ok", None, "ok", "ok", "ok"], id="amount-measured-or-unjudged"),
])
def test_response_statuses(metric, expected) -> None:
    assert states.response_statuses(ENTERPRISE, metric).tolist() == expected


def test_metric_state_counts_per_model_and_metric() -> None:
    counts = states.metric_state_counts(ENTERPRISE, ["strict_ias"]).iloc[0]
    assert (counts["n_scored"], counts["n_error"], counts["n_unscored"], counts["n_not_applicable"]) == (2, 1, 1, 1)


def _loop_state_counts(scores: pd.DataFrame, metrics, by: str = "model") -> pd.DataFrame:
    """The per-group loop metric_state_counts was before it was vectorised (issue 42): the reference it must match."""
    rows = [{by: key, "metric": metric, **states.state_counts(states.response_statuses(group, metric))}
            for key, group in scores.groupby(by, sort=True) for metric in metrics]
    return pd.DataFrame(rows, columns=[by, "metric", *states.STATE_COLUMNS.values()])


MIXED = pd.concat([ENTERPRISE, ENTERPRISE.assign(model="a", refusal_status=["skipped", None, "weird", "ok", "ok"]),
                   ENTERPRISE.assign(model=None)], ignore_index=True)


@pytest.mark.parametrize(("frame", "metrics", "by"), [
    pytest.param(ENTERPRISE, ["strict_ias", "refusal", "over_abstention", "cost_usd"], "model", id="one-model"),
    pytest.param(MIXED, ["refusal", "strict_ias", "over_abstention"], "model",
                 id="models-sorted-unknown-status-uncounted-missing-key-dropped"),
    pytest.param(MIXED, ["refusal"], "mode", id="by-another-column"),
    pytest.param(MIXED.assign(run=[2, 1] * 7 + [3]), ["refusal"], "run", id="integer-keys"),
    pytest.param(MIXED, [], "model", id="no-metrics"),
    pytest.param(MIXED.iloc[:0], ["refusal"], "model", id="empty"),
])
def test_metric_state_counts_matches_the_loop(frame, metrics, by) -> None:
    got, want = states.metric_state_counts(frame, metrics, by), _loop_state_counts(frame, metrics, by)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=not want.empty)


def test_metric_state_counts_matches_the_loop_at_scale(tmp_path) -> None:
    from bench.make_synthetic_results import make_results
    from core.analysis import readmodel
    from core.analysis.readmodel.leaderboard import with_amounts
    from core.store.db import make_engine

    url = f"sqlite:///{tmp_path / 'r.db'}"
    make_results(url, n_models=3, n_instances=120, seed=5)
    scores = with_amounts(readmodel.load_scores(make_engine(url), [1], "heuristic"))
    metrics = [m.id for m in readmodel.QUALITY_METRICS + readmodel.COST_METRICS]
    pd.testing.assert_frame_equal(states.metric_state_counts(scores, metrics), _loop_state_counts(scores, metrics))
