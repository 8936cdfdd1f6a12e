"""The gate's error rates by simulation on its statistical core: scripted models of equal quality (500 repetitions)
must not fail the gate more often than alpha, and the power for a 5-point regression at n = 200 is reported.

Each scripted model answers item i correctly with probability p_i (p_i uniform on [0.5, 1]: items differ in
difficulty, both models share it), faithfulness is p_i plus noise clipped to [0, 1]; a regressed candidate has p_i -
0.05. Figures are printed (pytest -s) and written into docs/gate.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis.gate import REGRESSION, GateResult, compare_items, decide, gate_row, parse_rules

N, REPETITIONS, ALPHA = 200, 500, 0.05
RULES = parse_rules({"alpha": ALPHA, "min_shared": 30, "n_resamples": 200,
                     "metrics": ["strict_ias", "faithfulness"]})


def scripted_outcomes(rng: np.random.Generator, n: int, repeats: int, drop: float) -> dict[str, tuple]:
    """Per metric (baseline, candidate) arrays of items x repeats from two scripted models sharing item difficulty."""
    p = rng.uniform(0.5, 1.0, n)
    passed = [(rng.random((n, repeats)) < q[:, None]).astype(float) for q in (p, p - drop)]
    faithful = [np.clip(q[:, None] + rng.normal(0, 0.15, (n, repeats)), 0, 1) for q in (p, p - drop)]
    return {"strict_ias": tuple(passed), "faithfulness": tuple(faithful)}


def gate_fails(outcomes: dict[str, tuple], seed: int) -> bool:
    """Whether the whole gate (both metrics, Holm) exits 2 on one simulated pair of runs."""
    result = GateResult(1, 2, "scripted", RULES)
    for rule in RULES.metrics:
        base, cand = outcomes[rule.metric]
        result.rows.append(gate_row(rule.metric, "overall", "", base, cand, rule, RULES,
                                    binary=rule.metric == "strict_ias", higher_is_better=True, gated=True))
    return decide(result).code == REGRESSION


def single_metric_fails(outcomes: dict[str, tuple], metric: str) -> bool:
    base, cand = outcomes[metric]
    c = compare_items(base, cand, binary=metric == "strict_ias", n_resamples=200)
    return c.p_value is not None and c.p_value <= ALPHA and not c.flaky_only


def alarm_rate(drop: float, repeats: int, judge, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return float(np.mean([judge(scripted_outcomes(rng, N, repeats, drop), r) for r in range(REPETITIONS)]))


FALSE_ALARM_CASES = [
    ("gate-two-metrics-holm", 1, lambda o, r: gate_fails(o, r)),
    ("gate-two-metrics-holm-3-repeats", 3, lambda o, r: gate_fails(o, r)),
    ("mcnemar-strict-ias", 1, lambda o, r: single_metric_fails(o, "strict_ias")),
    ("pass-rates-strict-ias-3-repeats", 3, lambda o, r: single_metric_fails(o, "strict_ias")),
]


def test_gate_false_alarm_rate_under_equal_quality_is_at_most_alpha() -> None:
    """The gate as configured by default-style rules (a binary and a continuous metric, Holm) on single answers."""
    rate = alarm_rate(0.0, 1, lambda o, r: gate_fails(o, r), seed=2026)
    print(f"gate false-alarm rate (n={N}, {REPETITIONS} repetitions): {rate:.3f}")
    assert rate <= ALPHA


@pytest.mark.parametrize(("repeats", "judge"), [c[1:] for c in FALSE_ALARM_CASES], ids=[c[0] for c in FALSE_ALARM_CASES])
def test_false_alarm_rate_is_not_above_alpha(repeats, judge) -> None:
    """Every path's rate is not significantly above alpha (exact binomial test at 1%: the tests have size alpha, so
    500 repetitions estimate it to about +/- 1 point)."""
    from scipy.stats import binomtest

    rate = alarm_rate(0.0, repeats, judge, seed=2026)
    p = binomtest(round(rate * REPETITIONS), REPETITIONS, ALPHA, alternative="greater").pvalue
    print(f"false-alarm rate (n={N}, {repeats} repeat(s), {REPETITIONS} repetitions): {rate:.3f} (p above alpha {p:.2f})")
    assert p > 0.01


def test_paired_t_on_a_continuous_metric_holds_its_size() -> None:
    """A single continuous metric's one-sided paired t has size alpha: its rate stays inside the 99% binomial band."""
    rate = alarm_rate(0.0, 1, lambda o, r: single_metric_fails(o, "faithfulness"), seed=2026)
    half = 2.576 * np.sqrt(ALPHA * (1 - ALPHA) / REPETITIONS)
    print(f"false-alarm rate, faithfulness alone: {rate:.3f}")
    assert ALPHA - half <= rate <= ALPHA + half


POWER_CASES = [
    ("strict-ias-mcnemar", "strict_ias", 1, 0.20, 0.40),
    ("strict-ias-pass-rates-3-repeats", "strict_ias", 3, 0.30, 0.60),
    ("faithfulness-paired-t", "faithfulness", 1, 0.90, 1.00),
]


@pytest.mark.parametrize(("metric", "repeats", "low", "high"), [c[1:] for c in POWER_CASES],
                         ids=[c[0] for c in POWER_CASES])
def test_power_for_a_five_point_regression_at_n_200(metric, repeats, low, high) -> None:
    power = alarm_rate(0.05, repeats, lambda o, r: single_metric_fails(o, metric), seed=7)
    print(f"power, {metric}, 5-point drop, n={N}, {repeats} repeat(s): {power:.3f}")
    assert low <= power <= high
