"""Retrieval benchmark: index build time, per-query latency (p50/p95) and memory for BM25, dense and hybrid.

Two scales:
  bundled   - the six-domain corpus in data/corpus (360 documents), every backend measured for real,
              including the offline MiniLM ONNX embedder and rank-bm25 (the reference BM25 backend).
  synthetic - N documents (default 180,000) of ~80 words drawn Zipf-style from the bundled vocabulary.
              BM25 (bm25s) is built and queried for real over all N. Dense embedding of N documents on
              this 2-core machine would take far too long, so: embedding throughput is measured on a
              documented subsample (--dense-sample, default 300 documents) and extrapolated to N; the
              faiss IndexFlatIP search latency at N uses N random unit vectors (dimension 384), which costs
              exactly what real vectors would (flat inner-product search is data-independent). Hybrid at N
              = real BM25 + that faiss search + reciprocal rank fusion.

Run:  .venv/bin/python bench/bench_retrieval.py [--docs 180000] [--dense-sample 300] [--queries 100]
      [--json var/bench/retrieval.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.construction.corpus import CorpusDoc, load_corpus  # noqa: E402
from core.construction.embedders import MiniLmOnnxEmbedder  # noqa: E402
from core.construction.retrieval import (  # noqa: E402
    RankBm25Backend,
    RetrievalConfig,
    Retriever,
    ranked,
    rrf,
    tokenize,
)
from core.testing.memory import peak_rss_mb  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    """Current resident set size in MiB (from /proc/self/statm)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def latency(fn, queries: list[str]) -> dict[str, float]:
    """p50/p95/mean milliseconds of fn(query) over the queries (one warm-up call first)."""
    fn(queries[0])
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t) * 1000)
    arr = np.array(times)
    return {"p50_ms": round(float(np.percentile(arr, 50)), 3), "p95_ms": round(float(np.percentile(arr, 95)), 3),
            "mean_ms": round(float(arr.mean()), 3), "n": len(times)}


def timed(fn):
    """(result, seconds, RSS growth MiB) of fn()."""
    before, t = rss_mb(), time.perf_counter()
    result = fn()
    return result, round(time.perf_counter() - t, 3), round(rss_mb() - before, 1)


def bundled_queries() -> list[str]:
    return [json.loads(line)["query"] for f in sorted(glob.glob(str(REPO / "data/queries/*.jsonl")))
            for line in open(f, encoding="utf-8")]


def bench_bundled(queries: list[str], embedder: MiniLmOnnxEmbedder) -> dict:
    """All backends over the bundled corpus, indexes built in memory (no disk cache)."""
    docs = load_corpus(sorted(glob.glob(str(REPO / "data/corpus/*.jsonl"))))
    bm25, t_bm25, m_bm25 = timed(lambda: Retriever(docs, RetrievalConfig(embedder=None, index_dir=None)))
    hybrid, t_dense, m_dense = timed(
        lambda: Retriever(docs, RetrievalConfig(index_dir=None), embedder=embedder))
    ref = RankBm25Backend([tokenize(c.text) for c in bm25.chunks])
    return {
        "documents": len(docs), "chunks": len(bm25.chunks),
        "build_s": {"bm25s": t_bm25, "bm25+dense (embedding dominates)": t_dense},
        "rss_growth_mb": {"bm25s": m_bm25, "bm25+dense": m_dense},
        "query": {
            "bm25 (bm25s)": latency(lambda q: bm25.search(q, 10, "bm25"), queries),
            "bm25 (rank-bm25 reference)": latency(lambda q: ref.scores(tokenize(q)), queries),
            "dense (embed query + faiss)": latency(lambda q: hybrid.search(q, 10, "dense"), queries),
            "hybrid (rrf k=60)": latency(lambda q: hybrid.search(q, 10, "hybrid"), queries),
        },
    }


