"""Acceptance on the fake server: scripted models answer real RAG-Stress instances (HotpotQA, USMLE, Chinese MCMLE)
through the real SDK under every condition; the read path gives the figures the models were scripted to produce."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK, MISLEADING_CONDITIONS
from core.protocols.misleading_evidence import analysis as misleading_evidence
from tests.misleading_evidence.conftest import CHECKPOINTS


@pytest.fixture(scope="module")
def out(calibration):
    from core.store.db import make_engine

    engine = make_engine(calibration.url)
    frame = misleading_evidence.load_outcomes(engine, [calibration.run_id], "heuristic")
    engine.dispose()
    return frame


def test_every_response_is_scored(out, calibration) -> None:
    assert len(out) == 4 * len(calibration.instances) * 8
    assert out["correct"].notna().all() and out["designated"].notna().all()
    assert set(out["language"]) == {"en", "zh"}


def test_follower_is_always_misled_under_document_priority(out, calibration) -> None:
    rates = misleading_evidence.misleading_rates(out).set_index(["model", "condition"])
    follower = rates.loc["follower"]
    assert (follower["n_closed_book_correct"] == len(calibration.instances)).all()
    assert (follower["n"] == len(calibration.instances)).all()
    documents = follower[follower["policy"] == "documents"]
    assert len(documents) == 3 and (documents["mr"] == 1.0).all() and (documents["any_wrong"] == 1.0).all()
    assert (follower["mr_low"] < 1.0).all() and (follower["mr_high"] == 1.0).all()
    assert follower["small_n"].all()


def test_ignorer_is_never_misled_and_clean_equals_closed_book(out) -> None:
    rates = misleading_evidence.misleading_rates(out).set_index(["model", "condition"]).loc["ignorer"]
    assert (rates["mr"] == 0.0).all() and (rates["any_wrong"] == 0.0).all() and (rates["n"] == 5).all()
    acc = misleading_evidence.accuracy(out).set_index(["model", "condition"])
    assert acc.loc[("ignorer", CLEAN), "accuracy"] == acc.loc[("ignorer", CLOSED_BOOK), "accuracy"] == 0.5
    assert acc.loc[("follower", CLEAN), "accuracy"] == 1.0


def test_policy_gap_and_positions(out) -> None:
    gap = misleading_evidence.policy_gap(out).set_index(["model", "position"])
    assert gap.loc[("follower", "all"), "gap"] == 0.0 and gap.loc[("follower", "all"), "p_value"] == 1.0
    assert gap.loc[("follower", "all"), "n_pairs"] == 10
    assert gap.loc[("follower", "all"), "test"] == "sign test over questions (exact)"
    means = misleading_evidence.position_means(misleading_evidence.misleading_rates(out))
    assert list(means["position"][:3]) == ["beginning", "middle", "end"] and (means["n_models"] == 4).all()


def _hand_audit(condition_flag: str, before: int, after: int, model: str) -> list[int]:
    table = CHECKPOINTS[model]
    # misleading evidence: correct unless scripted to be misled
    later = [1 - m for m in table["misled"]] if condition_flag == "misled" else table[condition_flag]
    return [int(cb == before and x == after) for cb, x in zip(table["closed_book"], later, strict=True)]


def test_audit_counts_equal_hand_computed(out) -> None:
    audit = misleading_evidence.audit(out, "ckpt-a", "ckpt-b").set_index(["outcome", "condition"])
    # Hand count from CHECKPOINTS: harmful override with misleading evidence = closed-book correct and misled:
    # ckpt-a questions 1, 4 (2 of 10); ckpt-b questions 0, 1, 2, 4, 6, 9 (6 of 10); discordant a-only 0, b-only 4.
    for condition in MISLEADING_CONDITIONS:
        row = audit.loc[("harmful override", condition)]
        assert (row["n"], row["count_a"], row["count_b"], row["a_only"], row["b_only"]) == (10, 2, 6, 0, 4)
        assert row["p_value"] == pytest.approx(0.125)  # exact McNemar, 4 discordant pairs all one way
    # Beneficial correction = closed-book wrong and correct with clean evidence: a: 5, 8 (2); b: 3, 5, 7 (3).
    row = audit.loc[("beneficial correction", CLEAN)]
    assert (row["count_a"], row["count_b"], row["a_only"], row["b_only"]) == (2, 3, 1, 2)
    # Harmful override with clean evidence: closed-book correct, wrong with clean evidence: a: question 2; b: none.
    row = audit.loc[("harmful override", CLEAN)]
    assert (row["count_a"], row["count_b"]) == (1, 0)
    for model, column in (("ckpt-a", "count_a"), ("ckpt-b", "count_b")):
        assert audit.loc[("harmful override", "misleading_documents_end"), column] == sum(
            _hand_audit("misled", 1, 0, model))
        assert audit.loc[("beneficial correction", CLEAN), column] == sum(_hand_audit("clean", 0, 1, model))


def test_checkpoint_misleading_rates(out) -> None:
    rates = misleading_evidence.misleading_rates(out).set_index(["model", "condition"])
    # ckpt-b: closed-book correct on 0, 1, 2, 4, 6, 9 and misled on all six of them; ckpt-a: 2 misled of 6 known.
    assert rates.loc[("ckpt-b", "misleading_prior_knowledge_middle"), "mr"] == 1.0
    assert rates.loc[("ckpt-a", "misleading_prior_knowledge_middle"), "mr"] == pytest.approx(2 / 6)
    assert rates.loc[("ckpt-a", "misleading_prior_knowledge_middle"), "n_closed_book_correct"] == 6


def test_undetermined_outcomes_stay_nan() -> None:
    scores = pd.DataFrame({
        "judge": "heuristic", "model": "m", "instance_uid": ["a", "a", "b"], "domain": "d", "language": "en",
        "answer_type": "short", "condition": [CLOSED_BOOK, "misleading_documents_end", CLOSED_BOOK],
        "response_id": [1, 2, 3], "exact_match": [1.0, np.nan, 1.0], "exact_match_status": ["ok", "error", "ok"],
        "mcq_accuracy": np.nan, "mcq_accuracy_status": "not_applicable", "wrong_answer": [0.0, 1.0, 0.0],
        "wrong_answer_status": "ok"})
    out = misleading_evidence.outcomes(scores)
    assert out["misled"].isna().tolist() == [False, True, False]
    rates = misleading_evidence.misleading_rates(out).set_index("condition").loc["misleading_documents_end"]
    assert (rates["n"], rates["n_undetermined"], rates["n_closed_book_correct"]) == (0, 1, 2)
    assert np.isnan(rates["mr"])
