"""Agreement numbers on hand-computed examples: expert-expert kappa, judge vs gold, cross-judge ICC(2,k), and the
experts' agreement on double-checked benchmark verification decisions."""

from __future__ import annotations

import numpy as np
import pytest
from sqlmodel import Session, select
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from core.analysis.alignment import (
    FEW_MODELS_NOTE,
    average_kappa,
    cross_judge,
    expert_agreement,
    judge_vs_gold,
    judges_for,
    run_choices,
    verification_agreement,
)
from core.review.gold import draw_gold_sample, record_adjudication, record_gold_label
from core.review.verification import record_verification, record_verification_adjudication
from core.store.models import Constraint, Response, Verdict
from tests.workspace_factories import principal, seeded_db


def _labels(c1, c2, **extra):
    return {"constraints": {"c1": bool(c1), "c2": bool(c2)}, **extra}


# A verdict as stored: 0/1 decided by the judge, "precondition" (satisfied automatically), "error" (the judge
# failed) or "unjudged" (not_applicable, e.g. "heuristic judge cannot assess this criterion").
STATUS = {0: ("ok", False, "batched"), 1: ("ok", True, "batched"), "precondition": ("ok", True, "precondition"),
          "error": ("error", None, "batched"), "unjudged": ("not_applicable", None, "heuristic")}


def store(engine, judge: str, values: dict) -> None:
    """Store verdicts keyed (response id, 'c1'|'c2'|'rejection'|'conflict_recognition')."""
    with Session(engine) as session:
        for (rid, what), outcome in values.items():
            status, passed, method = STATUS[outcome]
            resp = session.get(Response, rid)
            verdict = Verdict(response_id=rid, run_id=resp.run_id, judge=judge, metric="constraint", status=status,
                              passed=passed, method="rule" if judge == "rule" else method,
                              value=None if passed is None else float(passed))
            if what in ("rejection", "conflict_recognition"):
                verdict.metric = what
            else:
                verdict.constraint_id = session.exec(select(Constraint.id).where(
                    Constraint.instance_id == resp.instance_id, Constraint.cid == what)).one()
            session.add(verdict)
        session.commit()


def build(folder):
    """Four gold responses R1..R4 = (model-a, E-noisy), (model-b, E-noisy), (model-a, E-gap), (model-b, E-gap).

    c1 is rule-checked (verdicts under judge 'rule'), c2 is an LLM constraint judged by 'llm:j1' and 'heuristic'.
    """
    s = seeded_db(folder)
    draw_gold_sample(s.engine, principal("admin"), s.run_id, n=8, experts=["alice", "bob"])
    r = [s.responses[k] for k in [("model-a", "E-noisy"), ("model-b", "E-noisy"), ("model-a", "E-gap"), ("model-b", "E-gap")]]
    alice = [_labels(1, 1), _labels(1, 0), _labels(1, 1, valid_refusal=1), _labels(0, 0, valid_refusal=0)]
    bob = [_labels(1, 1), _labels(1, 1), _labels(1, 0, valid_refusal=1), _labels(0, 0, valid_refusal=0)]
    for i, rid in enumerate(r):
        record_gold_label(s.engine, principal("alice"), rid, alice[i], f"a{i}")
        record_gold_label(s.engine, principal("bob"), rid, bob[i], f"b{i}")
    record_adjudication(s.engine, principal("admin"), r[1], _labels(1, 0), "adj1")
    record_adjudication(s.engine, principal("admin"), r[2], _labels(1, 1, valid_refusal=1), "adj2")
    store(s.engine, "rule", {(r[0], "c1"): 1, (r[1], "c1"): 1, (r[2], "c1"): 1, (r[3], "c1"): 0})
    store(s.engine, "llm:j1", {(r[0], "c2"): 0, (r[1], "c2"): 0, (r[2], "c2"): "precondition", (r[3], "c2"): 0,
                               (r[2], "rejection"): 0, (r[3], "rejection"): 0})
    store(s.engine, "heuristic", {(r[0], "c2"): "unjudged", (r[1], "c2"): "error", (r[2], "c2"): 1, (r[3], "c2"): 1,
                                  (r[2], "rejection"): 1, (r[3], "rejection"): 1})
    return s, r


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return build(tmp_path_factory.mktemp("align"))


