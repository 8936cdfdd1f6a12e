"""Document conversion, the corruption generator per type and severity, the 9,100-document knowledge base of the
700-question selection, determinism, and every condition's filter keeping only its variants."""

from __future__ import annotations

import json
import random
from collections import Counter
from decimal import Decimal

import pytest

from core.construction.corpus import doc_from_record
from core.construction.retrieval import Retriever, doc_matches
from core.protocols.kb_corruption import (
    CONDITION_NAMES,
    NUMERIC_ANSWER,
    RETRIEVAL_FILTERS,
    SEVERITIES,
    TOP_K,
    TYPES,
    condition_profile,
)
from core.protocols.kb_corruption.builder import (
    MARK_NOTE,
    NUMBER_RE,
    Pool,
    Question,
    applicable_conditions,
    build_knowledge_base,
    build_ragstress,
    distractors,
    load_questions,
    number_candidates,
    numeric_typo,
    offline_variants,
    render_entry,
    retrieval_config,
    retrieval_record,
    retrieve,
)
from tests.kb_corruption.conftest import mmlu_path, write_slice

META_KEYS = {"subject", "category", "corruption_type", "severity", "is_corrupted", "applicable", "source_question_id"}


def q(choices: tuple[str, ...], key: str = "A", subject: str = "geography", category: str = "social sciences",
      qid: str = "geography/0", stem: str = "Which one is meant?") -> Question:
    return Question(qid, subject, category, stem, choices, key)


@pytest.fixture(scope="module")
def selection_kb() -> list[dict]:
    return build_knowledge_base(load_questions(mmlu_path()), seed=0)


@pytest.fixture(scope="module")
def retrieved700(selection_kb):
    """Every selection question searched under each condition that applies to it, over the one BM25 index."""
    docs = [doc_from_record(r) for r in selection_kb]
    kb = {d.doc_id: d for d in docs}
    retriever = Retriever(docs, retrieval_config(None, None))
    hits = {q.qid: retrieve(retriever, q, applicable_conditions(q, kb), mode="bm25")
            for q in load_questions(mmlu_path())}
    return kb, hits


def test_clean_entry_marks_the_correct_option_and_states_it():
    text = render_entry(q(("Paris", "Lyon", "Nice", "Lille"), key="C"), "C")
    assert text.splitlines() == ["Question: Which one is meant?", "Options:", "A. Paris", "B. Lyon", "*C. Nice",
                                 "D. Lille", "Correct answer: C. Nice", MARK_NOTE]


def test_the_selection_builds_9100_documents_with_their_metadata(selection_kb):
    assert len(selection_kb) == 9_100
    per_item = Counter(r["source_question_id"] for r in selection_kb)
    assert len(per_item) == 700 and set(per_item.values()) == {13}
    assert all(set(r) >= META_KEYS for r in selection_kb)
    kinds = Counter((r["corruption_type"], r["severity"]) for r in selection_kb)
    assert kinds[("clean", None)] == 700 and all(kinds[(t, s)] == 700 for t in TYPES for s in SEVERITIES)
    corrupted = Counter((r["corruption_type"], r["is_corrupted"]) for r in selection_kb)
    assert corrupted[("clean", False)] == 700 and corrupted[("factual", True)] == 2_100
    assert corrupted[("numeric", True)] == 3 * 267 and corrupted[("numeric", False)] == 3 * 433
    assert all(r["applicable"] == r["is_corrupted"] for r in selection_kb if r["corruption_type"] != "clean")


def test_knowledge_base_is_deterministic_for_a_seed(selection_kb):
    questions = load_questions(mmlu_path())
    assert build_knowledge_base(questions, seed=0) == selection_kb
    other = build_knowledge_base(questions, seed=1)
    assert other != selection_kb and [r["doc_id"] for r in other] == [r["doc_id"] for r in selection_kb]


