"""Reference metrics on the shared public data slices (../shared/datasets, read in place, never copied): gold answers
score 1 on every row, another row's answer scores 0, the option-letter rule reads the options and answers of real MCQ
items without false letters, and the reference abstention answers of LIT-RAGBench read as refusals."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from core.scoring.reference import extract_option, reference_metric
from core.store.schema import ReferenceSpec

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"


@cache
def rows(path: str) -> list[dict]:
    file = SHARED / path
    if not file.is_file():
        pytest.fail(f"shared dataset not found at {file} (see /work/shared/datasets/README.md)")
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]


def value(metric: str, ref: ReferenceSpec, response: str, language: str) -> float:
    out = reference_metric(metric, ref, response, language)
    assert out.status == "ok", out
    return out.value


def test_hotpotqa_gold_answers_match_and_other_answers_do_not() -> None:
    data = rows("hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl")
    assert len(data) == 500
    for i, row in enumerate(data):
        ref = ReferenceSpec(answer_type="short", answers=[{"text": row["answer"]}])
        for metric in ("exact_match", "strict_exact_match", "token_f1", "rouge_l"):
            assert value(metric, ref, row["answer"], "en") == 1.0, (row["id"], metric)
        other = data[(i + 1) % len(data)]["answer"]
        out = reference_metric("exact_match", ref, other, "en")  # against a yes/no gold, a non-polar answer is unread
        assert out.value == 0.0 and out.status in ("ok", "unparseable"), (row["id"], other, out)


MCQ_SETS = [
    pytest.param("medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl", "en", "The answer is {key}.", id="usmle_en"),
    pytest.param("medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl", "zh", "答案是{key}", id="mcmle_zh"),
]


@pytest.mark.parametrize(("path", "language", "template"), MCQ_SETS)
def test_mcq_letters_and_option_texts(path: str, language: str, template: str) -> None:
    for row in rows(path):
        options, key = row["options"], row["answer_idx"]
        ref = ReferenceSpec(answer_type="mcq", choices=options, answer_key=key)
        assert value("mcq_accuracy", ref, template.format(key=key), language) == 1.0
        assert value("exact_match", ref, options[key], language) == 1.0, (options, key)
        wrong = next(k for k in options if k != key)
        assert value("mcq_accuracy", ref, template.format(key=wrong), language) == 0.0
        assert extract_option(row["question"], options) is None, row["question"][:80]
        for letter, text in options.items():
            assert extract_option(text, options) in (None, text), (letter, text)


def test_mcmle_reference_answers_read_by_the_letter_rule() -> None:
    for row in rows("medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl"):
        assert extract_option(row["source_reference_answer"], row["options"]) == row["answer_idx"]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_lit_ragbench_answers_and_abstentions(language: str) -> None:
    data = rows(f"lit-ragbench/{language}.jsonl")
    abstain = [r for r in data if any(t.startswith("A_") for t in r["qa_type"])]
    answered = [r for r in data if r not in abstain]
    assert (len(answered), len(abstain)) == (54, 60)
    unanswerable = ReferenceSpec(answer_type="unanswerable")
    for row in answered:
        ref = ReferenceSpec(answer_type="short", answers=[{"text": row["answer"]}])
        assert value("exact_match", ref, row["answer"], language) == 1.0
        assert value("rejection", unanswerable, row["answer"], language) == 0.0, row["answer"]
    for row in abstain:
        assert value("rejection", unanswerable, row["answer"], language) == 1.0, row["answer"]
