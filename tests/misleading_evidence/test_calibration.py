"""Acceptance on the fake server: scripted models answer real RAG-Stress instances (HotpotQA, USMLE, Chinese MCMLE)
through the real SDK under every condition; the read path gives the figures the models were scripted to produce."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK, MISLEADING_CONDITIONS
from core.protocols.misleading_evidence import analysis as misleading_evidence
from tests.misleading_evidence.conftest import CHECKPOINTS

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("misleading_evidence-calibration")


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


# The calibration instances per dataset (4 HotpotQA, 3 USMLE, 3 MCMLE) and, per dataset, the questions the ignorer
# knows closed book (it knows the even-numbered instances 0, 2 | 4, 6 | 8).
DATASETS = {"HotpotQA (en)": 4, "MedQA (en)": 3, "MedQA (zh)": 3}
IGNORER_KNOWN = {"HotpotQA (en)": 2, "MedQA (en)": 2, "MedQA (zh)": 1}


@pytest.mark.parametrize("dataset", list(DATASETS), ids=list(DATASETS))
def test_follower_is_always_misled_under_document_priority(out, dataset) -> None:
    rates = misleading_evidence.misleading_rates(out).set_index(["dataset", "model", "condition"])
    follower = rates.loc[(dataset, "follower")]
    assert (follower["n_closed_book_correct"] == DATASETS[dataset]).all()
    assert (follower["n"] == DATASETS[dataset]).all()
    documents = follower[follower["policy"] == "documents"]
    assert len(documents) == 3 and (documents["mr"] == 1.0).all() and (documents["any_wrong"] == 1.0).all()
    assert (follower["mr_low"] < 1.0).all() and (follower["mr_high"] == 1.0).all()
    assert follower["small_n"].all()


@pytest.mark.parametrize("dataset", list(DATASETS), ids=list(DATASETS))
def test_ignorer_is_never_misled_and_clean_equals_closed_book(out, dataset) -> None:
    rates = misleading_evidence.misleading_rates(out).set_index(["dataset", "model", "condition"]).loc[
        (dataset, "ignorer")]
    assert (rates["mr"] == 0.0).all() and (rates["any_wrong"] == 0.0).all()
    assert (rates["n"] == IGNORER_KNOWN[dataset]).all()
    acc = misleading_evidence.accuracy(out).set_index(["dataset", "model", "condition"])
    expected = IGNORER_KNOWN[dataset] / DATASETS[dataset]
    assert acc.loc[(dataset, "ignorer", CLEAN), "accuracy"] == acc.loc[(dataset, "ignorer", CLOSED_BOOK), "accuracy"]
    assert acc.loc[(dataset, "ignorer", CLEAN), "accuracy"] == pytest.approx(expected)
    assert acc.loc[(dataset, "follower", CLEAN), "accuracy"] == 1.0


def test_every_figure_is_keyed_by_dataset_and_language(out) -> None:
    rates = misleading_evidence.misleading_rates(out)
    tables = [rates, misleading_evidence.accuracy(out), misleading_evidence.policy_gap(out),
              misleading_evidence.position_means(rates), misleading_evidence.model_means(out),
              misleading_evidence.model_summary(rates, misleading_evidence.accuracy(out)),
              misleading_evidence.audit(out, "ckpt-a", "ckpt-b")]
    for table in tables:
        assert sorted(table["dataset"].unique()) == sorted(DATASETS)


def test_policy_gap_and_positions(out) -> None:
    gap = misleading_evidence.policy_gap(out).set_index(["dataset", "model", "position"])
    row = gap.loc[("HotpotQA (en)", "follower", "all")]
    assert row["gap"] == 0.0 and row["p_value"] == 1.0 and (row["gap_low"], row["gap_high"]) == (0.0, 0.0)
    assert row["n_pairs"] == 4
    assert row["test"] == "sign test over questions (exact)"
    means = misleading_evidence.position_means(misleading_evidence.misleading_rates(out))
    assert list(means["position"][:3]) == ["beginning", "middle", "end"] and (means["n_models"] == 4).all()


def _hand_audit(condition_flag: str, before: int, after: int, model: str) -> list[int]:
    table = CHECKPOINTS[model]
    # misleading evidence: correct unless scripted to be misled
    later = [1 - m for m in table["misled"]] if condition_flag == "misled" else table[condition_flag]
    return [int(cb == before and x == after) for cb, x in zip(table["closed_book"], later, strict=True)]


def test_audit_counts_equal_hand_computed(out) -> None:
    audit = misleading_evidence.audit(out, "ckpt-a", "ckpt-b")
    pooled = audit.groupby(["outcome", "condition"])[["n", "count_a", "count_b", "a_only", "b_only"]].sum()
    per_dataset = audit.set_index(["dataset", "outcome", "condition"])
    # Hand count from CHECKPOINTS: harmful override with misleading evidence = closed-book correct and misled:
    # ckpt-a questions 1, 4 (2 of 10); ckpt-b questions 0, 1, 2, 4, 6, 9 (6 of 10); discordant a-only 0, b-only 4.
    for condition in MISLEADING_CONDITIONS:
        assert tuple(pooled.loc[("harmful override", condition)]) == (10, 2, 6, 0, 4)
        # HotpotQA alone (questions 0-3): a misled on 1, b on 0, 1, 2: two discordant pairs, both b-only.
        row = per_dataset.loc[("HotpotQA (en)", "harmful override", condition)]
        assert (row["n"], row["count_a"], row["count_b"], row["b_only"]) == (4, 1, 3, 2)
        assert row["p_value"] == pytest.approx(0.5)  # exact McNemar, 2 discordant pairs all one way
    # Beneficial correction = closed-book wrong and correct with clean evidence: a: 5, 8 (2); b: 3, 5, 7 (3).
    row = pooled.loc[("beneficial correction", CLEAN)]
    assert (row["count_a"], row["count_b"], row["a_only"], row["b_only"]) == (2, 3, 1, 2)
    # Harmful override with clean evidence: closed-book correct, wrong with clean evidence: a: question 2; b: none.
    row = pooled.loc[("harmful override", CLEAN)]
    assert (row["count_a"], row["count_b"]) == (1, 0)
    for model, column in (("ckpt-a", "count_a"), ("ckpt-b", "count_b")):
        assert pooled.loc[("harmful override", "misleading_documents_end"), column] == sum(
            _hand_audit("misled", 1, 0, model))
        assert pooled.loc[("beneficial correction", CLEAN), column] == sum(_hand_audit("clean", 0, 1, model))


@pytest.mark.parametrize(("dataset", "model", "mr", "known"), [
    # ckpt-b: closed-book correct on 0, 1, 2, 4, 6, 9 and misled on all of them; ckpt-a: known 0-3 | 4 | 9, misled 1 | 4.
    pytest.param("HotpotQA (en)", "ckpt-b", 1.0, 3, id="hotpotqa-ckpt-b"),
    pytest.param("HotpotQA (en)", "ckpt-a", 1 / 4, 4, id="hotpotqa-ckpt-a"),
    pytest.param("MedQA (en)", "ckpt-a", 1.0, 1, id="medqa-en-ckpt-a"),
    pytest.param("MedQA (zh)", "ckpt-a", 0.0, 1, id="medqa-zh-ckpt-a"),
])
def test_checkpoint_misleading_rates(out, dataset, model, mr, known) -> None:
    rates = misleading_evidence.misleading_rates(out).set_index(["dataset", "model", "condition"])
    row = rates.loc[(dataset, model, "misleading_prior_knowledge_middle")]
    assert row["mr"] == pytest.approx(mr) and row["n_closed_book_correct"] == known


@pytest.mark.parametrize(("dataset", "expected"), [
    # MR under documents/end, mean over models: follower 1, ignorer 0, ckpt-a 1/4, ckpt-b 1 (HotpotQA).
    pytest.param("HotpotQA (en)", (1 + 0 + 0.25 + 1) / 4, id="hotpotqa"),
    # follower 1, ignorer 0, ckpt-a 1/1, ckpt-b 2/2 (USMLE).
    pytest.param("MedQA (en)", 3 / 4, id="medqa-en"),
])
def test_model_means_average_each_models_rate(out, dataset, expected) -> None:
    means = misleading_evidence.model_means(out).set_index(["dataset", "condition"])
    row = means.loc[(dataset, "misleading_documents_end")]
    assert row["mean"] == pytest.approx(expected) and row["n_models"] == 4
    assert 0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0


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


def _outcomes(models: dict[str, dict[str, list[int]]]) -> pd.DataFrame:
    """Outcomes of scripted models: per model, `known` questions (closed-book correct, 1/0 per question) and, per
    misleading condition, the misled flags of the questions (the others are answered correctly)."""
    rows = []
    for model, table in models.items():
        for q, known in enumerate(table["known"]):
            rows.append({"condition": CLOSED_BOOK, "model": model, "instance_uid": f"q{q}", "correct": float(known),
                         "misled": 0.0})
            for condition in MISLEADING_CONDITIONS:
                misled = float(table.get(condition, [0] * len(table["known"]))[q])
                rows.append({"condition": condition, "model": model, "instance_uid": f"q{q}",
                             "correct": 1.0 - misled, "misled": misled})
    return pd.DataFrame(rows).assign(judge="heuristic", dataset="Toy (en)")


DOCS = [f"misleading_documents_{p}" for p in ("beginning", "middle", "end")]
PRIOR = [f"misleading_prior_knowledge_{p}" for p in ("beginning", "middle", "end")]


@pytest.mark.parametrize(("models", "gap", "n_models"), [
    # a: misled under the documents policy on 2 of 4 known questions, never otherwise: gap 0.5.
    pytest.param({"a": {"known": [1, 1, 1, 1], **{c: [1, 1, 0, 0] for c in DOCS}}}, 0.5, 1, id="one-model"),
    # b: knows 2; documents misleads q0 at every position, prior only at the beginning: gaps 0, 0.5, 0.5 -> 1/3;
    # averaged with a's 0.5 over the two models: 5/12.
    pytest.param({"a": {"known": [1, 1, 1, 1], **{c: [1, 1, 0, 0] for c in DOCS}},
                  "b": {"known": [1, 1, 0, 0], **{c: [1, 0, 0, 0] for c in DOCS},
                        "misleading_prior_knowledge_beginning": [1, 0, 0, 0]}}, 5 / 12, 2, id="two-models"),
    pytest.param({"c": {"known": [1, 1, 1], **{c: [1, 1, 1] for c in PRIOR}}}, -1.0, 1, id="prior-always-worse"),
    pytest.param({"d": {"known": [0, 0, 0], **{c: [1, 1, 1] for c in DOCS}}}, None, 0, id="nothing-known"),
])
def test_policy_gap_averaged_over_models_and_positions(models, gap, n_models) -> None:
    row = misleading_evidence.model_means(_outcomes(models)).set_index("measure").loc["policy_gap"]
    assert row["n_models"] == n_models and row["condition"] == "all"
    if gap is None:
        assert np.isnan(row["mean"]) and row["n_questions"] == 0
        return
    assert row["mean"] == pytest.approx(gap)
    assert -1.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0
