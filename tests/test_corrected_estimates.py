"""Judge-corrected metrics in the read model: raw judge means beside PPI++ estimates from the gold labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import readmodel
from core.analysis.ppi import MIN_LABELS
from tests.test_alignment import build


def _scores_and_gold(seed: int, n_models: int = 2, per_model: int = 600, labelled: int = 120):
    """Responses with a true Strict IAS outcome, a judge that over-credits (says pass on 40% of true fails), and
    expert gold labels on a random subset; truth per model 0.5 and 0.35."""
    rng = np.random.default_rng(seed)
    rows, gold, truth = [], [], {}
    rid = 0
    for m in range(n_models):
        p = 0.5 - 0.15 * m
        truth[f"m{m}"] = p
        for i in range(per_model):
            rid += 1
            y = float(rng.random() < p)
            f = 1.0 if y else float(rng.random() < 0.4)
            rows.append({"response_id": rid, "model": f"m{m}", "instance_uid": f"i{i}", "mode": "noisy",
                         "strict_ias": f, "loose_ias": np.nan, "rejection": np.nan, "conflict_recognition": np.nan})
            if i < labelled:
                gold.append({0: rid, 1: {"constraints": {"c1": bool(y)}}})
    gold_frame = readmodel.gold_values({g[0]: g[1] for g in gold})
    return pd.DataFrame(rows), gold_frame, truth


def test_correction_removes_the_judge_bias() -> None:
    scores, gold, truth = _scores_and_gold(seed=1)
    out = readmodel.corrected_estimates(scores, gold).set_index(["model", "metric"])
    for model, p in truth.items():
        row = out.loc[(model, "strict_ias")]
        assert row["N"] == 600 and row["n"] == 120 and row["judge_n"] == 600
        assert row["judge_value"] > p + 0.15  # the judge over-credits
        assert row["ci_low"] <= p <= row["ci_high"]
        assert row["ci_high"] - row["ci_low"] <= row["gold_ci_high"] - row["gold_ci_low"] + 1e-12
        assert row["method"] in ("PPI", "PPI++", "gold only") and row["effective_n"] >= row["n"] - 1e-9


def test_undetermined_judge_values_are_predicted_by_the_judge_mean_and_metrics_without_gold_say_so() -> None:
    scores, gold, _ = _scores_and_gold(seed=2, n_models=1)
    scores.loc[scores.index[::3], "strict_ias"] = np.nan
    out = readmodel.corrected_estimates(scores, gold).set_index(["model", "metric"])
    row = out.loc[("m0", "strict_ias")]
    assert row["N"] == 600 and row["judge_n"] == 400 and np.isfinite(row["estimate"])
    assert f"needs at least {MIN_LABELS} gold labels (has 0)" in out.loc[("m0", "rejection"), "note"]


def test_ranking_change_is_reported() -> None:
    corrected = pd.DataFrame({"model": ["a", "b"], "metric": ["strict_ias"] * 2, "judge_value": [0.8, 0.6],
                              "estimate": [0.4, 0.5]})
    assert readmodel.ranking_changes(corrected) == ["Strict IAS"]
    assert readmodel.ranking_changes(corrected.assign(estimate=[0.6, 0.5])) == []


def test_load_corrected_reads_the_gold_labels(tmp_path) -> None:
    s, _ = build(tmp_path)
    out = readmodel.load_corrected(s.engine, [s.run_id], "llm:j1")
    assert set(out["metric"]) == set(readmodel.GOLD_METRICS)
    assert (out["n"] <= out["N"]).all() and out["n"].sum() > 0


def test_leaderboard_page_shows_corrected_beside_raw(tmp_path, monkeypatch) -> None:
    from tests.pages.test_dashboards import page_as

    s, _ = build(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", str(s.engine.url))
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = page_as("leaderboard", "analyst").run()
    assert not at.exception, at.exception
    assert "Judge-corrected estimates (expert gold labels)" in [h.value for h in at.subheader]
    table = at.dataframe[-1].value
    assert {"raw judge", "corrected [95% CI]", "gold only [95% CI]", "N", "n", "effective n"} <= set(table.columns)
    states = table[list(readmodel.STATE_COLUMNS.values())]  # the judge's states beside its raw mean, summing to N
    assert (states.sum(axis=1) == table["N"]).all()


def test_paired_difference_is_corrected_and_covers_the_true_gap() -> None:
    rng = np.random.default_rng(8)
    hits, reps = 0, 200
    for _ in range(reps):
        rows, gold = [], {}
        for m, p in (("a", 0.6), ("b", 0.45)):
            for i in range(400):
                rid = len(rows) + 1
                y = float(rng.random() < p)
                f = 1.0 if y else float(rng.random() < (0.5 if m == "b" else 0.1))  # the judge favours b
                rows.append({"response_id": rid, "model": m, "instance_uid": f"i{i}", "strict_ias": f})
                if i < 80:
                    gold[rid] = {"constraints": {"c1": bool(y)}}
        out = readmodel.corrected_difference(pd.DataFrame(rows), readmodel.gold_values(gold), "a", "b")
        hits += out["ci_low"] <= 0.15 <= out["ci_high"]
    assert out["shared"] == 400 and out["n"] == 80 and out["judge_diff"] < 0.05  # raw: the judge hides the gap
    assert hits / reps >= 0.93


@pytest.mark.parametrize(("labels", "models"), [pytest.param(MIN_LABELS - 1, 0, id="below-the-minimum-no-width"),
                                                pytest.param(2 * MIN_LABELS, 2, id="enough-labels-both-models")])
def test_judge_value_compares_corrected_and_gold_only_widths(backend_url_factory, labels, models) -> None:
    from bench.make_synthetic_results import make_results
    from core.analysis.alignment import judge_value
    from core.store.db import make_engine

    url = backend_url_factory()
    make_results(url, n_models=2, n_instances=60, seed=3, with_baselines=False, extra_judges=("llm:j1",))
    engine = make_engine(url)
    scores = readmodel.load_scores(engine, [1], "heuristic")
    labelled = scores.groupby("model").head(labels)["response_id"]  # gold: Strict IAS passes on every third response
    gold = {int(r): {"constraints": {"c1": int(r) % 3 == 0}} for r in labelled}
    out = judge_value(engine, [1], ["llm:j1", "heuristic"], gold).query("metric == 'Strict IAS'")
    assert list(out["models"]) == [models, models] and (out["n"] == 2 * labels).all()
    assert set(out["judge"]) == {"llm:j1", "heuristic"} and out["corrected_ci_width"].notna().all() == bool(models)
    assert (out["gold_only_ci_width"] > 0).all() or not models  # Wilson on the same n: the standard yardstick


@pytest.mark.parametrize(
    ("estimates", "expect"),
    [pytest.param({"a": 0.3, "b": 0.6}, "b would rank first instead of a", id="correction-flips-the-choice"),
     pytest.param({"a": 0.6, "b": 0.3}, "a stays first", id="correction-keeps-the-choice")],
)
def test_picker_says_whether_the_correction_changes_the_choice(estimates, expect) -> None:
    from core.analysis import picker

    rows = [{"response_id": i * 2 + k, "model": m, "instance_uid": f"i{i}", "domain": "D", "mode": "noisy",
             "origin": "natural", "strict_ias": v, "faithfulness": np.nan, "coverage": np.nan, "loose_ias": np.nan,
             "rejection": np.nan, "conflict_recognition": np.nan, "refusal": 0.0, "cost_usd": 0.0}
            for i in range(40) for k, (m, v) in enumerate((("a", 0.9), ("b", 0.5)))]
    models = pd.DataFrame({"model": ["a", "b"], "paradigm": "standard", "access": "open", "is_baseline": False})
    result = picker.rank(readmodel.prepare_scores(pd.DataFrame(rows)), models, picker.PickSpec(weights={"strict_ias": 1.0}))
    assert result.leader == "a"
    corrected = pd.DataFrame({"model": list(estimates), "metric": "strict_ias", "estimate": list(estimates.values()),
                              "n": 20})
    assert expect in picker.corrected_choice(result, corrected)


@pytest.mark.parametrize("strategy", ["stratified", "uncertainty"])
def test_gold_draw_records_inclusion_probabilities(tmp_path, strategy) -> None:
    from core.review.gold import draw_gold_sample
    from core.store.labels import gold_probabilities
    from tests.test_alignment import principal, seeded_db

    s = seeded_db(tmp_path)
    report = draw_gold_sample(s.engine, principal("admin"), s.run_id, n=2, experts=["alice", "bob"], seed=3,
                              strategy=strategy)
    probabilities = gold_probabilities(s.engine, [s.run_id])
    assert len(probabilities) == report.sampled and all(0 < p <= 1 for p in probabilities.values())
    if strategy == "stratified":
        assert all(p == pytest.approx(0.5) or p == pytest.approx(1.0) for p in probabilities.values())


def test_weighted_correction_is_used_when_probabilities_are_recorded() -> None:
    scores, gold, truth = _scores_and_gold(seed=5, n_models=1)
    probabilities = {int(r): 0.2 if i % 2 else 0.5 for i, r in enumerate(gold["response_id"])}  # unequal: weighted
    out = readmodel.corrected_estimates(scores, gold, probabilities=probabilities).set_index("metric")
    row = out.loc["strict_ias"]
    assert "inverse-probability" in row["method"] and row["ci_low"] <= truth["m0"] <= row["ci_high"]
    uniform = {int(r): 0.2 for r in gold["response_id"]}  # a uniform (stratified) draw: PPI++ or the standard one
    row = readmodel.corrected_estimates(scores, gold, probabilities=uniform).set_index("metric").loc["strict_ias"]
    assert "inverse-probability" not in row["method"] and not row["note"]
    assert row["ci_high"] - row["ci_low"] <= row["gold_ci_high"] - row["gold_ci_low"] + 1e-12
    assert "assumed a uniform sample" in readmodel.corrected_estimates(scores, gold).set_index("metric").loc["strict_ias", "note"]


@pytest.mark.parametrize(("metric", "column", "values", "expect"), [
    pytest.param("strict_ias", "n_constraint_errors", [1, 1, 1], {"n_scored": 597, "n_error": 3},
                 id="ias-missing-after-a-failed-constraint-verdict-is-a-judge-error"),
    pytest.param("strict_ias", "n_constraint_unjudged", [2, 1, 1], {"n_scored": 597, "n_unscored": 3},
                 id="ias-missing-with-an-unjudged-constraint-is-unjudged"),
    pytest.param("strict_ias", None, [], {"n_scored": 597, "n_not_applicable": 3},
                 id="ias-missing-without-a-constraint-of-the-kind-is-not-applicable"),
    pytest.param("rejection", "rejection_status", ["unparseable", "error", "not_applicable"],
                 {"n_unparseable": 1, "n_error": 1, "n_not_applicable": 1}, id="rejection-stored-statuses"),
])
def test_every_row_counts_the_states_of_the_judge_values_behind_its_raw_mean(metric, column, values, expect) -> None:
    scores, gold, _ = _scores_and_gold(seed=3, n_models=1)
    scores = scores.assign(n_constraint_errors=0, n_constraint_unjudged=0, rejection_status=None)
    missing = scores.index[:3]
    scores.loc[missing, "strict_ias"] = np.nan
    if metric == "rejection":
        scores.loc[scores.index[:300], "mode"] = "gap"
        scores.loc[scores.index[3:300], ["rejection", "rejection_status"]] = [1.0, "ok"]
        expect = expect | {"n_scored": 297}
    if column:
        scores[column] = scores[column].astype(object)
        scores.loc[missing, column] = values
    row = readmodel.corrected_estimates(scores, gold).set_index("metric").loc[metric]
    counts = {c: int(row[c]) for c in readmodel.STATE_COLUMNS.values()}
    assert counts == {c: 0 for c in readmodel.STATE_COLUMNS.values()} | expect
    assert sum(counts.values()) == row["N"]


@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "recorded_probabilities"])
def test_a_judge_that_decided_nothing_earns_no_credit(weighted: bool) -> None:
    """Every judge value undetermined: the estimate is the labels' own, with their plain interval, method 'labels
    only', no effective n and a note saying why (the old constant 0.5 fill claimed PPI++ and effective n > n)."""
    scores, gold, _ = _scores_and_gold(seed=3, n_models=1)
    scores["strict_ias"] = np.nan
    probabilities = {int(r): 0.2 for r in gold["response_id"]} if weighted else None
    row = readmodel.corrected_estimates(scores, gold, probabilities=probabilities).set_index(
        ["model", "metric"]).loc[("m0", "strict_ias")]
    assert row["judge_n"] == 0 and row["n"] == 120
    assert row["method"] == readmodel.LABELS_ONLY and np.isnan(row["effective_n"]) and row["lam"] == 0.0
    assert readmodel.NO_JUDGE_NOTE in row["note"]
    if not weighted:
        assert abs(row["estimate"] - row["gold_mean"]) <= 1e-12
        assert (row["ci_low"], row["ci_high"]) == (row["gold_ci_low"], row["gold_ci_high"])


