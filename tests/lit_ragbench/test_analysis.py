"""LIT-RAGBench aggregates on hand-worked frames: a question counts for each aspect and category it has, judge errors
and unscored responses are counted and left out, over-abstention per response, the category average and its CI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import stats
from core.metrics import get_metric
from core.protocols.lit_ragbench import categories_of
from core.protocols.lit_ragbench.analysis import (
    accuracy_table,
    averaged_ci,
    language_table,
    over_abstention,
    overall_table,
)

NAN = float("nan")


def frame(rows: list[tuple]) -> pd.DataFrame:
    """(language, aspects, judged_accuracy, refusal) per response of one model; NaN accuracy = judge error."""
    out = pd.DataFrame([{"model": "m", "language": lang, "condition": "", "judge": "heuristic", "response_id": i,
                         "instance_uid": f"q{i}", "aspects": aspects, "categories": categories_of(aspects),
                         "judged_accuracy": acc, "judged_accuracy_status": "error" if np.isnan(acc) else "ok",
                         "refusal": ref, "refusal_status": "ok"} for i, (lang, aspects, acc, ref) in enumerate(rows)])
    return out.assign(over_abstention=over_abstention(out))


@pytest.mark.parametrize(
    ("aspects", "accuracy", "refusal", "expected"),
    [
        pytest.param(["R_calculate"], 0.0, 1.0, 1.0, id="declined-answerable-and-wrong"),
        pytest.param(["R_calculate"], 0.0, 0.0, 0.0, id="answered-wrong-is-not-abstention"),
        pytest.param(["R_calculate"], 1.0, 1.0, 0.0, id="judged-right-despite-a-caveat"),
        pytest.param(["R_calculate"], NAN, 1.0, NAN, id="judge-error-is-undetermined"),
        pytest.param(["R_calculate"], 1.0, NAN, 0.0, id="right-needs-no-refusal-verdict"),
        pytest.param(["A_conflicted"], 1.0, 1.0, NAN, id="abstention-question-not-applicable"),
    ],
)
def test_over_abstention_per_response(aspects, accuracy, refusal, expected) -> None:
    got = frame([("en", aspects, accuracy, refusal)])["over_abstention"].iloc[0]
    assert (np.isnan(got) and np.isnan(expected)) or got == expected


def test_a_question_counts_for_each_of_its_aspects_and_categories() -> None:
    scores = frame([("en", ["R_calculate", "T_csv"], 1.0, 0.0), ("en", ["T_csv"], 0.0, 0.0),
                    ("en", ["T_html"], NAN, 0.0), ("en", ["A_negative_only"], 1.0, 1.0)])
    categories = accuracy_table(scores, "category").set_index("key")
    assert list(categories.index) == ["Reasoning", "Table", "Abstention"]
    assert categories.loc["Reasoning", ["value", "n"]].tolist() == [1.0, 1]
    assert categories.loc["Table", ["value", "n", "n_error"]].tolist() == [0.5, 2, 1]  # the judge error is left out
    aspects = accuracy_table(scores, "aspect").set_index("key")
    assert aspects.loc["T_csv", ["value", "n"]].tolist() == [0.5, 2] and aspects.loc["R_calculate", "n"] == 1
    assert aspects.loc["T_html", "n"] == 0 and np.isnan(aspects.loc["T_html", "value"])
    assert aspects.loc["T_csv", "label"] == "Table: CSV" and aspects["small_n"].any()


def test_averaged_ci_equals_the_exact_interval_when_categories_are_equal_in_size() -> None:
    value, low, high = averaged_ci(np.array([0.5, 1.0]), np.array([10, 10]))
    exact = stats.interval(np.array([1.0] * 15 + [0.0] * 5), get_metric("judged_accuracy"))  # n_eff = 2^2 / (1/10 + 1/10) = 20, k = 15
    assert value == 0.75 and (low, high) == pytest.approx((exact.ci_low, exact.ci_high))


def test_overall_averages_the_categories_present_and_counts_them() -> None:
    scores = frame([("en", ["I_multiple"], 1.0, 0.0), ("en", ["I_multiple"], 1.0, 0.0), ("en", ["L_synonym"], 0.0, 1.0),
                    ("en", ["A_negative_only"], 1.0, 1.0)])
    categories = accuracy_table(scores, "category")
    overall = overall_table(scores, categories).iloc[0]
    assert overall["value"] == pytest.approx((1.0 + 0.0 + 1.0) / 3) and overall["n_categories"] == 3
    assert overall["micro_value"] == 0.75 and overall["n"] == 4 and overall["small_n"]
    assert overall["ci_low"] < overall["value"] < overall["ci_high"]


def test_language_table_puts_english_beside_japanese() -> None:
    scores = frame([("en", ["T_csv"], 1.0, 0.0), ("ja", ["T_csv"], 0.0, 0.0), ("en", ["L_synonym"], 1.0, 0.0)])
    table = language_table(accuracy_table(scores, "category")).set_index("key")
    assert table.loc["Table", ["value_en", "value_ja", "diff_ja_en"]].tolist() == [1.0, 0.0, -1.0]
    assert table.loc["Logic", "n_ja"] == 0 and np.isnan(table.loc["Logic", "value_ja"])
    assert list(table.index) == ["Logic", "Table"]