# Hand computation (items in order R1c1 R1c2 R2c1 R2c2 R3c1 R3c2 R4c1 R4c2):
#   alice 1 1 1 0 1 1 0 0, bob 1 1 1 1 1 0 0 0 -> p_o = 6/8, p_e = (5/8)^2 + (3/8)^2 = 34/64, kappa = 7/15.
#   Strict IAS alice 1 0 1 0, bob 1 1 0 0 -> p_o = 1/2, p_e = 1/2, kappa = 0.  Rejection alice = bob -> kappa 1.
@pytest.mark.parametrize(
    "dimension, n, kappa, agreement, note",
    [pytest.param("constraint", 8, 7 / 15, 0.75, "", id="constraint"),
     pytest.param("strict_ias", 4, 0.0, 0.5, "", id="strict"),
     pytest.param("rejection", 2, 1.0, 1.0, "", id="rejection"),
     pytest.param("conflict_recognition", 0, None, None, "nothing to compare", id="conflict-none")],
)
def test_expert_expert(example, dimension, n, kappa, agreement, note):
    s, _ = example
    row = {a.dimension: a for a in expert_agreement(s.engine, [s.run_id])}[dimension]
    assert (row.n_compared, row.n_unjudged, row.n_error, row.note) == (n, 0, 0, note)
    assert row.kappa == (pytest.approx(kappa) if kappa is not None else None)
    assert row.agreement == (pytest.approx(agreement) if agreement is not None else None)


# Gold (after adjudication): 1 1 | 1 0 | 1 1 (refusal 1) | 0 0 (refusal 0); c1 comes from the rule checker for every
# judge: 1 | 1 | 1 | 0.
#   llm:j1 c2: 0 | 0 | precondition (satisfied) | 0, refusal 0 0.
#     constraint: 1 0 | 1 0 | 1 1 | 0 0 -> p_o 7/8, p_e 5/8*4/8 + 3/8*4/8 = 1/2 -> kappa 3/4, one miss: R1 c2.
#     strict: gold 1 0 1 0, judge 0 0 1 0 -> p_o 3/4, p_e 1/2 -> kappa 1/2 (before: n 0, c1 was filed under 'rule').
#     rejection: judge says 0 on both -> kappa undefined, agreement 1/2.
#   heuristic c2: unjudged | error | 1 | 1, refusal 1 1.
#     constraint: 6 compared (c1 x4, R3 c2, R4 c2): gold 1 1 1 0 1 0, judge 1 1 1 0 1 1 -> p_o 5/6,
#       p_e 4/6*5/6 + 2/6*1/6 = 22/36 -> kappa (30-22)/(36-22) = 4/7; R1 c2 unjudged, R2 c2 error (before: 7 compared,
#       the unjudged R1 c2 counted as agreement).
#     strict: R1 unjudged, R2 error, R3 1 (gold 1), R4 0 (gold 0) -> kappa 1 on 2.  rejection: judge says 1 on both.
JUDGE_VS_GOLD = [
    pytest.param("llm:j1", "constraint", 8, 0, 0, 0.75, 0.875, [[3, 0], [1, 4]], "", id="j1-constraint"),
    pytest.param("llm:j1", "strict_ias", 4, 0, 0, 0.5, 0.75, [[2, 0], [1, 1]], "", id="j1-strict-rule-merged"),
    pytest.param("llm:j1", "rejection", 2, 0, 0, None, 0.5, [[1, 0], [1, 0]], "κ undefined: the judge gave only 'fail'",
                 id="j1-rejection-constant-judge"),
    pytest.param("llm:j1", "conflict_recognition", 0, 0, 0, None, None, [[0, 0], [0, 0]], "nothing to compare",
                 id="j1-conflict-none"),
    pytest.param("heuristic", "constraint", 6, 1, 1, 4 / 7, 5 / 6, [[1, 1], [0, 4]], "", id="heuristic-constraint"),
    pytest.param("heuristic", "strict_ias", 2, 1, 1, 1.0, 1.0, [[1, 0], [0, 1]], "", id="heuristic-strict"),
    pytest.param("heuristic", "rejection", 2, 0, 0, None, 0.5, [[0, 1], [0, 1]],
                 "κ undefined: the judge gave only 'pass'", id="heuristic-rejection-constant-judge"),
]


@pytest.mark.parametrize("judge, dimension, n, unjudged, errors, kappa, agreement, confusion, note", JUDGE_VS_GOLD)
def test_judge_vs_gold(example, judge, dimension, n, unjudged, errors, kappa, agreement, confusion, note):
    s, _ = example
    row = {a.dimension: a for a in judge_vs_gold(s.engine, [s.run_id], judge)}[dimension]
    assert (row.n_compared, row.n_unjudged, row.n_error, row.confusion, row.note) == (n, unjudged, errors, confusion, note)
    assert row.kappa == (pytest.approx(kappa) if kappa is not None else None)
    assert row.agreement == (pytest.approx(agreement) if agreement is not None else None)
    assert row.small_sample is (0 < n < 30)
    if kappa is None:
        assert (row.ci_low, row.ci_high) == (None, None)


def test_judge_vs_gold_disagreements_and_kappa_ci(example):
    s, r = example
    row = {a.dimension: a for a in judge_vs_gold(s.engine, [s.run_id], "llm:j1")}["constraint"]
    assert row.disagreements == [(r[0], "c2", 1, 0)]
    ref = sm_kappa(np.asarray(row.confusion, float))
    assert (row.ci_low, row.ci_high) == pytest.approx((max(-1, ref.kappa_low), min(1, ref.kappa_upp)))
    assert -1 <= row.ci_low <= row.kappa <= row.ci_high <= 1


