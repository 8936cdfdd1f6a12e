"""Filtered retrieval at the RAGStress paper scale: the 700-question selection x its condition filters, top-5, over
the 182,546-entry knowledge base of every MMLU test question, against the issue's targets, one run.

Each variant runs in its own subprocess: it loads the knowledge base (var/bench/ragstress_kb_all.jsonl, written by
bench_bm25_build.py's ensure_kb), builds the BM25 index (core.construction.ragstress.retrieval_config without an
embedder), resets the kernel's peak-RSS mark, then retrieves exactly as build_ragstress does (`retrieve` with each
question's `applicable_conditions`) and measures wall and CPU seconds, peak RSS above the built index and RSS kept.
  product - this tree (`retrieve_many`: the filters' chunk masks built once, queries scored in batches).
  main    - (with --main REV) the same from git revision REV (`retrieve` per question), for the before figures and
            the check that every (question, filter) top-5 is the same.
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


def run_retrievals(retriever, questions, kb) -> dict[str, list[list[str]]]:
    """{question id: every applicable condition's top-5 ids, in condition order}, the product's batched path when
    this tree has it, else one question at a time."""
    from core.construction import ragstress
    from core.protocols.ragstress import TOP_K

    conditions = [ragstress.applicable_conditions(q, kb) for q in questions]
    if hasattr(ragstress, "retrieve_many"):
        results = ragstress.retrieve_many(retriever, questions, conditions, TOP_K, "bm25")
    else:
        results = [ragstress.retrieve(retriever, q, c, TOP_K, "bm25") for q, c in zip(questions, conditions, strict=True)]
    return {q.qid: [[h.doc_id for h in hits[c]] for c in cs] for q, cs, hits in zip(questions, conditions, results, strict=True)}


def child(kb_path: Path, n_questions: int) -> dict:
    """Build the index, then measure the filtered retrievals in this (fresh) process."""
    from core.construction.corpus import load_corpus
    from core.construction.ragstress import load_questions, retrieval_config
    from core.construction.retrieval import Retriever

    docs = load_corpus(kb_path)
    kb = {d.doc_id: d for d in docs}
    questions = load_questions(SELECTION)[:n_questions]
    retriever = Retriever(docs, retrieval_config(None, None))
    gc.collect()
    base = rss_kb()
    reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    top5 = run_retrievals(retriever, questions, kb)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = peak_kb() - base
    retained = rss_kb() - base
    return {"documents": len(docs), "questions": len(questions), "retrievals": sum(map(len, top5.values())),
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_above_index_mb": round(peak / 1024, 1),
            "retained_mb": round(retained / 1024, 1), "top5": top5}


def run_child(pythonpath: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", "--kb", str(args.kb), "--questions", str(args.questions)]
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
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.kb, args.questions)))
        return
    sys.path.insert(0, str(ROOT))
    ensure_kb(args.kb)
    runs = {"product": run_child(ROOT, args)}
    with tempfile.TemporaryDirectory() as tmp:
        if args.main:
            runs["main"] = run_child(export_revision(args.main, Path(tmp)), args)
    keys = ("wall_s", "cpu_s", "peak_above_index_mb", "retained_mb")
    result: dict = {name: {k: r[k] for k in ("documents", "questions", "retrievals", *keys)} for name, r in runs.items()}
    result["reference_targets"] = {"wall_s": TARGET_WALL_S, "peak_above_index_mb": TARGET_MEMORY_MB}
    product = runs["product"]
    result["ratio_product_to_target"] = {"wall_s": round(product["wall_s"] / TARGET_WALL_S, 3),
                                         "peak_above_index_mb": round(product["peak_above_index_mb"] / TARGET_MEMORY_MB,
                                                                      3)}
    if "main" in runs:
        same = sum(a == runs["main"]["top5"][q] for q, a in product["top5"].items())
        result["top5_same_as_main"] = {"questions": len(product["top5"]), "identical": same}
    result["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
