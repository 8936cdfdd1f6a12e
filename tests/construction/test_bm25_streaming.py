"""The streamed BM25 build: term counts equal the tokeniser's, the score matrix equals bm25s's own bit for bit, the
chunk table cuts the same chunks as chunk_corpus, and a built retriever holds no second copy of the texts."""

from __future__ import annotations

import gc
import random
import tracemalloc
from collections import Counter

import bm25s
import numpy as np
import pytest
from conftest import REPO

from core.construction.corpus import ChunkTable, CorpusDoc, chunk_corpus, chunk_count, chunk_words, load_corpus
from core.construction.retrieval import Bm25sBackend, RetrievalConfig, Retriever, term_counts, tokenize

TEXTS = {
    "english": "How often must the oil be changed? Every 4,000 hours, at 0.45 percent; the oil, the OIL.",
    "stopwords only": "the and of to in is",
    "empty": "",
    "chinese": "风力发电机 齿轮箱 的 润滑油 应该 多久 更换 一次？每 4000 小时。",
    "japanese": "ギアボックスのオイルは何時間ごとに交換しますか。4,000 時間ごとです。",
    "mixed script": "Gearbox 齿轮箱 oil オイル every 4,000 hours 小时",
}


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_term_counts_equal_counted_tokens(text):
    assert term_counts(text) == Counter(tokenize(text))


def _corpus(name: str) -> list[CorpusDoc]:
    if name == "bundled energy":
        return load_corpus(REPO / "data/corpus/energy.jsonl")
    if name == "bundled all":
        return load_corpus(sorted((REPO / "data/corpus").glob("*.jsonl")))
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "oil", "gearbox", "hours", "4,000", "0.45", "齿轮箱润滑油", "オイル交換"]
    return [CorpusDoc(f"d{i}", "x", f"Doc {i}", " ".join(rng.choice(words) for _ in range(rng.randint(1, 60))))
            for i in range(300)]


def _dense(model: bm25s.BM25) -> dict[str, np.ndarray]:
    """{term: its column of the documents x terms score matrix} of a bm25s model."""
    s = model.scores
    out = {}
    for term, col in model.vocab_dict.items():
        if col < len(s["indptr"]) - 1:
            column = np.zeros(s["num_docs"], dtype=np.float32)
            lo, hi = s["indptr"][col], s["indptr"][col + 1]
            column[s["indices"][lo:hi]] = s["data"][lo:hi]
            out[term] = column
    return out


@pytest.mark.parametrize("corpus", ["bundled energy", "bundled all", "synthetic multilingual"])
def test_streamed_index_equals_bm25s_bit_for_bit(corpus):
    texts = [c.text for c in chunk_corpus(_corpus(corpus))]
    reference = bm25s.BM25(method="robertson", k1=1.5, b=0.75)
    reference.index([tokenize(t) for t in texts], show_progress=False)
    streamed = Bm25sBackend.from_texts(iter(texts))
    expected, got = _dense(reference), _dense(streamed.model)
    assert got.keys() == expected.keys()
    for term, column in expected.items():
        assert np.array_equal(got[term], column), term
    for text in texts[:40]:
        query = [t for t in tokenize(text[:120]) if t in reference.vocab_dict]
        if query:
            assert np.array_equal(streamed.scores(query), np.asarray(reference.get_scores(query))), text[:40]


@pytest.mark.parametrize("window, overlap", [(200, 40), (5, 2), (3, 0), (10_000, 0)],
                         ids=["default", "small overlapping", "no overlap", "document-level"])
def test_chunk_table_cuts_the_chunks_of_chunk_corpus(window, overlap):
    docs = [*_corpus("bundled energy")[:20], CorpusDoc("blank", "x", "Blank", "   ")]
    table, chunks = ChunkTable(docs, window, overlap), chunk_corpus(docs, window, overlap)
    assert (len(table), list(table), [table[i] for i in range(len(table))]) == (len(chunks), chunks, chunks)
    assert table.doc_ids == [c.doc_id for c in chunks]
    assert [chunk_count(d.plain, window, overlap) for d in docs] == [len(chunk_words(d.plain, window, overlap))
                                                                     for d in docs]


@pytest.mark.parametrize("window", [10_000, 200], ids=["document-level", "200-word windows"])
def test_retriever_keeps_no_second_copy_of_the_texts(window):
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)]
    docs = [CorpusDoc(f"d{i}", "x", f"T{i}", " ".join(rng.choice(vocab) for _ in range(2_000)) + f" only{i}")
            for i in range(150)]
    text_bytes = sum(len(d.text) for d in docs)  # ~1.2 MB of ASCII text
    gc.collect()
    tracemalloc.start()
    retriever = Retriever(docs, RetrievalConfig(window=window, overlap=0, embedder=None, index_dir=None))
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [h.doc_id for h in retriever.search("only7 w1", 3, "bm25")] == ["d7"]
    index_bytes = sum(retriever.bm25.model.scores[k].nbytes for k in ("data", "indices", "indptr"))
    beside_index = held - index_bytes
    assert beside_index < 0.2 * text_bytes, f"{beside_index} bytes beside the index for {text_bytes} bytes of text"


class HashEmbedder:
    """Deterministic bag-of-words vectors (word hash -> dimension), L2-normalised: a dense index without a model."""

    model_id, dim = "hash-64", 64

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word)) % self.dim] += 1.0
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return out


@pytest.mark.parametrize("n_docs", [2_000, 6_000], ids=["2k chunks", "6k chunks"])
def test_dense_similarities_read_the_index_without_copying_it(n_docs):
    rng = random.Random(5)
    words = [f"w{i}" for i in range(300)]
    docs = [CorpusDoc(f"d{i}", "x", f"T{i}", " ".join(rng.choice(words) for _ in range(12))) for i in range(n_docs)]
    retriever = Retriever(docs, RetrievalConfig(embedder=None, index_dir=None), embedder=HashEmbedder())
    matrix = retriever.dense.reconstruct_n(0, retriever.dense.ntotal)
    expected = matrix @ HashEmbedder().embed(["w1 w2 w3"])[0]
    gc.collect()
    tracemalloc.start()
    got = retriever.dense_similarities("w1 w2 w3")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert np.array_equal(got, expected)
    assert peak < matrix.nbytes / 2, f"{peak} bytes allocated for a {matrix.nbytes}-byte index"
