"""RAGStress's dense preset: faiss's filtered nearest-neighbour search returns exactly the exact (numpy) filtered top-k;
an OpenAI-compatible embeddings endpoint is called through the real openai SDK on the loopback fake server (key from
the environment, tokens counted); `gauntlet kb-corruption build --retriever dense` prints the embedding estimate and
stops before any embedding call when its cost is not allowed, and builds with faiss-filtered dense retrieval when it
is."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from core.cli import app
from core.construction.embedders import ApiEmbedder, estimate_embedding
from core.construction.retrieval import RetrievalConfig, Retriever, doc_matches
from core.protocols.kb_corruption.builder import RETRIEVAL_FILTERS, retrieval_mode
from core.testing.embedders import ScriptedEmbedder
from core.testing.fake_server import FakeLLMServer
from tests.kb_corruption.conftest import write_slice
from tests.kb_corruption.test_retrieval_filters import DOCS

FILTERS = {"clean": {"kind": "clean"}, "two-kinds": {"kind": ["typo", "claim"]}, "energy": {"domain": "energy"},
           "nothing": {"kind": "nothing"}, "all": {}}
BY_ID = {d.doc_id: d for d in DOCS}


def _retrievers(dim: int = 24) -> tuple[Retriever, Retriever]:
    embedder = ScriptedEmbedder(dim)
    exact = Retriever(DOCS, RetrievalConfig(embedder=None, index_dir=None, dense_search="exact"), embedder=embedder)
    by_faiss = Retriever(DOCS, RetrievalConfig(embedder=None, index_dir=None, dense_search="faiss"), embedder=embedder)
    return exact, by_faiss


@pytest.mark.parametrize("query", ["gearbox oil hours", "solar panels", "unrelated vans", "yaw"])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_faiss_filtered_search_equals_the_exact_filtered_search(query, k) -> None:
    exact, by_faiss = _retrievers()
    want = exact.search_filtered(query, FILTERS, k, mode="dense")
    got = by_faiss.search_filtered(query, FILTERS, k, mode="dense")
    assert {n: [h.doc_id for h in hits] for n, hits in got.items()} == {
        n: [h.doc_id for h in hits] for n, hits in want.items()}
    for name, hits in got.items():
        assert [h.dense for h in hits] == pytest.approx([h.dense for h in want[name]], abs=1e-6)
        assert all(doc_matches(BY_ID[h.doc_id], FILTERS[name]) for h in hits)
    assert got["nothing"] == []


def test_unknown_dense_search_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="known: exact, faiss"):
        Retriever(DOCS, RetrievalConfig(embedder=None, index_dir=None, dense_search="hnsw"))


@pytest.mark.parametrize(("retriever", "embedder", "expected"), [
    pytest.param(None, "minilm-onnx", "hybrid", id="default-with-embedder"),
    pytest.param(None, None, "bm25", id="default-without"),
    pytest.param("dense", "openai-compatible", "dense", id="paper-preset"),
    pytest.param("dense", None, "needs an embedder", id="dense-without-embedder"),
    pytest.param("colbert", "minilm-onnx", "known: hybrid, bm25, dense", id="unknown"),
])
def test_retrieval_mode(retriever, embedder, expected) -> None:
    if expected in ("hybrid", "bm25", "dense"):
        assert retrieval_mode(retriever, embedder) == expected
    else:
        with pytest.raises(ValueError, match=expected):
            retrieval_mode(retriever, embedder)


def test_api_embedder_through_the_openai_sdk_on_the_loopback_server(monkeypatch) -> None:
    monkeypatch.setenv("EMBED_KEY", "test-key")
    with FakeLLMServer(script=[]) as server:
        embedder = ApiEmbedder(server.base_url + "/v1", "embed-small", api_key_env="EMBED_KEY", batch_size=2)
        vectors = embedder.embed(["gearbox oil", "yaw bearings", "solar panels"])
        bodies = [r for r in server.requests if "input" in r]
    assert vectors.shape == (3, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert embedder.calls == 2 and embedder.tokens == 6  # the server counts whitespace words: 2 + 2 + 2
    assert [b["input"] for b in bodies] == [["gearbox oil", "yaw bearings"], ["solar panels"]]
    assert all(b["model"] == "embed-small" for b in bodies)


def test_api_embedder_key_comes_from_the_named_variable(monkeypatch) -> None:
    monkeypatch.delenv("EMBED_KEY", raising=False)
    with pytest.raises(ValueError, match=r"\$EMBED_KEY"):
        ApiEmbedder("http://127.0.0.1:9/v1", "m", api_key_env="EMBED_KEY")


def test_estimate_counts_tokens_and_prices_them() -> None:
    estimate = estimate_embedding(["a" * 40, "会議室"], price_per_million=0.02)
    assert (estimate.texts, estimate.tokens) == (2, 13) and estimate.usd == pytest.approx(13 * 0.02 / 1e6)
    assert "~13 tokens" in estimate.text()


def _build(tmp_path, server: FakeLLMServer, *extra: str):
    source = write_slice(tmp_path / "slice.jsonl", per=2)
    out = tmp_path / "out"
    args = ["kb-corruption", "build", "--questions", str(source), "--out", str(out), "--retriever", "dense",
            "--embedder", "openai-compatible", "--embedding-url", server.base_url + "/v1",
            "--embedding-model", "embed-small", "--embedding-key-env", "EMBED_KEY", "--index-dir", str(tmp_path / "ix"),
            *extra]
    return CliRunner().invoke(app, args), out


@pytest.mark.parametrize(("extra", "builds"), [
    pytest.param([], False, id="no-cost-limit-stops"),
    pytest.param(["--embedding-price", "0.02"], False, id="price-without-limit-stops"),
    pytest.param(["--embedding-price", "0.02", "--max-embedding-cost", "0.000001"], False, id="over-the-limit-stops"),
    pytest.param(["--embedding-price", "0.02", "--max-embedding-cost", "1"], True, id="within-the-limit-builds"),
])
def test_dense_preset_cli_estimates_before_embedding(tmp_path, monkeypatch, extra, builds) -> None:
    monkeypatch.setenv("EMBED_KEY", "test-key")
    with FakeLLMServer(script=[]) as server:
        result, out = _build(tmp_path, server, *extra)
        embedded = [r for r in server.requests if "input" in r]
    output = " ".join(result.output.split())
    assert "texts, ~" in output and "tokens (estimated)" in output, output
    if not builds:
        assert result.exit_code == 2 and "stopped before embedding" in output and embedded == []
        assert not (out / "instances.jsonl").exists()
        return
    assert result.exit_code == 0, result.output
    report = json.loads((out / "build.json").read_text(encoding="utf-8"))
    assert report["retriever"]["mode"] == "dense" and report["retriever"]["dense_search"] == "faiss"
    assert report["retriever"]["embedder"] == "api:embed-small" and embedded
    instances = [json.loads(line) for line in (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()]
    retrieved = instances[0]["metadata"]["ragstress"]["retrieval"]
    assert set(retrieved) <= set(RETRIEVAL_FILTERS) and any(r["returned"] for r in retrieved.values())
    assert all(r["returned"] <= 5 for r in retrieved.values())
