"""BM25 backends (bm25s vs rank-bm25), dense MiniLM retrieval, fusion and on-disk index reuse."""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
from conftest import REPO

from core.construction.corpus import chunk_corpus, load_corpus
from core.construction.embedders import ApiEmbedder, MiniLmOnnxEmbedder, sha256_file, verify_file
from core.construction.retrieval import (
    Bm25sBackend,
    RankBm25Backend,
    RetrievalConfig,
    Retriever,
    rrf,
    tokenize,
    weighted,
)


def bm25_only(tmp_path=None) -> RetrievalConfig:
    return RetrievalConfig(embedder=None, index_dir=tmp_path)


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("stopwords dropped", "How often must the oil be changed", ["often", "oil", "changed"]),
        ("numbers kept whole", "every 4,000 hours at 0.45 percent", ["every", "4,000", "hours", "0.45", "percent"]),
        ("lower-cased", "ISO VG 320", ["iso", "vg", "320"]),
    ],
)
def test_tokenize(name, text, expected):
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    "name, query, top",
    [
        ("gearbox", "gearbox oil interval", "d1"),
        ("yaw", "yaw bearing grease", "d2"),
        ("acetylene", "acetylene in transformer oil", "d3"),
        ("panels", "how often are solar panels cleaned", "d4"),
        ("vans", "electric van charge at shift start", "d5"),
    ],
)
def test_bm25_top_document_on_hand_checked_corpus(small_docs, name, query, top):
    assert Retriever(small_docs, bm25_only()).search(query, 3, mode="bm25")[0].doc_id == top


def test_bm25_score_matches_hand_formula(small_docs):
    # "acetylene" occurs once, only in d3: idf = ln((5 - 1 + 0.5) / (1 + 0.5)) = ln 3.
    chunks = chunk_corpus(small_docs)
    lengths = [len(tokenize(c.text)) for c in chunks]
    dl, avgdl = lengths[2], sum(lengths) / len(lengths)
    expected = math.log(3) * 1 / (1 + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))
    scores = Retriever(small_docs, bm25_only()).bm25_scores("acetylene")
    assert scores["d3"] == pytest.approx(expected, rel=1e-5)
    assert set(scores) == {"d3"}  # only matching documents are scored


QUERIES = ["gearbox oil every 4,000 operating hours", "operating hours", "transformer oil acetylene hydrogen",
           "electric vans charge percent", "oil"]


@pytest.mark.parametrize("corpus", ["small", "bundled energy"])
def test_bm25s_agrees_with_rank_bm25(small_docs, corpus):
    docs = small_docs if corpus == "small" else load_corpus(REPO / "data/corpus/energy.jsonl")
    tokens = [tokenize(c.text) for c in chunk_corpus(docs)]
    fast, reference = Bm25sBackend(tokens), RankBm25Backend(tokens)
    for query in QUERIES:
        q = tokenize(query)
        np.testing.assert_allclose(fast.scores(q), reference.scores(q), rtol=1e-5, atol=1e-6, err_msg=query)


def test_rrf_and_weighted_fusion():
    fused = rrf([["a", "b"], ["b", "c"]], k=60)
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})
    mixed = weighted({"a": 10.0, "b": 0.0}, {"a": 0.2, "b": 0.6}, dense_weight=0.5)
    assert mixed == pytest.approx({"a": 0.5, "b": 0.5})


def test_index_persists_and_rebuilds_only_on_change(small_docs, tmp_path):
    first = Retriever(small_docs, bm25_only(tmp_path))
    again = Retriever(small_docs, bm25_only(tmp_path))
    changed_docs = [dataclasses.replace(small_docs[0], text="Gearbox oil changes every 5,000 hours."), *small_docs[1:]]
    changed = Retriever(changed_docs, bm25_only(tmp_path))
    assert (first.loaded_from_disk["bm25"], again.loaded_from_disk["bm25"], changed.loaded_from_disk["bm25"]) == (
        False, True, False)
    assert [h.doc_id for h in first.search("gearbox oil", 5)] == [h.doc_id for h in again.search("gearbox oil", 5)]
    assert first.key != changed.key


@pytest.fixture(scope="module")
def minilm() -> MiniLmOnnxEmbedder:
    return MiniLmOnnxEmbedder()


def test_minilm_vectors_are_normalised_and_semantic(minilm):
    vecs = minilm.embed(["The car would not start.", "The automobile failed to start.", "Quarterly dividend paid."])
    assert vecs.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


@pytest.mark.parametrize(
    "name, mode, query, top",
    [
        ("dense paraphrase", "dense", "battery level required before a work day for company vehicles", "d5"),
        ("hybrid lexical", "hybrid", "yaw bearing grease", "d2"),
    ],
)
def test_dense_and_hybrid_search(small_docs, minilm, tmp_path, name, mode, query, top):
    config = RetrievalConfig(embedder="minilm-onnx", index_dir=tmp_path)
    retriever = Retriever(small_docs, config, embedder=minilm)
    assert retriever.search(query, 3, mode=mode)[0].doc_id == top
    assert Retriever(small_docs, config, embedder=minilm).loaded_from_disk == {"bm25": True, "dense": True}


def test_verify_file_rejects_tampered_asset(tmp_path):
    path = tmp_path / "tok.json"
    path.write_text("{}")
    verify_file(path, sha256_file(path))
    with pytest.raises(ValueError, match="sha256 mismatch"):
        verify_file(path, "0" * 64)


class _EmbeddingHandler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = [{"index": i, "embedding": [float(len(t)), 0.0, 1.0]} for i, t in enumerate(body["input"])]
        payload = json.dumps({"data": list(reversed(data))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_api_embedder_against_local_endpoint():
    server = HTTPServer(("127.0.0.1", 0), _EmbeddingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        emb = ApiEmbedder(f"http://127.0.0.1:{server.server_port}/v1", model="test-embed", batch_size=2)
        vecs = emb.embed(["abc", "a", "abcd"])
    finally:
        server.shutdown()
    expected = np.array([[3, 0, 1], [1, 0, 1], [4, 0, 1]], dtype=np.float32)
    np.testing.assert_allclose(vecs, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)
    assert emb.dim == 3 and emb.model_id == "api:test-embed"