def test_strict_ias_of_a_partly_scored_response_is_unjudged(tmp_path):
    """A judge that never scored R4's c2: the read model's Strict IAS rests on c1 alone, so it is not compared."""
    s, r = build(tmp_path)
    store(s.engine, "llm:partial", {(r[0], "c2"): 1, (r[1], "c2"): 0, (r[2], "c2"): 1})
    row = {a.dimension: a for a in judge_vs_gold(s.engine, [s.run_id], "llm:partial")}["strict_ias"]
    assert (row.n_compared, row.n_unjudged, row.n_error) == (3, 1, 0)


def test_average_and_judges(example):
    s, _ = example
    rows = judge_vs_gold(s.engine, [s.run_id], "llm:j1")
    assert average_kappa(rows) == pytest.approx(0.5)  # Strict IAS only: rejection undefined, no conflict items
    assert judges_for(s.engine, [s.run_id]) == ["heuristic", "llm:j1"]  # 'rule' is not a judge
    assert run_choices(s.engine) == {s.run_id: f"#{s.run_id} seed run"}


# Loose IAS (%) from the read model (c1 by the rule checker merged into each judge; unjudged and errors left out):
#   heuristic model-a: R1 1/1, R3 2/2 -> 100; model-b: R2 1/1, R4 1/2 -> 75.  llm:j1 model-a: 1/2, 2/2 -> 75;
#   model-b 1/2, 0/2 -> 25.  Rows (heuristic, j1): [100, 75], [75, 25]: MSR = MSC = 1406.25, MSE = 156.25
#   -> ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE)/n) = 1250 / 2031.25 = 8/13.
def test_cross_judge_icc(example):
    s, _ = example
    result = cross_judge(s.engine, [s.run_id])
    assert result.judges == ["heuristic", "llm:j1"]
    assert result.scores["loose_ias"] == {"model-a": {"heuristic": 100.0, "llm:j1": 75.0},
                                          "model-b": {"heuristic": 75.0, "llm:j1": 25.0}}
    assert result.n["loose_ias"] == {"model-a": {"heuristic": 2, "llm:j1": 2}, "model-b": {"heuristic": 2, "llm:j1": 2}}
    assert result.n_models["loose_ias"] == 2
    assert result.icc["loose_ias"].icc == pytest.approx(8 / 13)
    assert result.spearman["loose_ias"] is None
    assert FEW_MODELS_NOTE in result.notes["loose_ias"] and any("three models" in n for n in result.notes["loose_ias"])
    # Rejection: heuristic 100 on both models, j1 0 on both -> no variance between models.
    assert result.icc["rejection"] is None and any("undefined" in n for n in result.notes["rejection"])


# Verification decisions (first rater by name | second): decision, consistency, context valid.
#   E-noisy    alice accept     consistent   valid   | bob   accept     consistent valid
#   E-gap      alice reject     inconsistent valid   | bob   accept     consistent valid
#   E-conflict alice needs_edit consistent   invalid | bob   needs_edit consistent valid
#   M-noisy    admin accept     consistent   valid   | carol reject     consistent invalid
# decision: p_o 2/4, marginals both (accept 2, reject 1, needs_edit 1) -> p_e 6/16 -> kappa (1/8)/(5/8) = 1/5.
# consistency: p_o 3/4, but the second rater said "consistent" every time -> kappa undefined (0/0 information).
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
    "dimension, kappa, agreement, confusion, note",
    [
        pytest.param("decision", 1 / 5, 0.5, [[1, 1, 0], [1, 0, 0], [0, 0, 1]], "", id="decision"),  # accept, reject, needs_edit
        pytest.param("consistency", None, 0.75, [[3, 0], [1, 0]],
                     "κ undefined: the second expert gave only 'consistent'", id="consistency-constant"),
        pytest.param("context_valid", -1 / 3, 0.5, [[2, 1], [1, 0]], "", id="context"),  # valid, invalid
    ],
)
def test_verification_agreement(verified, dimension, kappa, agreement, confusion, note):
    row = {a.dimension: a for a in verification_agreement(verified.engine)}[dimension]
    assert (row.n, row.confusion, row.note) == (4, confusion, note)
    assert row.kappa == (pytest.approx(kappa) if kappa is not None else None)
    assert row.agreement == pytest.approx(agreement)


def test_verification_agreement_without_double_checks(tmp_path):
    s = seeded_db(tmp_path)
    record_verification(s.engine, principal("alice"), s.instances["E-gap"], consistency="consistent",
                        context_valid=True, decision="accept", client_token="single", overlap=0.0)
    rows = verification_agreement(s.engine)
    assert [(r.dimension, r.n, r.kappa, r.agreement) for r in rows] == [
        ("decision", 0, None, None), ("consistency", 0, None, None), ("context_valid", 0, None, None)]
