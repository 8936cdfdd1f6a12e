"""RAGStress aggregates on hand-made score frames: impact, resilience gap, mixed vs worst, severity shapes,
capability vs robustness, and not-applicable responses left out and counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from core.protocols.kb_corruption import analysis as kb_corruption
from core.protocols.kb_corruption import condition_parts


def frame(cells: dict[tuple[str, str], list[float | None]], status: dict[tuple[str, str], str] | None = None) -> pd.DataFrame:
    """Scores from {(model, condition): per-question outcome (None = not applicable)}; questions q0, q1, ..."""
    rows = []
    for (model, condition), values in cells.items():
        kind, severity = condition_parts(condition)
        for i, value in enumerate(values):
            applicable = value is not None
            rows.append({"run_id": 1, "response_id": len(rows) + 1, "judge": "heuristic", "model": model,
                         "instance_uid": f"q{i}", "condition": condition, "type": kind, "severity": severity,
                         "applicable": applicable,
                         "status": (status or {}).get((model, condition), "ok" if applicable else "not_applicable"),
                         "correct": float(value) if applicable else np.nan})
    return pd.DataFrame(rows, columns=kb_corruption.SCORE_COLUMNS)


def test_accuracy_counts_not_applicable_and_flags_small_n():
    scores = frame({("m", "clean"): [1, 1, 0, 1], ("m", "numeric_subtle"): [1, None, None, 0]})
    table = kb_corruption.accuracy(scores).set_index("condition")
    assert table.loc["clean", ["accuracy", "n", "n_not_applicable"]].tolist() == [0.75, 4, 0]
    assert table.loc["numeric_subtle", ["accuracy", "n", "n_not_applicable"]].tolist() == [0.5, 2, 2]
    assert table["small_n"].all() and (table["judge_label"] == "heuristic (lexical, offline)").all()
    assert table.loc["clean", "ci_low"] == pytest.approx(st.beta.ppf(0.025, 3, 2))


def test_impact_is_the_paired_clean_minus_corrupted_difference():
    scores = frame({("m", "clean"): [1, 1, 1, 0, 1], ("m", "factual_subtle"): [0, 1, 0, 0, None]})
    row = kb_corruption.corruption_impact(scores).set_index("condition").loc["factual_subtle"]
    d = np.array([1, 0, 1, 0])
    half = st.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    assert (row["n"], row["clean_accuracy"], row["corrupted_accuracy"], row["delta"]) == (4, 0.75, 0.25, 0.5)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.5 - half, 0.5 + half))


def test_resilience_gap_matches_a_paired_t_test_on_mean_drops():
    clean = [1, 1, 1, 1, 1, 0]
    a = {"contradiction_subtle": [1, 1, 0, 1, 1, 0], "contradiction_moderate": [1, 0, 1, 1, 1, 0],
         "contradiction_obvious": [1, 1, 1, 1, 0, 0]}
    b = {"contradiction_subtle": [0, 0, 1, 0, 1, 0], "contradiction_moderate": [0, 1, 0, 1, 0, 0],
         "contradiction_obvious": [1, 0, 0, 0, 1, 1]}
    scores = frame({("m1", "clean"): clean, ("m2", "clean"): clean, **{("m1", c): v for c, v in a.items()},
                    **{("m2", c): v for c, v in b.items()}})
    row = kb_corruption.resilience_gaps(scores).set_index("type").loc["contradiction"]
    drops = {m: np.mean([np.subtract(clean, v) for v in vals.values()], axis=0) for m, vals in (("m1", a), ("m2", b))}
    test = st.ttest_rel(drops["m2"], drops["m1"])
    assert row["gamma"] == pytest.approx(np.mean(drops["m2"] - drops["m1"]))
    assert (row["t"], row["p_value"], row["n"]) == (pytest.approx(test.statistic), pytest.approx(test.pvalue), 6)
    assert row["p_bonferroni"] == pytest.approx(test.pvalue) and row["small_n"]
    assert kb_corruption.resilience_gaps(scores).set_index("type").loc["factual", "n"] == 0


def test_mixed_vs_worst_uses_the_lowest_type_filtered_accuracy():
    scores = frame({("m", "mixed"): [1, 1, 0, 1], ("m", "factual_moderate"): [0, 0, 0, 1],
                    ("m", "relevance_subtle"): [1, 1, 1, 1], ("m", "clean"): [1, 1, 1, 1]})
    row = kb_corruption.mixed_vs_worst(scores).iloc[0]
    assert (row["worst_condition"], row["worst_accuracy"], row["gap"], row["n_shared"]) == ("factual_moderate", 0.25,
                                                                                           0.5, 4)
    assert row["mixed_above_worst"] and row["p_value"] == pytest.approx(0.5)


@pytest.mark.parametrize(("accs", "shape", "flag"), [
    pytest.param([0.9, 0.6, 0.3], "falls with severity", False, id="falls"),
    pytest.param([0.3, 0.6, 0.9], "rises with severity", False, id="rises"),
    pytest.param([0.8, 0.4, 0.8], "dip at moderate", True, id="dip"),
    pytest.param([0.4, 0.8, 0.5], "peak at moderate", True, id="peak"),
    pytest.param([0.5, 0.5, 0.5], "flat", False, id="flat"),
    pytest.param([0.5, np.nan, 0.5], "no data", False, id="missing"),
])
def test_severity_shape(accs, shape, flag):
    table = pd.DataFrame({"judge": "heuristic", "judge_label": "h", "model": "m", "type": "contradiction",
                          "severity": ["subtle", "moderate", "obvious"], "accuracy": accs, "n": [100, 100, 100],
                          "ci_low": [a - 0.05 for a in accs], "ci_high": [a + 0.05 for a in accs]})
    row = kb_corruption.severity_curves(table).iloc[0]
    assert (row["shape"], row["non_monotonic"], row["beyond_ci"]) == (shape, flag, flag)


@pytest.mark.parametrize(("models", "note"), [
    pytest.param({"a": (0.4, 0.2), "b": (0.6, 0.5)}, "needs 3+ models (baselines excluded)", id="two-models"),
    pytest.param({"a": (0.5, 0.2), "b": (0.5, 0.5), "c": (0.5, 0.7)}, "undefined: a constant column", id="constant"),
    pytest.param({"a": (0.4, 0.2), "b": (0.6, 0.5), "c": (0.8, 0.1), "base": (0.0, 0.0)}, "", id="three-models"),
])
def test_capability_vs_robustness_spearman(models, note):
    cells = {}
    for model, (closed, corrupted) in models.items():
        cells[(model, "no_retrieval")] = [1] * round(closed * 10) + [0] * (10 - round(closed * 10))
        cells[(model, "factual_subtle")] = [1] * round(corrupted * 10) + [0] * (10 - round(corrupted * 10))
    per_model, corr = kb_corruption.capability_vs_robustness(kb_corruption.accuracy(frame(cells)), exclude=["base"])
    row = corr.set_index("robustness").loc["all corruptions"]
    assert row["note"] == note
    if not note:
        kept = per_model[per_model["model"] != "base"]
        assert row["rho"] == pytest.approx(st.spearmanr(kept["no_retrieval"], kept["corrupted"]).statistic)
        assert row["n_models"] == 3


def test_an_error_verdict_is_counted_not_scored():
    scores = frame({("m", "clean"): [1, 1, 1]})
    scores.loc[0, ["status", "correct"]] = ["error", np.nan]
    row = kb_corruption.accuracy(scores).iloc[0]
    assert (row["accuracy"], row["n"], row["n_error"]) == (1.0, 2, 1)


def test_accuracy_counts_unparseable_answers_as_wrong_and_shows_the_count():
    scores = frame({("m", "clean"): [1, 1, 0, 0]}, status={("m", "clean"): "ok"})
    scores.loc[scores["instance_uid"].isin(["q2", "q3"]), "status"] = ["unparseable", "ok"]
    row = kb_corruption.accuracy(scores).set_index("condition").loc["clean"]
    assert row[["accuracy", "n", "n_unparseable", "n_error", "n_not_applicable"]].tolist() == [0.5, 4, 1, 0, 0]
