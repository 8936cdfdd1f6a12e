"""Filtered retrieval at the RAGStress paper scale: the 700-question selection x its condition filters, top-5, over
the 182,546-entry knowledge base of every MMLU test question, against the issue's targets, one run.

Each variant runs in its own subprocess: it loads the knowledge base (var/bench/ragstress_kb_all.jsonl, written by
bench_bm25_build.py's ensure_kb), builds the BM25 index (core.protocols.kb_corruption.builder.retrieval_config without an
embedder), resets the kernel's peak-RSS mark, then retrieves exactly as build_ragstress does (`retrieve` with each
question's `applicable_conditions`, 14 filters; the 15th condition, no retrieval, retrieves nothing) and measures
wall and CPU seconds, peak RSS above the built index and RSS kept.
  bm25          - this tree, BM25 (each filter's sub-index of chunk numbers cached, scored once per question).
  hybrid        - this tree, BM25 + dense fused by RRF: the real MiniLM (int8 ONNX) query embedder, and a faiss flat
                  index of 182,546 random unit vectors of dimension 384 standing in for the embedded entries
                  (embedding them takes tens of minutes here; a flat inner-product search costs the same whatever
                  the vectors hold), so its cost is real and its rankings are not meaningful.
  main-bm25, main-hybrid - (with --main REV) the same from git revision REV, the before figures; main-bm25 is also
                  the reference for the check that every (question, filter) top-5 is the same.
Reference: the issue's targets, 120 s wall and 1,024 MB above the index for the 700 x 15 conditions.

Run:  PYTHONPATH=$PWD .venv/bin/python bench/bench_ragstress_filtered.py [--main 1c78587] [--questions 700]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bm25_build import KB, ROOT, SELECTION, ensure_kb, export_revision, peak_kb, reset_peak, rss_kb

TARGET_WALL_S, TARGET_MEMORY_MB = 120.0, 1024.0


def run_retrievals(retriever, questions, kb, mode: str) -> dict[str, list[list[str]]]:
    """{question id: every applicable condition's top-5 ids, in condition order}, as build_ragstress retrieves."""
    try:
        from core.protocols.kb_corruption.builder import applicable_conditions, retrieve
    except ImportError:  # a --main revision from before the protocol packages
        from core.construction.ragstress import applicable_conditions, retrieve  # type: ignore[no-redef]
    try:
        from core.protocols.kb_corruption import TOP_K
    except ImportError:
        from core.protocols.ragstress import TOP_K  # type: ignore[no-redef]

    out = {}
    for q in questions:
        conditions = applicable_conditions(q, kb)
        hits = retrieve(retriever, q, conditions, TOP_K, mode)
        out[q.qid] = [[h.doc_id for h in hits[c]] for c in conditions]
    return out


def attach_random_dense(retriever, seed: int = 0) -> None:
    """The real MiniLM query embedder and a flat index of random unit vectors, one per chunk (see the docstring)."""
    import faiss
    import numpy as np

    from core.construction.embedders import MiniLmOnnxEmbedder

    retriever.embedder = MiniLmOnnxEmbedder()
    index = faiss.IndexFlatIP(retriever.embedder.dim)
    rng = np.random.default_rng(seed)
    for start in range(0, len(retriever.chunks), 16_384):
        block = rng.standard_normal((min(16_384, len(retriever.chunks) - start), index.d), dtype=np.float32)
        index.add(block / np.linalg.norm(block, axis=1, keepdims=True))
    retriever.dense = index


def child(kb_path: Path, n_questions: int, mode: str) -> dict:
    """Build the index, then measure the filtered retrievals in this (fresh) process."""
    from core.construction.corpus import load_corpus
    try:
        from core.protocols.kb_corruption.builder import load_questions, retrieval_config
    except ImportError:  # a --main revision from before the protocol packages
        from core.construction.ragstress import load_questions, retrieval_config  # type: ignore[no-redef]
    from core.construction.retrieval import Retriever

    docs = load_corpus(kb_path)
    kb = {d.doc_id: d for d in docs}
    questions = load_questions(SELECTION)[:n_questions]
    retriever = Retriever(docs, retrieval_config(None, None))
    if mode == "hybrid":
        attach_random_dense(retriever)
    gc.collect()
    base = rss_kb()
    reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    top5 = run_retrievals(retriever, questions, kb, mode)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = peak_kb() - base
    retained = rss_kb() - base
    return {"documents": len(docs), "questions": len(questions), "retrievals": sum(map(len, top5.values())),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_above_index_mb": round(peak / 1024, 1),
            "retained_mb": round(retained / 1024, 1), "top5": top5}


def run_child(pythonpath: Path, mode: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--kb", str(args.kb), "--questions", str(args.questions)]
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        sys.exit(f"child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--main", default=None, help="git revision to measure as 'before' (e.g. 1c78587)")
    parser.add_argument("--questions", type=int, default=700)
    parser.add_argument("--kb", type=Path, default=KB)
    parser.add_argument("--modes", default="bm25,hybrid")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.kb, args.questions, args.child)))
        return
    sys.path.insert(0, str(ROOT))
    ensure_kb(args.kb)
    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"": ROOT, "main-": export_revision(args.main, Path(tmp))} if args.main else {"": ROOT}
        for mode in args.modes.split(","):
            for prefix, tree in trees.items():
                runs[prefix + mode] = run_child(tree, mode, args)
                print(json.dumps({prefix + mode: {k: v for k, v in runs[prefix + mode].items() if k != "top5"}}),
                      flush=True)
    keys = ("wall_s", "cpu_s", "peak_above_index_mb", "retained_mb")
    result: dict = {name: {k: r[k] for k in ("documents", "questions", "retrievals", *keys)} for name, r in runs.items()}
    result["reference_targets"] = {"wall_s": TARGET_WALL_S, "peak_above_index_mb": TARGET_MEMORY_MB}
    result["ratio_to_target"] = {name: {"wall_s": round(r["wall_s"] / TARGET_WALL_S, 3),
                                        "peak_above_index_mb": round(r["peak_above_index_mb"] / TARGET_MEMORY_MB, 3)}
                                 for name, r in runs.items()}
    if "bm25" in runs and "main-bm25" in runs:
        same = sum(a == runs["main-bm25"]["top5"][q] for q, a in runs["bm25"]["top5"].items())
        result["bm25_top5_same_as_main"] = {"questions": len(runs["bm25"]["top5"]), "identical_all_filters": same}
    result["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
