"""Agreement numbers on hand-computed examples: expert-expert kappa, judge vs gold, cross-judge ICC(2,k), and the
experts' agreement on double-checked benchmark verification decisions."""

from __future__ import annotations

import pytest

from core.analysis.alignment import (
    average_kappa,
    cross_judge,
    expert_agreement,
    judge_vs_gold,
    judges_for,
    verification_agreement,
)
from core.review.labels import (
    draw_gold_sample,
    record_adjudication,
    record_gold_label,
    record_verification,
    record_verification_adjudication,
)
from tests.workspace_factories import add_verdicts, principal, seeded_db


def _labels(c1, c2, **extra):
    return {"constraints": {"c1": bool(c1), "c2": bool(c2)}, **extra}


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Four responses R1..R4 = (model-a, E-noisy), (model-b, E-noisy), (model-a, E-gap), (model-b, E-gap)."""
    s = seeded_db(tmp_path_factory.mktemp("align"))
    draw_gold_sample(s.engine, principal("admin"), s.run_id, n=8, experts=["alice", "bob"])
    r = [s.responses[k] for k in [("model-a", "E-noisy"), ("model-b", "E-noisy"), ("model-a", "E-gap"), ("model-b", "E-gap")]]
    alice = [_labels(1, 1), _labels(1, 0), _labels(1, 1, valid_refusal=1), _labels(0, 0, valid_refusal=0)]
    bob = [_labels(1, 1), _labels(1, 1), _labels(1, 0, valid_refusal=1), _labels(0, 0, valid_refusal=0)]
    for i, rid in enumerate(r):
        record_gold_label(s.engine, principal("alice"), rid, alice[i], f"a{i}")
        record_gold_label(s.engine, principal("bob"), rid, bob[i], f"b{i}")
    record_adjudication(s.engine, principal("admin"), r[1], _labels(1, 0), "adj1")
    record_adjudication(s.engine, principal("admin"), r[2], _labels(1, 1, valid_refusal=1), "adj2")
    j1 = {(r[0], "c1"): 1, (r[0], "c2"): 0, (r[1], "c1"): 1, (r[1], "c2"): 0,
          (r[2], "c1"): 1, (r[2], "c2"): 1, (r[2], "rejection"): 0,
          (r[3], "c1"): 0, (r[3], "c2"): 0, (r[3], "rejection"): 0}
    add_verdicts(s.engine, s, "llm:j1", j1)
    add_verdicts(s.engine, s, "heuristic", {**j1, (r[3], "c1"): 1})
    return s, r


# Hand computation (items in order R1c1 R1c2 R2c1 R2c2 R3c1 R3c2 R4c1 R4c2):
#   alice 1 1 1 0 1 1 0 0, bob 1 1 1 1 1 0 0 0 -> p_o = 6/8, p_e = (5/8)^2 + (3/8)^2 = 34/64, kappa = 7/15.
#   Strict IAS alice 1 0 1 0, bob 1 1 0 0 -> p_o = 1/2, p_e = 1/2, kappa = 0.  Rejection alice = bob -> kappa 1.
@pytest.mark.parametrize(
    "dimension, n, kappa, agreement",
    [("constraint", 8, 7 / 15, 0.75), ("strict_ias", 4, 0.0, 0.5), ("rejection", 2, 1.0, 1.0),
     ("conflict_recognition", 0, None, None)],
)
def test_expert_expert(example, dimension, n, kappa, agreement):
    s, _ = example
    row = {a.dimension: a for a in expert_agreement(s.engine, [s.run_id])}[dimension]
    assert row.n == n
    assert row.kappa == (pytest.approx(kappa) if kappa is not None else None)
    assert row.agreement == (pytest.approx(agreement) if agreement is not None else None)


# Gold (after adjudication): 1 1 | 1 0 | 1 1 (refusal 1) | 0 0 (refusal 0). Judge j1: 1 0 | 1 0 | 1 1 (0) | 0 0 (0).
#   constraint: p_o 7/8, p_e 5/8*4/8 + 3/8*4/8 = 1/2 -> kappa 3/4, confusion [[3,0],[1,4]], one miss: R1 c2.
#   strict: gold 1 0 1 0, judge 0 0 1 0 -> p_o 3/4, p_e 1/2 -> kappa 1/2.  rejection: gold 1 0, judge 0 0 -> kappa 0.
@pytest.mark.parametrize(
    "dimension, n, kappa, agreement, confusion",
    [("constraint", 8, 0.75, 0.875, [[3, 0], [1, 4]]), ("strict_ias", 4, 0.5, 0.75, [[2, 0], [1, 1]]),
     ("rejection", 2, 0.0, 0.5, [[1, 0], [1, 0]])],
)
def test_judge_vs_gold(example, dimension, n, kappa, agreement, confusion):
    s, r = example
    row = {a.dimension: a for a in judge_vs_gold(s.engine, [s.run_id], "llm:j1")}[dimension]
    assert (row.n, row.confusion) == (n, confusion)
    assert row.kappa == pytest.approx(kappa) and row.agreement == pytest.approx(agreement)
    if dimension == "constraint":
        assert row.disagreements == [(r[0], "c2", 1, 0)]


def test_average_and_judges(example):
    s, _ = example
    rows = judge_vs_gold(s.engine, [s.run_id], "llm:j1")
    assert average_kappa(rows) == pytest.approx((0.5 + 0.0) / 2)
    assert judges_for(s.engine, [s.run_id]) == ["heuristic", "llm:j1"]


# Loose IAS (%): j1 model-a 75, model-b 25; heuristic model-a 75, model-b 50.
#   MSR = 1406.25, MSC = MSE = 156.25 -> ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE)/n) = 8/9.
def test_cross_judge_icc(example):
    s, _ = example
    result = cross_judge(s.engine, [s.run_id])
    assert result.scores["loose_ias"] == {"model-a": {"llm:j1": 75.0, "heuristic": 75.0},
                                          "model-b": {"llm:j1": 25.0, "heuristic": 50.0}}
    assert result.icc["loose_ias"].icc == pytest.approx(8 / 9)
    assert result.spearman["loose_ias"] is None and "three models" in result.notes["loose_ias"]


# Verification decisions (first rater by name | second): decision, consistency, context valid.
#   E-noisy    alice accept     consistent   valid   | bob   accept     consistent valid
#   E-gap      alice reject     inconsistent valid   | bob   accept     consistent valid
#   E-conflict alice needs_edit consistent   invalid | bob   needs_edit consistent valid
#   M-noisy    admin accept     consistent   valid   | carol reject     consistent invalid
# decision: p_o 2/4, marginals both (accept 2, reject 1, needs_edit 1) -> p_e 6/16 -> kappa (1/8)/(5/8) = 1/5.
# consistency: p_o 3/4, first 3 consistent + 1 inconsistent, second all consistent -> p_e 3/4 -> kappa 0.
# context: p_o 2/4, both 3 valid + 1 invalid -> p_e 10/16 -> kappa (-1/8)/(3/8) = -1/3.
# The admin's later adjudication of E-gap changes nothing: agreement is between the experts' own decisions.
VERIFICATIONS = {
    "E-noisy": {"alice": ("accept", "consistent", True), "bob": ("accept", "consistent", True)},
    "E-gap": {"alice": ("reject", "inconsistent", True), "bob": ("accept", "consistent", True)},
    "E-conflict": {"alice": ("needs_edit", "consistent", False), "bob": ("needs_edit", "consistent", True)},
    "M-noisy": {"admin": ("accept", "consistent", True), "carol": ("reject", "consistent", False)},
}


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    s = seeded_db(tmp_path_factory.mktemp("verify-align"))
    for uid, by_author in VERIFICATIONS.items():
        for who, (decision, consistency, valid) in by_author.items():
            record_verification(s.engine, principal(who), s.instances[uid], consistency=consistency, context_valid=valid,
                                decision=decision, client_token=f"{who}-{uid}", overlap=1.0)
    record_verification_adjudication(s.engine, principal("admin"), s.instances["E-gap"], "accept", "", "adj")
    return s


@pytest.mark.parametrize(
    "dimension, kappa, agreement, confusion",
    [
        ("decision", 1 / 5, 0.5, [[1, 1, 0], [1, 0, 0], [0, 0, 1]]),  # accept, reject, needs_edit
        ("consistency", 0.0, 0.75, [[3, 0], [1, 0]]),  # consistent, inconsistent
        ("context_valid", -1 / 3, 0.5, [[2, 1], [1, 0]]),  # valid, invalid
    ],
)
def test_verification_agreement(verified, dimension, kappa, agreement, confusion):
    row = {a.dimension: a for a in verification_agreement(verified.engine)}[dimension]
    assert (row.n, row.confusion) == (4, confusion)
    assert row.kappa == pytest.approx(kappa) and row.agreement == pytest.approx(agreement)


def test_verification_agreement_without_double_checks(tmp_path):
    s = seeded_db(tmp_path)
    record_verification(s.engine, principal("alice"), s.instances["E-gap"], consistency="consistent",
                        context_valid=True, decision="accept", client_token="single", overlap=0.0)
    rows = verification_agreement(s.engine)
    assert [(r.dimension, r.n, r.kappa, r.agreement) for r in rows] == [
        ("decision", 0, None, None), ("consistency", 0, None, None), ("context_valid", 0, None, None)]