def synthetic_docs(n: int, vocab: list[str], rng: np.random.Generator, words: int = 80) -> list[CorpusDoc]:
    """n documents of `words` tokens drawn from a Zipf-like distribution over `vocab`."""
    ranks = np.arange(1, len(vocab) + 1)
    probs = (1 / ranks) / (1 / ranks).sum()
    ids = rng.choice(len(vocab), size=(n, words), p=probs)
    arr = np.array(vocab, dtype=object)
    return [CorpusDoc(doc_id=f"s{i}", domain="synthetic", title=f"Record {i}", text=" ".join(arr[row]))
            for i, row in enumerate(ids)]


def bench_synthetic(n: int, sample: int, queries: list[str], embedder: MiniLmOnnxEmbedder, seed: int) -> dict:
    """BM25 for real at n documents; dense throughput on a subsample; faiss latency on n random vectors."""
    import faiss

    rng = np.random.default_rng(seed)
    base = load_corpus(sorted(glob.glob(str(REPO / "data/corpus/*.jsonl"))))
    vocab = sorted({t for d in base for t in tokenize(d.plain)})
    vocab += [f"term{i}" for i in range(20000)]
    rng.shuffle(vocab)
    docs, t_gen, _ = timed(lambda: synthetic_docs(n, vocab, rng))
    bm25, t_bm25, m_bm25 = timed(lambda: Retriever(docs, RetrievalConfig(embedder=None, index_dir=None)))
    texts = [d.text for d in docs[:sample]]
    _, t_embed, _ = timed(lambda: embedder.embed(texts))
    per_s = sample / t_embed
    vectors = rng.standard_normal((n, embedder.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index, t_faiss, m_faiss = timed(lambda v=vectors: _flat_index(faiss, v))
    del vectors
    chunk_ids = bm25.chunks.doc_ids

    def dense(q: str) -> dict[str, float]:
        sims, ids = index.search(embedder.embed([q]), 40)
        return {chunk_ids[i]: float(s) for s, i in zip(sims[0], ids[0], strict=True) if i >= 0}

    def hybrid(q: str) -> list[str]:
        return ranked(rrf([ranked(bm25.bm25_scores(q, 40)), ranked(dense(q))], 60))[:10]

    return {
        "documents": n, "chunks": len(bm25.chunks), "generate_s": t_gen,
        "build_s": {"bm25s": t_bm25, "faiss IndexFlatIP add (random unit vectors)": t_faiss,
                    f"dense embedding, measured on {sample} docs": t_embed,
                    f"dense embedding, extrapolated to {n} docs": round(n / per_s, 1)},
        "embedding_docs_per_s": round(per_s, 1),
        "rss_growth_mb": {"bm25s": m_bm25, "faiss flat index": m_faiss},
        "query": {
            "bm25 (bm25s)": latency(lambda q: bm25.search(q, 10, "bm25"), queries),
            "dense (embed query + faiss over random vectors)": latency(dense, queries),
            "hybrid (bm25 + dense + rrf)": latency(hybrid, queries),
        },
    }


def _flat_index(faiss, vectors: np.ndarray):
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index


def print_section(name: str, result: dict) -> None:
    print(f"\n== {name}: {result['documents']} documents, {result['chunks']} chunks")
    for label, value in result["build_s"].items():
        print(f"  build  {label:<48} {value:>10} s")
    for label, value in result["rss_growth_mb"].items():
        print(f"  memory {label:<48} {value:>10} MiB RSS growth")
    for label, stats in result["query"].items():
        print(f"  query  {label:<48} p50 {stats['p50_ms']:>8} ms  p95 {stats['p95_ms']:>8} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=180_000)
    parser.add_argument("--dense-sample", type=int, default=300)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    queries = bundled_queries()[: args.queries]
    embedder = MiniLmOnnxEmbedder()
    results = {"bundled": bench_bundled(queries, embedder)}
    print_section("bundled corpus", results["bundled"])
    results["synthetic"] = bench_synthetic(args.docs, args.dense_sample, queries, embedder, args.seed)
    print_section("synthetic corpus", results["synthetic"])
    print(f"\n  embedding throughput {results['synthetic']['embedding_docs_per_s']} docs/s;"
          f" peak RSS {peak_rss_mb():.0f} MiB")
    results["peak_rss_mb"] = round(peak_rss_mb(), 1)
    results["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    print(f"  load average during run (2 shared cores): {results['load_average_1_5_15']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
