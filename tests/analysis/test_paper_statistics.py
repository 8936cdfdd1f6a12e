"""The statistics EnterpriseRAG defines, as named options of the read model, checked against known truth by
simulation: McNemar's test one-sided (Figure 5) and two-sided keep their type-I error near alpha under the null and
find a known effect; the paired t-test agrees with scipy; Cohen's d_z recovers a known effect size; the paper's
10,000-resample paired bootstrap covers the true difference; Table 8's per-model paired t-test and d beside TOST."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

from core.analysis import readmodel, stats
from core.analysis.readmodel.bootstrap import _ci, bootstrap_means
from core.analysis.readmodel.pairs import PAIR_STATISTICS

ALPHA = 0.05
SIMULATIONS = 1_000


def pair_frame(a: np.ndarray, b: np.ndarray, metric: str, mode: str = "gap") -> pd.DataFrame:
    """Scores of models A and B on the same instances of one subset, in the read model's per-response columns."""
    uids = [f"i{k}" for k in range(len(a))]
    return pd.DataFrame({"model": ["A"] * len(a) + ["B"] * len(b), "instance_uid": uids + uids,
                         "mode": mode, metric: np.concatenate([a, b]).astype(float)})


def p_value(a: np.ndarray, b: np.ndarray, metric: str, statistics: str, mode: str = "gap") -> float:
    """The p-value the named statistics give A − B: McNemar's for a rate, the paired t-test's for a score (the test
    below checks that paired_comparison reports exactly these)."""
    alternative = PAIR_STATISTICS[statistics].alternative
    if metric == "rejection":
        return stats.mcnemar(a.astype(int), b.astype(int), alternative).p_value
    return stats.paired_t(a, b, alternative).p_value


@pytest.mark.parametrize(("statistics", "metric", "mode", "shift"), [
    pytest.param("product", "rejection", "gap", 0.1, id="product-mcnemar"),
    pytest.param("paper", "rejection", "gap", 0.1, id="paper-mcnemar"),
    pytest.param("paper", "rejection", "gap", -0.1, id="paper-mcnemar-B-better"),
    pytest.param("product", "faithfulness", "noisy", 0.05, id="product-paired-t"),
    pytest.param("paper", "faithfulness", "noisy", 0.05, id="paper-paired-t"),
])
def test_read_model_reports_the_named_statistics(statistics: str, metric: str, mode: str, shift: float) -> None:
    rng = np.random.default_rng(8)
    if metric == "rejection":
        a, b = rng.random(120) < 0.5 + shift, rng.random(120) < 0.5
    else:
        b = rng.uniform(0.3, 0.6, 120)
        a = b + rng.normal(shift, 0.1, 120)
    row = readmodel.paired_comparison(pair_frame(a, b, metric, mode), "A", "B", metric, n_resamples=20,
                                      statistics=statistics).set_index("mode").loc[mode]
    assert row["p_value"] == pytest.approx(p_value(a, b, metric, statistics), rel=1e-12)
    assert row["test"].endswith("one-sided") == (statistics == "paper")


def rejection_rate(p_a: float, p_b: float, n: int, statistics: str, seed: int) -> float:
    """Share of simulated paired binary samples (A ~ Bernoulli(p_a), B ~ Bernoulli(p_b), independent) whose McNemar
    p-value falls below ALPHA."""
    rng = np.random.default_rng(seed)
    hits = [p_value(rng.random(n) < p_a, rng.random(n) < p_b, "rejection", statistics) < ALPHA
            for _ in range(SIMULATIONS)]
    return float(np.mean(hits))


@pytest.mark.parametrize("statistics", ["product", "paper"])
def test_mcnemar_type_one_error_is_near_alpha(statistics: str) -> None:
    rate = rejection_rate(0.6, 0.6, 200, statistics, seed=1)
    assert 0.015 <= rate <= 0.07, rate  # the continuity correction makes it a little conservative


@pytest.mark.parametrize(("statistics", "p_a", "p_b", "low", "high"), [
    pytest.param("paper", 0.65, 0.50, 0.80, 1.0, id="paper-finds-A-better"),
    pytest.param("product", 0.65, 0.50, 0.70, 1.0, id="product-finds-A-better"),
    pytest.param("paper", 0.50, 0.65, 0.0, 0.01, id="paper-one-sided-ignores-B-better"),
    pytest.param("product", 0.50, 0.65, 0.70, 1.0, id="product-two-sided-finds-B-better"),
])
def test_mcnemar_power_under_a_known_effect(statistics: str, p_a: float, p_b: float, low: float, high: float) -> None:
    assert low <= rejection_rate(p_a, p_b, 200, statistics, seed=2) <= high


def test_one_sided_is_more_powerful_than_two_sided_when_a_is_better() -> None:
    assert rejection_rate(0.6, 0.5, 150, "paper", seed=3) > rejection_rate(0.6, 0.5, 150, "product", seed=3)


@pytest.mark.parametrize("statistics", ["product", "paper"])
def test_paired_t_type_one_error_is_near_alpha(statistics: str) -> None:
    rng = np.random.default_rng(4)
    hits = [p_value(rng.uniform(0.3, 0.7, 60), rng.uniform(0.3, 0.7, 60), "faithfulness", statistics, "noisy") < ALPHA
            for _ in range(SIMULATIONS)]
    assert 0.03 <= float(np.mean(hits)) <= 0.07


