"""Hybrid retrieval over a chunked corpus: BM25 (bm25s, rank-bm25 as reference), dense (faiss), fusion.

BM25 agreement: bm25s with method="robertson" and rank_bm25.BM25Okapi(epsilon=0) compute the same
ranking. Both use idf = ln((N - df + 0.5) / (df + 0.5)); bm25s clamps a negative idf to 0 and
BM25Okapi replaces it with epsilon * mean_idf, so epsilon=0 makes them equal. Their term-frequency
parts differ by the constant factor (k1 + 1), which BM25Okapi includes and bm25s "robertson" omits;
`RankBm25Backend` divides rank-bm25's scores by (k1 + 1) so both backends return identical numbers.

Indexes persist under <index_dir>/<corpus hash>/ and are rebuilt only when the documents, the chunking
settings or the embedder change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from core.config import REPO_ROOT
from core.construction.corpus import Chunk, CorpusDoc, chunk_corpus, corpus_hash
from core.construction.embedders import Embedder, build_embedder
from core.registry import Registry

DEFAULT_INDEX_DIR = REPO_ROOT / "var" / "index"
K1, B = 1.5, 0.75
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,'][a-z0-9]+)*")
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i in is it its may must of on or our "
    "should that the their there this to was what when where which who will with within would you your".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens with stopwords removed (numbers like 4,000 and 0.45 stay whole)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25Backend(Protocol):
    """A BM25 index over token lists that scores every chunk for a query."""

    def scores(self, query_tokens: list[str]) -> np.ndarray: ...


BM25_BACKENDS: Registry[Callable[[list[list[str]]], BM25Backend]] = Registry("bm25 backend")


@BM25_BACKENDS.register("bm25s")
class Bm25sBackend:
    """bm25s with the Robertson idf/tf variant (see module docstring)."""

    def __init__(self, corpus_tokens: list[list[str]], k1: float = K1, b: float = B) -> None:
        import bm25s

        self.model = bm25s.BM25(method="robertson", k1=k1, b=b)
        self.model.index(corpus_tokens, show_progress=False)
        self.vocab = set(self.model.vocab_dict)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        known = [t for t in query_tokens if t in self.vocab]
        if not known:
            return np.zeros(self.model.scores["num_docs"], dtype=np.float32)
        return np.asarray(self.model.get_scores(known), dtype=np.float32)

    def save(self, path: Path) -> None:
        self.model.save(str(path))

    @classmethod
    def load(cls, path: Path) -> Bm25sBackend:
        import bm25s

        obj = cls.__new__(cls)
        obj.model = bm25s.BM25.load(str(path))
        obj.vocab = set(obj.model.vocab_dict)
        return obj


@BM25_BACKENDS.register("rank_bm25")
class RankBm25Backend:
    """rank_bm25.BM25Okapi (epsilon=0), scores divided by (k1 + 1) to match bm25s robertson."""

    def __init__(self, corpus_tokens: list[list[str]], k1: float = K1, b: float = B) -> None:
        from rank_bm25 import BM25Okapi

        self.model = BM25Okapi(corpus_tokens, k1=k1, b=b, epsilon=0.0)
        self.k1 = k1

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        return (np.asarray(self.model.get_scores(query_tokens)) / (self.k1 + 1)).astype(np.float32)


@dataclass(frozen=True)
class Hit:
    """A retrieved document with its fused score, 0-based rank and the per-retriever scores."""

    doc_id: str
    score: float
    rank: int
    bm25: float = 0.0
    dense: float = 0.0


@dataclass
class RetrievalConfig:
    """Chunking, backends, fusion and persistence settings."""

    window: int = 200
    overlap: int = 40
    bm25_backend: str = "bm25s"
    embedder: str | None = "minilm-onnx"
    embedder_options: dict = field(default_factory=dict)
    fusion: str = "rrf"  # "rrf" or "weighted"
    rrf_k: int = 60
    dense_weight: float = 0.5
    top_k: int = 10
    index_dir: Path | None = DEFAULT_INDEX_DIR


def doc_max(chunks: list[Chunk], chunk_scores: np.ndarray) -> dict[str, float]:
    """Document score = best chunk score."""
    best: dict[str, float] = {}
    for chunk, score in zip(chunks, chunk_scores):
        if chunk.doc_id not in best or score > best[chunk.doc_id]:
            best[chunk.doc_id] = float(score)
    return best


def ranked(scores: dict[str, float]) -> list[str]:
    """Doc ids by descending score, ties broken by doc id (deterministic)."""
    return sorted(scores, key=lambda d: (-scores[d], d))


def rrf(rankings: list[list[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: sum over rankings of 1 / (k + rank), rank starting at 1."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, 1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused


def weighted(bm25: dict[str, float], dense: dict[str, float], dense_weight: float) -> dict[str, float]:
    """Min-max normalise each score set and mix them: (1 - w) * bm25 + w * dense."""

    def norm(scores: dict[str, float]) -> dict[str, float]:
        if not scores:
            return {}
        lo, hi = min(scores.values()), max(scores.values())
        return {d: (s - lo) / (hi - lo) if hi > lo else 0.0 for d, s in scores.items()}

    nb, nd = norm(bm25), norm(dense)
    return {d: (1 - dense_weight) * nb.get(d, 0.0) + dense_weight * nd.get(d, 0.0) for d in set(nb) | set(nd)}


class Retriever:
    """BM25 + optional dense retrieval over chunked documents, with on-disk index reuse."""

    def __init__(self, docs: list[CorpusDoc], config: RetrievalConfig | None = None,
                 embedder: Embedder | None = None) -> None:
        self.config = config or RetrievalConfig()
        self.docs = {d.doc_id: d for d in docs}
        self.chunks = chunk_corpus(docs, self.config.window, self.config.overlap)
        self.embedder = embedder
        if self.embedder is None and self.config.embedder:
            self.embedder = build_embedder(self.config.embedder, **self.config.embedder_options)
        emb_id = self.embedder.model_id if self.embedder else "none"
        self.key = corpus_hash(docs, f"{self.config.window}/{self.config.overlap}/{emb_id}")
        self.loaded_from_disk: dict[str, bool] = {}
        self.bm25 = self._bm25_index()
        self.dense = self._dense_index() if self.embedder else None

    @property
    def index_path(self) -> Path | None:
        return Path(self.config.index_dir) / self.key if self.config.index_dir else None

    def _bm25_index(self) -> BM25Backend:
        path = self.index_path / "bm25s" if self.index_path else None
        if self.config.bm25_backend == "bm25s" and path and (path / "params.index.json").exists():
            self.loaded_from_disk["bm25"] = True
            return Bm25sBackend.load(path)
        backend = BM25_BACKENDS.get(self.config.bm25_backend)([tokenize(c.text) for c in self.chunks])
        self.loaded_from_disk["bm25"] = False
        if path and isinstance(backend, Bm25sBackend):
            path.mkdir(parents=True, exist_ok=True)
            backend.save(path)
        return backend

    def _dense_index(self):
        import faiss

        path = self.index_path / "dense.faiss" if self.index_path else None
        if path and path.exists():
            self.loaded_from_disk["dense"] = True
            return faiss.read_index(str(path))
        vectors = self.embedder.embed([c.text for c in self.chunks])
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        self.loaded_from_disk["dense"] = False
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            faiss.write_index(index, str(path))
            (path.parent / "chunks.json").write_text(json.dumps([[c.doc_id, c.index] for c in self.chunks]))
        return index

    def bm25_scores(self, query: str, depth: int | None = None) -> dict[str, float]:
        """BM25 score per document (best chunk) over matching chunks, or only the best `depth` chunks."""
        scores = self.bm25.scores(tokenize(query))
        idx = np.flatnonzero(scores > 0)
        if depth is not None and len(idx) > depth:
            idx = idx[np.argpartition(-scores[idx], depth - 1)[:depth]]
        return doc_max([self.chunks[i] for i in idx], scores[idx])

    def dense_scores(self, query: str, depth: int = 100) -> dict[str, float]:
        """Cosine similarity of the best `depth` chunks, aggregated to documents."""
        if self.dense is None:
            return {}
        q = self.embedder.embed([query])
        depth = min(depth, len(self.chunks))
        sims, ids = self.dense.search(q, depth)
        picked = [self.chunks[i] for i in ids[0] if i >= 0]
        return doc_max(picked, sims[0][: len(picked)])

    def search(self, query: str, k: int | None = None, mode: str = "hybrid") -> list[Hit]:
        """Top-k documents for a query; mode is "bm25", "dense" or "hybrid" (dense falls back to bm25)."""
        k = k or self.config.top_k
        depth = max(4 * k, 50)
        bm = self.bm25_scores(query, depth) if mode in ("bm25", "hybrid") or self.dense is None else {}
        de = self.dense_scores(query, depth) if mode in ("dense", "hybrid") else {}
        if mode == "bm25" or not de:
            fused = bm
        elif mode == "dense":
            fused = de
        elif self.config.fusion == "weighted":
            fused = weighted(bm, de, self.config.dense_weight)
        else:
            fused = rrf([ranked(bm), ranked(de)], self.config.rrf_k)
        order = ranked(fused)[:k]
        return [Hit(d, fused[d], r, bm.get(d, 0.0), de.get(d, 0.0)) for r, d in enumerate(order)]