def test_a_segment_difference_without_judge_values_shows_no_raw_judge_difference() -> None:
    scores, gold, _ = _scores_and_gold(seed=4)
    scores["strict_ias"] = np.nan
    d = readmodel.corrected_difference(scores, gold, "m0", "m1")
    assert np.isnan(d["judge_diff"]) and d["method"] == readmodel.LABELS_ONLY and np.isnan(d["effective_n"])
    assert np.isfinite(d["estimate"]) and "neither model" in d["note"]


def test_leaderboard_quotes_the_benchmark_below_30_labels(tmp_path, monkeypatch) -> None:
    """Rows on fewer than 30 gold labels: the page quotes the product's benchmark (the shown interval and the
    correction alone against the labels-only interval, Clopper-Pearson's there, shown beside it as 'gold only', and
    Wilson's own coverage) from data/sampling_designs.json."""
    import json

    import ui.results_view as results_view
    from core.review.gold import DESIGN_EVIDENCE, small_sample_evidence
    from tests.pages.test_dashboards import page_as

    s, _ = build(tmp_path)
    scores, gold, _ = _scores_and_gold(5, labelled=15)
    table = readmodel.corrected_estimates(scores, gold)
    assert ((table["n"] < 30) & table["estimate"].notna()).any()
    monkeypatch.setattr(results_view, "corrected_for", lambda f: table)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", str(s.engine.url))
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = page_as("leaderboard", "analyst").run()
    assert not at.exception, at.exception
    shown = at.dataframe[-1].value
    assert "gold only [95% CI]" in shown.columns and (shown["n"] < 30).any()
    below = json.loads(DESIGN_EVIDENCE.read_text())["designs"]
    default = next(d for d in below.values() if d["strategy"] == "stratified")["below"]
    evidence = small_sample_evidence()
    assert evidence.startswith("Below 30 gold labels") and f"{default['narrower']} of {default['cells']} cells" in evidence
    assert evidence in [c.value for c in at.caption]