@pytest.mark.parametrize(("statistics", "alternative"), [pytest.param("product", "two-sided", id="product"),
                                                         pytest.param("paper", "greater", id="paper")])
def test_paired_t_and_cohen_d_against_scipy_and_truth(statistics: str, alternative: str) -> None:
    rng = np.random.default_rng(5)
    b = rng.uniform(0.4, 0.5, 4000)
    a = b + rng.normal(0.05, 0.1, 4000)  # true d_z = 0.05 / 0.1 = 0.5
    row = readmodel.paired_comparison(pair_frame(a, b, "faithfulness", "noisy"), "A", "B", "faithfulness",
                                      n_resamples=200, statistics=statistics).set_index("mode").loc["noisy"]
    ref = ss.ttest_rel(a, b, alternative=alternative)
    assert row["t"] == pytest.approx(ref.statistic, rel=1e-9)
    assert row["t_p"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300) and row["p_value"] == row["t_p"]
    assert row["cohen_d"] == pytest.approx(0.5, abs=0.05)
    assert row["tost_equivalent"]  # a 5-point difference is well inside the paper's ±20-point margin


def test_paper_bootstrap_uses_ten_thousand_resamples_and_covers_the_truth() -> None:
    assert PAIR_STATISTICS["paper"].n_resamples == 10_000 and PAIR_STATISTICS["product"].n_resamples == 2_000
    rng = np.random.default_rng(6)
    covered = []
    for seed in range(30):
        a, b = (rng.random(80) < 0.7), (rng.random(80) < 0.5)  # true A − B = 0.2
        row = readmodel.paired_comparison(pair_frame(a, b, "rejection"), "A", "B", "rejection", seed=seed,
                                          statistics="paper").set_index("mode").loc["gap"]
        covered.append(row["ci_low"] <= 0.2 <= row["ci_high"])
    low, high = _ci(bootstrap_means((a.astype(float) - b)[:, None], 10_000, seed))
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low[0]), pytest.approx(high[0]))
    assert np.mean(covered) >= 0.85


def test_product_defaults_are_unchanged() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(50) < 0.6, rng.random(50) < 0.4
    frame = pair_frame(a, b, "rejection")
    default = readmodel.paired_comparison(frame, "A", "B", "rejection").set_index("mode").loc["gap"]
    low, high = _ci(bootstrap_means((a.astype(float) - b)[:, None], 2_000, 0))
    assert (default["ci_low"], default["ci_high"]) == (pytest.approx(low[0]), pytest.approx(high[0]))
    assert default["test"] in ("McNemar (exact)", "McNemar (chi2)") and default["statistics"] == "product"


def test_table8_paired_t_and_cohen_d_over_models_beside_tost() -> None:
    rows = []
    for model, natural, augmented in (("m1", 0.50, 0.45), ("m2", 0.60, 0.52), ("m3", 0.40, 0.41), ("m4", 0.7, 0.6)):
        for i in range(3):
            rows.append({"model": model, "instance_uid": f"n{i}", "origin": "natural", "faithfulness": natural})
            rows.append({"model": model, "instance_uid": f"a{i}", "origin": "augmented", "faithfulness": augmented})
    out = readmodel.natural_vs_augmented(pd.DataFrame(rows), metrics=["faithfulness"], n_resamples=200).iloc[0]
    nat, aug = np.array([0.50, 0.60, 0.40, 0.7]), np.array([0.45, 0.52, 0.41, 0.6])
    ref = ss.ttest_rel(nat, aug)
    assert out["t"] == pytest.approx(ref.statistic) and out["t_p"] == pytest.approx(ref.pvalue)
    assert out["cohen_d"] == pytest.approx((nat - aug).mean() / (nat - aug).std(ddof=1))
    assert out["models"] == 4 and not np.isnan(out["tost_p"])


def test_table8_prints_the_difference_as_the_paper_does_synthetic_minus_natural() -> None:
    """The paper's Table 8 prints Diff. = Synth. - Natural (0.322 - 0.360 = -0.038): four models whose augmented
    faithfulness is lower give a negative Diff. inside its interval, and t and d of the same sign."""
    from core.protocols.enterprise_rag.paper import table8_from_scores

    rows = []
    for model, natural, augmented in (("m1", 0.50, 0.45), ("m2", 0.60, 0.52), ("m3", 0.40, 0.41), ("m4", 0.7, 0.6)):
        for i in range(3):
            for uid, origin, value in ((f"n{i}", "natural", natural), (f"a{i}", "augmented", augmented)):
                rows.append({"model": model, "instance_uid": uid, "origin": origin,
                             **dict.fromkeys(("conflict_recognition", "strict_ias", "loose_ias", "coverage",
                                              "faithfulness"), value)})
    compared = readmodel.natural_vs_augmented(pd.DataFrame(rows), metrics=["faithfulness"], n_resamples=200).iloc[0]
    table = table8_from_scores(pd.DataFrame(rows), "heuristic", {"bootstrap": "product"})
    row = dict(table.rows)["Faithfulness"]
    natural, synthetic, diff, _, t, d = row[:6]
    assert diff.value == pytest.approx(synthetic.value - natural.value) == pytest.approx(-compared["diff"])
    assert diff.value < 0 and diff.low <= diff.value <= diff.high
    assert (t.value, d.value) == (pytest.approx(-compared["t"]), pytest.approx(-compared["cohen_d"]))
    assert t.value < 0 and any("Synth. − Natural" in note for note in table.notes)
