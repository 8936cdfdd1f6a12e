"""Non-ideal simulation: fact edits, placement, and the invariants of noisy, gap and conflict bundles."""

from __future__ import annotations

import json
import random

import pytest
from conftest import REPO

from core.construction.corpus import CorpusDoc, load_corpus
from core.construction.fact_checks import CheckFailed
from core.construction.retrieval import RetrievalConfig, Retriever
from core.construction.simulate import answers_query, edit_fact, make_conflict, place, simulate


@pytest.mark.parametrize(
    "name, fact, kind, edited",
    [
        ("grouped number", "every 4,000 operating hours", "number", "every 3,000 operating hours"),
        ("decimal", "0.45 percent a year", "number", "0.56 percent a year"),
        ("small integer", "2 ppm", "number", "3 ppm"),
        ("date", "14 November 2025", "date", "14 December 2025"),
        ("date over year end", "6 December 2025", "date", "6 January 2026"),
        ("time", "08:30", "time", "10:30"),
        ("year", "2025", "number", "2026"),
        ("number word", "every two weeks", "number", "every three weeks"),
        ("fraction", "one third of registered members", "number", "one quarter of registered members"),
        ("status", "not required", "status", "required"),
        ("name", "signed off by Dana Okafor", "name", "signed off by Owen Marsh"),
        ("status word", "approved by the board", "status", "rejected by the board"),
    ],
)
def test_edit_fact(name, fact, kind, edited):
    assert edit_fact(fact) == (kind, edited)


def test_edit_fact_none_when_nothing_editable():
    assert edit_fact("the MR safety expert") is None


@pytest.mark.parametrize("seed", range(5))
def test_place_keeps_supporting_at_recorded_positions_with_near_misses_adjacent(seed):
    order, positions = place(["s1", "s2"], ["n1", "n2", "n3", "n4", "n5"], 6, random.Random(seed))
    assert len(order) == 6 and [order[p] for p in positions] == ["s1", "s2"]
    nearest = min(abs(order.index("n1") - p) for p in positions)
    assert nearest == 1


@pytest.fixture(scope="module")
def legal():
    docs = load_corpus(REPO / "data/corpus/legal.jsonl")
    queries = [json.loads(line) for line in (REPO / "data/queries/legal.jsonl").read_text().splitlines()]
    return Retriever(docs, RetrievalConfig(embedder=None, index_dir=None)), queries


def answerable(queries):
    return [q for q in queries if q["answerable"]][:6]


def test_noisy_bundle_invariants(legal):
    retriever, queries = legal
    for q in answerable(queries):
        bundle = simulate("noisy", q, retriever, 10, random.Random(1))
        roles = {d.doc_id: d.role for d in bundle.documents}
        assert len(bundle.documents) == 10 and bundle.origin == "natural"
        assert {d for d, r in roles.items() if r == "supporting"} == set(q["supporting_doc_ids"])
        assert not set(q["conflicting_doc_ids"]) & set(roles)
        assert all(roles[d] == "supporting" and [x.doc_id for x in bundle.documents][p] == d
                   for d, p in bundle.meta["supporting_positions"].items())


def test_gap_bundle_has_no_answering_document(legal):
    retriever, queries = legal
    dropped = {}
    for q in queries[:12]:
        try:
            bundle = simulate("gap", q, retriever, 10, random.Random(1))
        except CheckFailed as failed:  # a kept document states one of the answer facts: the gap is not a gap
            dropped[q["query_id"]] = failed.verdicts
            continue
        assert all(v["passed"] for v in bundle.meta["checks"].values())
        assert bundle.documents and all(d.role in ("noise", "partial") for d in bundle.documents)
        assert not {d.doc_id for d in bundle.documents} & (set(q["supporting_doc_ids"]) | set(q["conflicting_doc_ids"]))
        for d in bundle.documents:
            assert not answers_query(retriever.docs[d.doc_id], q, 0.0, float("inf")), (q["query_id"], d.doc_id)
        assert bundle.origin == ("augmented" if q["answerable"] else "natural")
    assert sorted(dropped) == ["leg-employment-notice-q1", "leg-theft-minor-q1"]
    assert not dropped["leg-employment-notice-q1"]["gold_not_elsewhere"].passed


def test_gap_check_drops_a_document_that_still_answers():
    q = {"query_id": "q", "query": "gearbox oil interval", "answerable": True, "answer_facts": ["4,000 hours"],
         "supporting_doc_ids": ["a"], "conflicting_doc_ids": []}
    docs = [CorpusDoc("a", "energy", "Gearbox oil", "Gearbox oil interval: 4,000 hours."),
            CorpusDoc("b", "energy", "Gearbox oil copy", "Copy: gearbox oil interval 4,000 hours."),
            CorpusDoc("c", "energy", "Gearbox planning", "Gearbox oil work is planned in low-wind months.")]
    docs += [CorpusDoc(f"f{i}", "energy", f"Filler {i}", f"Unrelated depot notice number {i}.") for i in range(4)]
    bundle = simulate("gap", q, Retriever(docs, RetrievalConfig(embedder=None, index_dir=None)), 5, random.Random(0))
    assert [d.doc_id for d in bundle.documents][:1] == ["c"]
    assert bundle.meta["gap_check_dropped"] == ["b"]


def test_conflict_bundle_invariants(legal):
    retriever, queries = legal
    origins = set()
    for seed in range(4):
        for q in answerable(queries):
            try:
                bundle = simulate("conflict", q, retriever, 10, random.Random(seed))
            except CheckFailed as failed:  # the rule edited no answer fact, or left it stated elsewhere
                assert not all(v.passed for v in failed.verdicts.values())
                continue
            origins.add(bundle.origin)
            conflicting = [d for d in bundle.documents if d.role == "conflicting"]
            assert len(conflicting) == 1 and conflicting[0].conflict_group == "g1" and conflicting[0].conflict_summary
            supporting = [d for d in bundle.documents if d.role == "supporting"]
            assert supporting and any(d.conflict_group == "g1" for d in supporting)
            if bundle.origin == "augmented":
                original = retriever.docs[bundle.meta["edited_doc"]].text
                assert bundle.meta["original_fact"] in original
                assert bundle.meta["original_fact"] not in conflicting[0].text
                assert bundle.meta["edited_fact"] in conflicting[0].text
                assert bundle.meta["edited_fact"] != bundle.meta["original_fact"]
    assert origins == {"natural", "augmented"}


def test_make_conflict_edits_the_answer_fact_first():
    doc = CorpusDoc("m", "legal", "Deposits", "Deposit cap is two months' rent; return within 14 days.")
    spec, meta = make_conflict(doc, ["14 days"], "g1")
    assert meta["original_fact"] == "14 days" and spec.text.endswith("return within 18 days.")
    assert spec.role == "conflicting" and "14 days" in spec.conflict_summary


@pytest.mark.parametrize(
    "name, a, b, expected",
    [
        ("two replacements", "firmware 4.7.2, window 20:00 daily", "firmware 4.5.0, window 22:00 daily",
         "'4.7.2' vs '4.5.0'; '20:00' vs '22:00'"),
        ("identical", "same text", "same text", "the documents state different values"),
    ],
)
def test_diff_summary(name, a, b, expected):
    from core.construction.simulate import diff_summary

    assert diff_summary(a, b) == expected
