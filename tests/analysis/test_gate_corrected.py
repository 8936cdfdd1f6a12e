"""`corrected: gate` in the gate's rules: a gold-decidable metric is tested on its judge-corrected (PPI++) paired
difference and interval instead of the raw judge's; too few gold-labelled pairs make the gate answer 1 with the
reason; the default (`show`) keeps the raw judge's test and only shows the correction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import gate, readmodel
from core.analysis.ppi import MIN_LABELS

N = 400


def _runs(seed: int, baseline: float, candidate: float, labelled: int):
    """Both runs' Strict IAS on N shared items (the corrected_scores layout) and gold labels on the first `labelled`
    pairs: the judge passes every true pass and 60% of the candidate's true fails (10% of the baseline's), so the
    raw judge hides the candidate's drop."""
    rng = np.random.default_rng(seed)
    rows, gold = [], {}
    for model, p, lenient in (("baseline", baseline, 0.1), ("candidate", candidate, 0.6)):
        for i in range(N):
            rid = len(rows) + 1
            y = bool(rng.random() < p)
            rows.append({"response_id": rid, "model": model, "instance_uid": f"i{i}",
                         "strict_ias": 1.0 if y else float(rng.random() < lenient)})
            if i < labelled:
                gold[rid] = {"constraints": {"c1": y}}
    return pd.DataFrame(rows), readmodel.gold_values(gold)


def _gated(scores: pd.DataFrame, corrected: str) -> gate.GateResult:
    """The gate's overall Strict IAS row from the raw judge values, then (under `corrected: gate`) the correction."""
    rules = gate.parse_rules({"metrics": ["strict_ias"], "corrected": corrected})
    side = {m: scores[scores["model"] == m]["strict_ias"].to_numpy()[:, None] for m in ("baseline", "candidate")}
    row = gate.gate_row("strict_ias", "overall", "", side["baseline"], side["candidate"], rules.metrics[0], rules,
                        binary=True, higher_is_better=True, gated=True)
    return gate.GateResult(1, 2, "llm:j", rules, rows=[row])


CASES = [
    # name, (baseline, candidate true pass rates), gold-labelled pairs, corrected mode, exit code, reason
    ("raw-judge-hides-the-drop-shown-only", (0.6, 0.45), 150, "show", gate.PASS, None),
    ("corrected-difference-gates-the-drop", (0.6, 0.45), 150, "gate", gate.REGRESSION, None),
    ("corrected-difference-no-drop-passes", (0.5, 0.5), 150, "gate", gate.PASS, None),
    ("too-few-gold-labels-could-not-decide", (0.6, 0.45), MIN_LABELS - 1, "gate", gate.UNDECIDED,
     f"strict_ias: judge-corrected difference needs at least {MIN_LABELS} gold-labelled pairs, {MIN_LABELS - 1} found"),
]


@pytest.mark.parametrize(("rates", "labelled", "corrected", "code", "reason"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_corrected_gate(rates, labelled, corrected, code, reason):
    scores, gold = _runs(3, *rates, labelled)
    result = _gated(scores, corrected)
    if corrected == "gate":
        gate.gate_corrected(result, scores, gold)
    gate.decide(result)
    assert result.code == code, gate.markdown_summary(result)
    assert result.reasons == ([reason] if reason else [])
    c = result.rows[0].comparison
    if corrected == "gate" and reason is None:
        expected = readmodel.corrected_difference(scores, gold, "candidate", "baseline", "strict_ias")
        assert (c.diff, c.ci_low, c.ci_high) == (expected["estimate"], expected["ci_low"], expected["ci_high"])
        assert c.test == "PPI++ corrected (one-sided)" and result.rows[0].note.startswith("judge-corrected on 150")


P_CASES = [  # the interval-inverted p-value agrees with the interval: below alpha exactly when the 90% CI is below
    ("clear-drop", (0.6, 0.4)), ("no-drop", (0.5, 0.5)), ("small-drop", (0.55, 0.5)),
]


@pytest.mark.parametrize("rates", [c[1] for c in P_CASES], ids=[c[0] for c in P_CASES])
def test_corrected_p_value_inverts_the_interval(rates):
    scores, gold = _runs(5, *rates, 150)
    p = gate.corrected_p_value(scores, gold, "strict_ias", 0.0, True)
    upper = gate.corrected_difference(scores, gold, "strict_ias", confidence=0.90)["ci_high"]
    assert 0 < p < 1 and (p < 0.05) == (upper < 0)


def test_corrected_mode_is_checked():
    with pytest.raises(ValueError, match="corrected must be one of show, gate"):
        gate.parse_rules({"metrics": ["strict_ias"], "corrected": "always"})