def _pairs_case(case: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Scores and gold values for one difference_pairs case."""
    scores, gold, _ = _scores_and_gold(seed=6, labelled=MIN_LABELS - 1 if case == "too-few-labels" else 120)
    if case == "weighted":
        ids = [int(r) for r in gold["response_id"]]
        gold = readmodel.gold_values({rid: {"constraints": {"c1": bool(v)}} for rid, v in
                                      zip(ids, gold["strict_ias"], strict=True)}, {rid: (0.2, "b1") for rid in ids})
    if case == "judge-decided-nothing":
        scores["strict_ias"] = np.nan
    return scores, gold


@pytest.mark.parametrize("case", ["uniform", "weighted", "judge-decided-nothing", "too-few-labels"])
def test_pairs_drawn_once_give_corrected_difference_at_every_confidence(case: str) -> None:
    """segment_differences draws a cell's pairs once (readmodel.difference_pairs) for its estimate and every
    interval the p-value bisection inverts: each equals corrected_difference's, recomputed from the frames."""
    scores, gold = _pairs_case(case)
    pairs = readmodel.difference_pairs(scores, gold, "m0", "m1")
    whole = readmodel.corrected_difference(scores, gold, "m0", "m1")
    assert readmodel.pairs_difference(pairs).keys() == whole.keys()
    assert all(_same_value(readmodel.pairs_difference(pairs)[k], v) for k, v in whole.items()), whole
    for confidence in (0.5, 0.9, 0.95, 1 - 1e-9):
        d = readmodel.corrected_difference(scores, gold, "m0", "m1", confidence=confidence)
        low, high = pairs.interval(confidence)
        assert _same_value(low, d["ci_low"]) and _same_value(high, d["ci_high"]), (confidence, low, high, d)
    assert pairs.estimable is (case != "too-few-labels") and pairs.weighted is (case == "weighted")


def _same_value(a: object, b: object) -> bool:
    """Equal, or both NaN."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b))
