"""The gate's pure core: rules parsing with named errors, one-sided comparisons (direction, tolerated drop, flaky
items), and the decision (Holm, regression before could-not-decide)."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis.gate import (
    PASS,
    REGRESSION,
    UNDECIDED,
    GateResult,
    MetricRule,
    compare_items,
    decide,
    gate_row,
    parse_rules,
)

BAD_RULES = [
    ("unknown-key", {"metrics": ["x"], "alhpa": 0.05}, "unknown rules key"),
    ("no-metrics", {"metrics": []}, "at least one metric"),
    ("alpha-out-of-range", {"metrics": ["x"], "alpha": 1.5}, "alpha must be in"),
    ("unknown-segment", {"metrics": ["x"], "segments": ["colour"]}, "unknown segment"),
    ("negative-drop", {"metrics": [{"metric": "x", "max_drop": -0.1}]}, "max_drop of x"),
    ("unknown-metric-key", {"metrics": [{"metric": "x", "drop": 0.1}]}, "unknown key"),
    ("not-a-mapping", ["x"], "must be a mapping"),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in BAD_RULES], ids=[c[0] for c in BAD_RULES])
def test_bad_rules_name_the_problem(data, message):
    with pytest.raises(ValueError, match=message):
        parse_rules(data)


def test_rules_defaults():
    rules = parse_rules({"metrics": ["strict_ias", {"metric": "cost", "max_drop": 0.1, "higher_is_better": False}]})
    assert rules.alpha == 0.05 and rules.min_shared == 30 and not rules.gate_segments
    assert rules.metrics[1] == MetricRule("cost", 0.1, False)


ONES, ZEROS = np.ones(40), np.zeros(40)
DROP = np.r_[np.zeros(12), np.ones(28)]  # 12 of 40 items lost
COMPARE_CASES = [
    ("identical-binary", ONES, ONES, True, 0.0, True, "McNemar", 1.0, 1.0),
    ("twelve-lost-binary", ONES, DROP, True, 0.0, True, "McNemar", 0.0, 0.001),
    ("twelve-lost-but-lower-is-better", ONES, DROP, True, 0.0, False, "McNemar", 0.999, 1.0),
    ("thirty-points-lost-within-a-0.5-drop", ONES, DROP, True, 0.5, True, "paired t", 0.9, 1.0),
    ("continuous-shift", np.full(40, 0.8), np.full(40, 0.7), False, 0.0, True, "paired t", 0.0, 0.0),
]


@pytest.mark.parametrize(("base", "cand", "binary", "drop", "higher", "test", "p_low", "p_high"),
                         [c[1:] for c in COMPARE_CASES], ids=[c[0] for c in COMPARE_CASES])
def test_compare_items(base, cand, binary, drop, higher, test, p_low, p_high):
    c = compare_items(base, cand, binary=binary, max_drop=drop, higher_is_better=higher, n_resamples=500)
    assert c.test.startswith(test) and p_low <= c.p_value <= p_high
    assert c.n_shared == 40 and c.diff == pytest.approx(cand.mean() - base.mean())
    assert -1 <= c.ci_low <= c.diff + 1e-6 and c.diff - 1e-6 <= c.ci_high <= 1  # resampled bounds


def test_missing_items_are_not_shared_and_shapes_must_match():
    base = np.r_[np.ones(30), np.full(10, np.nan)]
    assert compare_items(base, ONES, binary=True).n_shared == 30
    with pytest.raises(ValueError, match="same items"):
        compare_items(ONES, np.ones(39), binary=True)


FLAKY_CASES = [
    # baseline always passes; candidate: per item two repeats
    ("half-of-the-items-flaky-only", [[1, 0]] * 20 + [[1, 1]] * 20, 20, True),
    ("flaky-plus-stable-losses", [[1, 0]] * 20 + [[0, 0]] * 15 + [[1, 1]] * 5, 20, False),
    ("no-flaky", [[0, 0]] * 15 + [[1, 1]] * 25, 0, False),
]


@pytest.mark.parametrize(("cand", "n_flaky", "flaky_only"), [c[1:] for c in FLAKY_CASES], ids=[c[0] for c in FLAKY_CASES])
def test_flaky_items_are_apart_and_never_fail_alone(cand, n_flaky, flaky_only):
    rules = parse_rules({"metrics": ["strict_ias"]})
    row = gate_row("strict_ias", "overall", "", np.ones((40, 2)), np.array(cand, float), rules.metrics[0], rules,
                   binary=True, higher_is_better=True, gated=True)
    result = decide(GateResult(1, 2, "j", rules, rows=[row]))
    assert row.comparison.n_flaky == n_flaky and row.comparison.flaky_only is flaky_only
    assert row.comparison.p_value < 0.05  # the pass rates did drop
    assert result.code == (PASS if flaky_only else REGRESSION)


def test_a_regression_wins_over_a_metric_that_could_not_be_tested():
    rules = parse_rules({"metrics": ["a", "b"]})
    rows = [gate_row("a", "overall", "", ONES, DROP, rules.metrics[0], rules, binary=True, higher_is_better=True,
                     gated=True),
            gate_row("b", "overall", "", ONES[:10], ONES[:10], rules.metrics[1], rules, binary=True,
                     higher_is_better=True, gated=True)]
    result = decide(GateResult(1, 2, "j", rules, rows=rows))
    assert result.code == REGRESSION and result.reasons == ["b: 10 shared item(s); the rules need at least 30"]
    assert decide(GateResult(1, 2, "j", rules, rows=rows[1:])).code == UNDECIDED
