"""Corpus import, HTML stripping, chunking, and the bundled fictional corpus and queries."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import REPO

from core.construction.corpus import chunk_words, corpus_hash, doc_from_record, html_to_text, load_corpus

DOMAINS = ["energy", "medical", "legal", "financial", "party_building", "web_search"]


@pytest.mark.parametrize(
    "name, markup, expected",
    [
        ("tags removed", "<p>Hello <b>world</b></p>", "Hello world"),
        ("script dropped", "<p>a</p><script>alert('x')</script><p>b</p>", "a\nb"),
        ("style and head dropped", "<head><title>T</title></head><style>p{}</style><p>body</p>", "body"),
        ("entities decoded", "<p>R&amp;D &lt;5%</p>", "R&D <5%"),
        ("list items on lines", "<ul><li>one</li><li>two</li></ul>", "one\ntwo"),
    ],
)
def test_html_to_text(name, markup, expected):
    assert html_to_text(markup) == expected


@pytest.mark.parametrize(
    "name, n_words, window, overlap, expected",
    [
        ("single window", 5, 10, 2, ["0 1 2 3 4"]),
        ("exact fit no overlap", 8, 4, 0, ["0 1 2 3", "4 5 6 7"]),
        ("overlap shares words", 10, 4, 1, ["0 1 2 3", "3 4 5 6", "6 7 8 9"]),
        ("tail shorter than window", 6, 4, 2, ["0 1 2 3", "2 3 4 5"]),
        ("empty text", 0, 4, 1, []),
    ],
)
def test_chunk_words(name, n_words, window, overlap, expected):
    text = " ".join(str(i) for i in range(n_words))
    assert chunk_words(text, window, overlap) == expected


@pytest.mark.parametrize("name, window, overlap", [("overlap equals window", 4, 4), ("zero window", 0, 0)])
def test_chunk_words_rejects_bad_settings(name, window, overlap):
    with pytest.raises(ValueError):
        chunk_words("a b c", window, overlap)


@pytest.mark.parametrize(
    "name, record, message",
    [
        ("missing text", {"doc_id": "a", "title": "t"}, "lacks text"),
        ("bad content type", {"doc_id": "a", "title": "t", "text": "x", "content_type": "pdf"}, "content_type"),
    ],
)
def test_doc_from_record_rejects(name, record, message):
    with pytest.raises(ValueError, match=message):
        doc_from_record(record)


def test_load_corpus_rejects_duplicate_ids(tmp_path):
    path = tmp_path / "c.jsonl"
    rec = {"doc_id": "a", "title": "t", "text": "x"}
    path.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(ValueError, match="duplicate"):
        load_corpus(path)


def test_corpus_hash_changes_with_content(small_docs):
    changed = [small_docs[0].__class__(**{**small_docs[0].__dict__, "text": "changed"}), *small_docs[1:]]
    assert corpus_hash(small_docs) == corpus_hash(list(reversed(small_docs)))
    assert corpus_hash(small_docs) != corpus_hash(changed)


@pytest.mark.parametrize("domain", DOMAINS)
def test_bundled_corpus_and_queries(domain):
    docs = load_corpus(REPO / f"data/corpus/{domain}.jsonl")
    queries = [json.loads(line) for line in (REPO / f"data/queries/{domain}.jsonl").read_text().splitlines()]
    by_id = {d.doc_id: d for d in docs}
    assert len(docs) >= 60 and len(queries) >= 20
    assert Counter(d.meta["kind"] for d in docs).keys() >= {"main", "brief", "old", "near", "partial"}
    answerable = [q for q in queries if q["answerable"]]
    assert answerable and len(answerable) < len(queries)
    for q in answerable:
        main = by_id[q["supporting_doc_ids"][0]]
        assert all(f in main.plain for f in q["answer_facts"]), q["query_id"]
    for q in queries:
        if q["answerable"]:
            continue
        probe = [p.lower() for p in q["gap_probe"]]
        assert not any(all(p in (d.title + " " + d.plain).lower() for p in probe) for d in docs), q["query_id"]
