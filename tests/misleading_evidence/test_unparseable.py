"""RAG-Stress tables count MCQ answers whose option letter could not be read (counted as wrong, and shown)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK
from core.protocols.misleading_evidence import analysis as misleading_evidence

MISLEADING = "misleading_documents_end"


def scores(statuses: list[str]) -> pd.DataFrame:
    """Question a answered correctly closed book, then under CLEAN and MISLEADING with the given mcq statuses."""
    conditions = [CLOSED_BOOK, CLEAN, MISLEADING]
    values = [1.0] + [0.0 if s == "unparseable" else 1.0 for s in statuses]
    return pd.DataFrame({
        "judge": "heuristic", "model": "m", "instance_uid": "a", "domain": "d", "language": "en", "answer_type": "mcq",
        "condition": conditions, "response_id": [1, 2, 3], "exact_match": 0.0, "exact_match_status": "ok",
        "mcq_accuracy": values, "mcq_accuracy_status": ["ok", *statuses], "wrong_answer": 0.0,
        "wrong_answer_status": "ok"})


@pytest.mark.parametrize(
    ("statuses", "clean_accuracy", "clean_unparseable", "misleading_unparseable"),
    [
        pytest.param(["ok", "ok"], 1.0, 0, 0, id="letters-read"),
        pytest.param(["unparseable", "unparseable"], 0.0, 1, 1, id="no-letter-counts-as-wrong-and-is-counted"),
        pytest.param(["ok", "unparseable"], 1.0, 0, 1, id="one-misleading-answer-unreadable"),
    ],
)
def test_unparseable_answers_are_counted_in_the_tables(statuses, clean_accuracy, clean_unparseable,
                                                        misleading_unparseable) -> None:
    out = misleading_evidence.outcomes(scores(statuses))
    accuracy = misleading_evidence.accuracy(out).set_index("condition")
    assert (accuracy.loc[CLEAN, "accuracy"], accuracy.loc[CLEAN, "n"]) == (clean_accuracy, 1)
    assert accuracy.loc[CLEAN, "n_unparseable"] == clean_unparseable
    rates = misleading_evidence.misleading_rates(out).set_index("condition").loc[MISLEADING]
    assert (rates["n"], rates["n_undetermined"], rates["n_unparseable"]) == (1, 0, misleading_unparseable)
    assert not np.isnan(rates["any_wrong"])
    summary = misleading_evidence.model_summary(misleading_evidence.misleading_rates(out), misleading_evidence.accuracy(out)).iloc[0]
    assert (summary["clean_n_unparseable"], summary["closed_book_n_unparseable"]) == (clean_unparseable, 0)