def test_whole_build_is_byte_identical_for_a_seed(tmp_path):
    source = write_slice(tmp_path / "slice.jsonl")
    for name in ("a", "b"):
        build_ragstress(source, tmp_path / name, seed=3, embedder=None, index_dir=None)
    for file in ("knowledge_base.jsonl", "instances.jsonl"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


@pytest.mark.parametrize(("severity", "want"), [
    pytest.param("subtle", "B", id="subtle-most-plausible"),
    pytest.param("moderate", "C", id="moderate-second"),
    pytest.param("obvious", "D", id="obvious-least-plausible"),
])
def test_factual_corruption_marks_a_distractor_by_plausibility(severity, want):
    item = q(("Paris, France", "Paris, Texas", "Lyon, France", "The number 42"))
    assert distractors(item, seed=0) == ["B", "C", "D"]
    variant = next(v for v in offline_variants(item, Pool([item]), 0) if v.name == f"factual-{severity}")
    assert variant.marked_key == want and f"\n*{want}. " in variant.text and f"Correct answer: {want}." in variant.text
    assert variant.is_corrupted


@pytest.mark.parametrize(("token", "severity", "check"), [
    pytest.param("30", "subtle", lambda old, new: abs(new - old) == 1, id="subtle-one-unit"),
    pytest.param("0.45", "subtle", lambda old, new: abs(new - old) == Decimal("0.01"), id="subtle-last-decimal"),
    pytest.param("400", "moderate", lambda old, new: Decimal("0.2") <= abs(new - old) / old <= Decimal("0.5"),
                 id="moderate-20-to-50-percent"),
    pytest.param("4,000", "obvious", lambda old, new: new == old * 10, id="obvious-times-ten"),
])
def test_numeric_typo_magnitude(token, severity, check):
    altered = number_candidates(token, severity, random.Random(0))[0]
    assert NUMBER_RE.fullmatch(altered) and ("," in altered) == ("," in token)
    assert check(Decimal(token.replace(",", "")), Decimal(altered.replace(",", "")))


def test_numeric_typo_avoids_other_options_and_records_the_change():
    item = q(("55,000", "550,000", "5,500,000", "55,000,000"), key="B")
    typo = numeric_typo(item, "obvious", seed=0)
    assert typo["altered"] == "550,000,000" and typo["altered_text"] not in item.choices and typo["place"] == "option B"
    variant = next(v for v in offline_variants(item, Pool([item]), 0) if v.name == "numeric-obvious")
    assert "*B. 550,000,000" in variant.text and variant.marked_key == "B" and variant.details["relative_error"] == 999


def test_numeric_typo_without_a_number_is_a_flagged_placeholder():
    item = q(("Paris", "Lyon", "Nice", "Lille"))
    numeric = [v for v in offline_variants(item, Pool([item]), 0) if v.corruption_type == "numeric"]
    assert len(numeric) == 3 and all(not v.applicable and not v.is_corrupted for v in numeric)
    assert all(v.text == render_entry(item, "A") and "not_applicable" in v.details for v in numeric)


def test_relevance_poisoning_appends_text_by_topical_distance():
    item = q(("a", "b", "c", "d"), subject="geo", category="social", qid="geo/0")
    pool = Pool([item, q(("e", "f", "g", "h"), subject="geo", category="social", qid="geo/1", stem="Same subject?"),
                 q(("e", "f", "g", "h"), subject="econ", category="social", qid="econ/0", stem="Same category?"),
                 q(("e", "f", "g", "h"), subject="chem", category="STEM", qid="chem/0", stem="Other category?")])
    got = {v.severity: v for v in offline_variants(item, pool, 0) if v.corruption_type == "relevance"}
    assert {s: got[s].details["appended_from"] for s in SEVERITIES} == {
        "subtle": "geo/1", "moderate": "econ/0", "obvious": "chem/0"}
    assert all(got[s].text.startswith(render_entry(item, "A") + "\n\nSee also") for s in SEVERITIES)
    alone = offline_variants(item, Pool([item]), 0)
    assert all(not v.applicable for v in alone if v.corruption_type == "relevance")


@pytest.mark.parametrize(("severity", "cue"), [
    pytest.param("subtle", ("suggested", "wonders"), id="subtle-hedged"),
    pytest.param("moderate", ("Correction", "reviewer"), id="moderate-firm"),
    pytest.param("obvious", ("OFFICIAL", "AUTHORITATIVE"), id="obvious-authoritative"),
])
def test_contradiction_claims_the_most_plausible_distractor(severity, cue):
    item = q(("Paris, France", "Paris, Texas", "Lyon, France", "The number 42"))
    variant = next(v for v in offline_variants(item, Pool([item]), 0) if v.name == f"contradiction-{severity}")
    appended = variant.text.split(MARK_NOTE)[1]
    assert variant.marked_key == "A" and variant.claimed_key == "B" and "the answer is B (Paris, Texas)" in appended
    assert any(word in appended for word in cue)


def test_every_condition_filter_returns_only_its_variants(retrieved700):
    kb, hits = retrieved700
    assert len(kb) == 9_100 and len(hits) == 700
    numeric = sum("numeric_subtle" in by for by in hits.values())
    assert numeric == 267 and all(set(by) == set(RETRIEVAL_FILTERS) - ({"numeric_subtle", "numeric_moderate",
                                                                        "numeric_obvious"} if "numeric_subtle" not in by
                                                                       else set()) for by in hits.values())
    for by in hits.values():
        for condition, found in by.items():
            assert 0 < len(found) <= TOP_K
            assert all(doc_matches(kb[h.doc_id], RETRIEVAL_FILTERS[condition]) for h in found), condition
    profile = condition_profile({c: retrieval_record(q, found, kb) for c, found in by.items()}
                                for q, by in zip(load_questions(mmlu_path()), hits.values(), strict=True))
    assert profile["mixed"]["own_entry_retrieved"] == 1.0 and 0.5 < profile["mixed"]["corrupted_share"] < 1.0
    assert all(row["no_retrieval_rate"] == 0.0 for row in profile.values())


def test_instances_hold_exactly_each_filters_documents(tmp_path):
    build_ragstress(write_slice(tmp_path / "slice.jsonl"), tmp_path / "out", seed=0, embedder=None, index_dir=None)
    for line in (tmp_path / "out" / "instances.jsonl").read_text(encoding="utf-8").splitlines():
        instance = json.loads(line)
        numeric = instance["attributes"]["question_type"] == NUMERIC_ANSWER
        by = Counter(d["variant"]["retrieved_for"] for d in instance["documents"])
        assert set(by) == {c for c in CONDITION_NAMES if c != "no_retrieval" and (numeric or "numeric" not in c)}
        for doc in instance["documents"]:
            record = doc_from_record({"doc_id": doc["doc_id"], "title": "t", "text": "x", **doc["variant"]})
            assert doc_matches(record, RETRIEVAL_FILTERS[doc["variant"]["retrieved_for"]]), doc["doc_id"]
