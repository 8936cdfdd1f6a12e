"""RAGStress retrieval at the paper's scale: the knowledge base of all 14,042 MMLU test questions (182,546 entries),
one BM25 index, metadata-filtered top-5; dense retrieval measured on the 9,100-entry knowledge base of the 700-question
selection, and its cost at 182,546 entries extrapolated from a measured slice (stated as such in the output).

  full     - every test question: knowledge-base generation time, BM25 (bm25s) build time and memory (RSS growth and
             peak), filtered top-5 latency per (query, filter) and per query over all 14 filters at once, and what the
             filters returned on the sampled queries (no-retrieval rate, own entry first, corrupted share).
  dense    - the 700-question knowledge base embedded for real with the offline MiniLM (int8 ONNX) embedder: embedding
             time, hybrid (BM25 + dense, RRF) filtered top-5 latency; then a random slice of the 182,546 entries is
             embedded and the full embedding time extrapolated from its throughput; the filtered dense search cost at
             182,546 entries is measured over random unit vectors of the same shape (flat inner product costs the
             same whatever the vectors hold).

Run:  .venv/bin/python bench/bench_ragstress.py [--queries 200] [--dense-docs 9100] [--slice 1000] [--skip-dense]
      (one JSON object per section on stdout)
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_retrieval import peak_mb, timed

from core.construction.corpus import doc_from_record
from core.construction.embedders import MiniLmOnnxEmbedder
from core.construction.retrieval import Retriever, top_chunks
from core.protocols.kb_corruption import RETRIEVAL_FILTERS, TOP_K, condition_profile
from core.protocols.kb_corruption.builder import (
    applicable_conditions,
    build_knowledge_base,
    load_questions,
    query_text,
    retrieval_config,
    retrieval_record,
)

MMLU = ROOT.parent / "shared" / "datasets" / "mmlu"


def percentiles(times_s: list[float]) -> dict[str, float]:
    arr = np.array(times_s) * 1000
    return {"p50_ms": round(float(np.percentile(arr, 50)), 2), "p95_ms": round(float(np.percentile(arr, 95)), 2),
            "n": len(times_s)}


def latency(calls: list) -> dict[str, float]:
    """p50/p95 of each zero-argument call (one warm-up first)."""
    calls[0]()
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return percentiles(times)


def warm_masks(retriever: Retriever) -> float:
    """Seconds to build (and cache) the chunk mask of every filter."""
    start = time.perf_counter()
    for where in RETRIEVAL_FILTERS.values():
        retriever.chunk_mask(where)
    return round(time.perf_counter() - start, 2)


def bench_full(n_queries: int, seed: int) -> dict:
    """BM25 over the knowledge base of every MMLU test question."""
    questions, t_load, _ = timed(lambda: load_questions(MMLU / "test"))
    records, t_gen, m_gen = timed(lambda: build_knowledge_base(questions, seed=0))
    docs = [doc_from_record(r) for r in records]
    kb = {d.doc_id: d for d in docs}
    retriever, t_bm25, m_bm25 = timed(lambda: Retriever(docs, retrieval_config(None, None)))
    t_masks = warm_masks(retriever)
    rng = random.Random(seed)
    sample = rng.sample(questions, n_queries)
    pairs = [(q, rng.choice(applicable_conditions(q, kb))) for q in sample]
    single = latency([lambda q=q, c=c: retriever.search(query_text(q), TOP_K, "bm25", where=RETRIEVAL_FILTERS[c])
                      for q, c in pairs])
    batched = latency([lambda q=q: retriever.search_filtered(
        query_text(q), {c: RETRIEVAL_FILTERS[c] for c in applicable_conditions(q, kb)}, TOP_K, "bm25")
        for q in sample])
    profile = condition_profile(
        {c: retrieval_record(q, hits, kb) for c, hits in retriever.search_filtered(
            query_text(q), {c: RETRIEVAL_FILTERS[c] for c in applicable_conditions(q, kb)}, TOP_K, "bm25").items()}
        for q in sample)
    return {"questions": len(questions), "documents": len(docs), "retrievable": sum(r["applicable"] for r in records),
            "load_questions_s": t_load, "generate_kb_s": t_gen, "generate_kb_rss_growth_mb": m_gen,
            "bm25_build_s": t_bm25, "bm25_rss_growth_mb": m_bm25, "filter_masks_s": t_masks,
            "filtered_top5_one_filter": single, "filtered_top5_all_filters_per_query": batched,
            "profile_on_sampled_queries": profile, "peak_rss_mb": round(peak_mb(), 1)}


def bench_dense(dense_docs: int, slice_size: int, n_queries: int, seed: int) -> dict:
    """Dense + hybrid on the 700-question knowledge base; 182k embedding time extrapolated from a measured slice."""
    embedder = MiniLmOnnxEmbedder()
    questions = load_questions(MMLU / "ragstress_eval700_stratified_seed42.jsonl")
    records = build_knowledge_base(questions, seed=0)[:dense_docs]
    docs = [doc_from_record(r) for r in records]
    kb = {d.doc_id: d for d in docs}
    retriever, t_build, m_build = timed(lambda: Retriever(docs, retrieval_config("minilm-onnx", None),
                                                          embedder=embedder))
    warm_masks(retriever)
    rng = random.Random(seed)
    sample = [q for q in rng.sample(questions, min(n_queries, len(questions))) if f"{q.qid}#clean" in kb]
    pairs = [(q, rng.choice(applicable_conditions(q, kb))) for q in sample]
    hybrid = latency([lambda q=q, c=c: retriever.search(query_text(q), TOP_K, "hybrid", where=RETRIEVAL_FILTERS[c])
                      for q, c in pairs])
    all_questions = load_questions(MMLU / "test")
    picked = random.Random(seed).sample(all_questions, max(1, slice_size // 13))
    slice_texts = [f"{r['title']}. {r['text']}" for r in build_knowledge_base(picked, seed=0)][:slice_size]
    _, t_slice, _ = timed(lambda: embedder.embed(slice_texts))
    per_s = len(slice_texts) / t_slice
    n_full = 14_042 * 13
    vectors = np.random.default_rng(seed).standard_normal((n_full, embedder.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    doc_ids = [str(i) for i in range(n_full)]
    mask = np.zeros(n_full, dtype=bool)
    mask[::13] = True  # one variant in 13: the size of a type x severity filter
    queries = embedder.embed([query_text(q) for q in sample[:50]])
    dense_182k = latency([lambda v=v: top_chunks(doc_ids, vectors @ v, mask, max(4 * TOP_K, 50)) for v in queries])
    return {"documents": len(docs), "embedding_and_index_s": t_build, "rss_growth_mb": m_build,
            "embedding_docs_per_s_9100": round(len(docs) / t_build, 1),
            "hybrid_filtered_top5": hybrid,
            "slice_documents": len(slice_texts), "slice_embedding_s": t_slice, "slice_docs_per_s": round(per_s, 1),
            "extrapolated_embedding_s_182546": round(n_full / per_s), "extrapolated_note":
                f"182,546-entry embedding time EXTRAPOLATED from a measured slice of {len(slice_texts)} entries",
            "dense_filtered_search_182546_random_vectors": dense_182k, "peak_rss_mb": round(peak_mb(), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dense-docs", type=int, default=9_100)
    parser.add_argument("--slice", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-dense", action="store_true")
    args = parser.parse_args()
    if not (MMLU / "test").is_dir():
        sys.exit(f"shared MMLU data not found at {MMLU}")
    sections = {"full": lambda: bench_full(args.queries, args.seed)}
    if not args.skip_dense:
        sections["dense"] = lambda: bench_dense(args.dense_docs, args.slice, args.queries, args.seed)
    for name, measure in sections.items():
        print(json.dumps({name: measure()}, indent=2), flush=True)
    machine = {"cpus": os.cpu_count(), "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps({"machine": machine}), flush=True)

if __name__ == "__main__":
    main()
