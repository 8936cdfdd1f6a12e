"""The paper's scale: the knowledge base from every question of the source (--kb-questions) while retrieval runs for
the evaluated split only, and a numeric typo for every entry that holds a number (correct option, else question, else
another option), the rest flagged not applicable and counted."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.protocols.kb_corruption import NUMERIC_ANSWER
from core.protocols.kb_corruption.builder import (
    NUMBER_RE,
    Pool,
    Question,
    build_ragstress,
    load_questions,
    numeric_typo,
    offline_variants,
    render_entry,
)
from tests.kb_corruption.conftest import mmlu_path

TWO_SUBJECTS = ("abstract_algebra", "anatomy")


def item(stem: str, choices: tuple[str, ...], key: str = "A") -> Question:
    return Question("geography/0", "geography", "social sciences", stem, choices, key)


TYPO_CASES = [
    pytest.param(item("Which river?", ("Route 66", "Elm", "Oak", "Ash")), "option A", "Route 66", id="correct-option"),
    pytest.param(item("Which of 3 rivers?", ("Elm", "Oak", "Ash", "Fir")), "question", "Which of 3 rivers?",
                 id="question-when-the-answer-has-none"),
    pytest.param(item("Which river?", ("Elm", "Oak", "Route 9", "Fir")), "option C", "Route 9",
                 id="another-option-when-question-and-answer-have-none"),
]


@pytest.mark.parametrize(("question", "place", "original_text"), TYPO_CASES)
@pytest.mark.parametrize("severity", ["subtle", "moderate", "obvious"])
def test_numeric_typo_goes_to_the_first_number_of_the_entry(question, place, original_text, severity):
    typo = numeric_typo(question, severity, seed=0)
    assert typo is not None and typo["place"] == place and typo["altered_text"] != original_text
    assert NUMBER_RE.search(typo["altered_text"]).group() == typo["altered"]
    variant = next(v for v in offline_variants(question, Pool([question]), 0) if v.name == f"numeric-{severity}")
    assert variant.applicable and variant.is_corrupted and variant.marked_key == question.key
    assert typo["altered_text"] in variant.text and variant.text != render_entry(question, question.key)
    assert f"\n*{question.key}. " in variant.text


def test_an_entry_without_any_number_is_a_counted_placeholder():
    question = item("Which river?", ("Elm", "Oak", "Ash", "Fir"))
    numeric = [v for v in offline_variants(question, Pool([question]), 0) if v.corruption_type == "numeric"]
    assert all(not v.applicable and v.details["not_applicable"] == "the entry holds no number" for v in numeric)


def kb_rows(out) -> list[dict]:
    return [json.loads(line) for line in (out / "knowledge_base.jsonl").read_text(encoding="utf-8").splitlines()]


BASE_CASES = [
    pytest.param(TWO_SUBJECTS, 6, id="two-subject-base-six-evaluated"),
    pytest.param(("abstract_algebra",), 3, id="one-subject-base-three-evaluated"),
]


@pytest.mark.parametrize(("subjects", "limit"), BASE_CASES)
def test_knowledge_base_holds_every_source_question_while_only_the_split_is_retrieved(tmp_path, subjects, limit):
    csvs = [mmlu_path(f"test/{s}_test.csv") for s in subjects]
    source = load_questions(csvs)
    args = ["kb-corruption", "build", "--questions", str(mmlu_path()), "--limit", str(limit), "--out",
            str(tmp_path / "out"), "--bm25-only", "--index-dir", str(tmp_path / "index"),
            *(a for c in csvs for a in ("--kb-questions", str(c)))]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    built = json.loads((tmp_path / "out" / "build.json").read_text())
    assert built["kb_questions"] == len(source) and built["kb_documents"] == 13 * len(source) == len(kb_rows(
        tmp_path / "out"))
    instances = [json.loads(x) for x in (tmp_path / "out" / "instances.jsonl").read_text().splitlines()]
    numeric = sum(i["attributes"]["question_type"] == NUMERIC_ANSWER for i in instances)
    assert built["numeric_questions"] == numeric
    assert f"run size: {limit} questions x 15 conditions = {12 * limit + 3 * numeric} items per model" in result.output
    evaluated = {i["metadata"]["ragstress"]["source_question_id"] for i in instances}
    assert len(instances) == limit and evaluated <= {q.qid for q in source}
    retrieved = {d["variant"]["source_question_id"] for i in instances for d in i["documents"]}
    assert retrieved - evaluated, "the mixed and typed filters search the whole base, not only the evaluated items"


def test_evaluated_questions_must_be_in_the_knowledge_base(tmp_path):
    with pytest.raises(ValueError, match="not among the knowledge-base questions"):
        build_ragstress(mmlu_path(), tmp_path / "out", embedder=None, index_dir=None, limit=8,
                        kb_questions_path=mmlu_path("test/abstract_algebra_test.csv"))
