"""Metadata-filtered search over one index (core.construction.retrieval): a filter keeps only matching documents, is
applied before ranking, returns nothing when nothing matches or scores, and leaves unfiltered search unchanged."""

from __future__ import annotations

import pytest

from core.construction.corpus import CorpusDoc
from core.construction.retrieval import RetrievalConfig, Retriever, doc_matches
from core.protocols.kb_corruption.builder import build_ragstress
from tests.kb_corruption.conftest import write_slice

DOCS = [
    CorpusDoc("g1", "energy", "Gearbox oil", "Replace the gearbox oil every 4,000 hours.", meta={"kind": "clean", "v": 1}),
    CorpusDoc("g2", "energy", "Gearbox oil", "Replace the gearbox oil every 9,000 hours.", meta={"kind": "typo", "v": 2}),
    CorpusDoc("g3", "energy", "Gearbox oil", "Gearbox oil is replaced yearly, some say.", meta={"kind": "claim", "v": 3}),
    CorpusDoc("y1", "energy", "Yaw bearings", "Regrease the yaw bearings every 2,500 hours.", meta={"kind": "clean"}),
    CorpusDoc("p1", "solar", "Panel cleaning", "Solar panels are cleaned three times a year.", meta={"kind": "clean"}),
    *(CorpusDoc(f"f{i}", "misc", f"Filler {i}", f"Unrelated note number {i} about {topic}.", meta={"kind": "filler"})
      for i, topic in enumerate(("vans", "badges", "lunch", "parking", "printers", "keys", "plants", "mail"))),
]


@pytest.fixture(scope="module")
def bm25() -> Retriever:
    return Retriever(DOCS, RetrievalConfig(embedder=None, index_dir=None))


@pytest.mark.parametrize(("where", "expected"), [
    pytest.param({"kind": "clean"}, {"g1", "y1", "p1"}, id="metadata-value"),
    pytest.param({"kind": ["typo", "claim"]}, {"g2", "g3"}, id="metadata-list"),
    pytest.param({"domain": "solar"}, {"p1"}, id="document-field"),
    pytest.param({"kind": "clean", "domain": "energy"}, {"g1", "y1"}, id="all-keys-must-match"),
    pytest.param({"v": None, "domain": ["energy", "solar"]}, {"y1", "p1"}, id="missing-key-is-none"),
])
def test_doc_matches(where, expected):
    assert {d.doc_id for d in DOCS if doc_matches(d, where)} == expected


@pytest.mark.parametrize(("where", "top"), [
    pytest.param({"kind": "typo"}, ["g2"], id="only-the-typo"),
    pytest.param({"kind": ["clean", "claim"]}, ["g1", "g3", "y1"], id="two-kinds"),
    pytest.param(lambda d: d.doc_id != "g1", ["g2", "g3", "y1"], id="predicate"),
])
def test_filtered_search_keeps_only_matching_documents(bm25, where, top):
    hits = bm25.search("gearbox oil hours", 5, mode="bm25", where=where)
    assert [h.doc_id for h in hits] == top


def test_filter_is_applied_before_ranking(bm25):
    unfiltered = [h.doc_id for h in bm25.search("gearbox oil", 1, mode="bm25")]
    filtered = [h.doc_id for h in bm25.search("gearbox oil", 1, mode="bm25", where={"kind": "claim"})]
    assert unfiltered != ["g3"] and filtered == ["g3"]


@pytest.mark.parametrize("where", [
    pytest.param({"kind": "nothing"}, id="filter-matches-nothing"),
    pytest.param({"domain": "solar"}, id="nothing-scores-under-the-filter"),
])
def test_no_documents_when_nothing_matches_or_scores(bm25, where):
    assert bm25.search("gearbox oil", 5, mode="bm25", where=where) == []


def test_search_filtered_scores_once_and_equals_single_filters(bm25):
    filters = {"clean": {"kind": "clean"}, "typo": {"kind": "typo"}, "all": {}}
    many = bm25.search_filtered("gearbox oil hours", filters, 3, mode="bm25")
    assert many == {name: bm25.search("gearbox oil hours", 3, mode="bm25", where=where) for name, where in filters.items()}
    assert [h.doc_id for h in many["all"]] == [h.doc_id for h in bm25.search("gearbox oil hours", 3, mode="bm25")]


def test_hybrid_filtered_search_over_dense_and_bm25(tmp_path):
    report = build_ragstress(write_slice(tmp_path / "s.jsonl", subjects=("philosophy",), per=2), tmp_path / "out",
                             seed=0, embedder="minilm-onnx", index_dir=None)
    assert report.retriever["mode"] == "hybrid" and report.retriever["embedder"]
    assert report.conditions["clean"]["own_entry_first"] == 1.0
    assert report.conditions["factual_subtle"]["corrupted_share"] == 1.0
    assert report.conditions["clean"]["corrupted_share"] == 0.0
