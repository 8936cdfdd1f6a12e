"""BM25 build at the RAGStress paper scale: the product's index build against bm25s's own, memory and time, one run.

The corpus is the RAGStress knowledge base of all 14,042 MMLU test questions (182,546 entries; generated once into
var/bench/ragstress_kb_all.jsonl from ../shared/datasets/mmlu). Every variant runs in its own subprocess that first
loads the documents, then resets the kernel's peak-RSS mark (/proc/self/clear_refs) and measures:
  build wall and CPU seconds, peak RSS above the loaded documents (VmHWM) and RSS retained after the build (gc run).
Variants:
  product  - Retriever(docs, BM25 only) of this tree: chunk table, streamed term counts, the bm25s score matrix.
  bm25s    - the reference: bm25s alone on the same texts (title. text), its own tokenizer (bm25s.tokenize, English
             stopwords) and BM25(method="robertson").index, nothing else kept.
  main     - (with --main REV) the same Retriever from git revision REV, exported to a temporary folder: the "before"
             figures and the reference for the top-5 equivalence check.
The product and main variants also answer --queries queries (question + options of a seeded sample of the
700-question selection) with top-5 BM25 search, unfiltered and under one seeded condition filter; the run reports
whether every top-5 list (ids and order) is the same.

Run:  PYTHONPATH=$PWD .venv/bin/python bench/bench_bm25_build.py [--main 1c78587] [--queries 200] [--repeat 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MMLU = ROOT.parent / "shared" / "datasets" / "mmlu"
KB = ROOT / "var" / "bench" / "ragstress_kb_all.jsonl"
SELECTION = MMLU / "ragstress_eval700_stratified_seed42.jsonl"


def rss_kb() -> int:
    """Current resident set size in KiB."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_kb() -> int:
    """Peak resident set size since the last reset_peak, in KiB."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1])


def ensure_kb(path: Path) -> None:
    """Write the 182,546-entry knowledge base of every MMLU test question once."""
    if path.exists():
        return
    try:
        from core.protocols.kb_corruption.builder import build_knowledge_base, load_questions
    except ImportError:  # a --main revision from before the protocol packages
        from core.construction.ragstress import build_knowledge_base, load_questions  # type: ignore[no-redef]

    records = build_knowledge_base(load_questions(MMLU / "test"), seed=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")  # ASCII: load_corpus splits lines on U+2028 too


def build_product():
    try:
        from core.protocols.kb_corruption.builder import retrieval_config
    except ImportError:  # a --main revision from before the protocol packages
        from core.construction.ragstress import retrieval_config  # type: ignore[no-redef]
    from core.construction.retrieval import Retriever

    return lambda docs: Retriever(docs, retrieval_config(None, None))


def build_bm25s():
    import bm25s

    def build(docs):
        tokens = bm25s.tokenize([f"{d.title}. {d.text}" for d in docs], stopwords="en", show_progress=False)
        model = bm25s.BM25(method="robertson")
        model.index(tokens, show_progress=False)
        return model

    return build


def top5(retriever, n_queries: int, seed: int) -> list[list[list[str]]]:
    """Top-5 BM25 ids of the sampled queries, unfiltered and under one seeded condition filter each."""
    try:
        from core.protocols.kb_corruption.builder import load_questions, query_text
    except ImportError:  # a --main revision from before the protocol packages
        from core.construction.ragstress import load_questions, query_text  # type: ignore[no-redef]
    try:
        from core.protocols.kb_corruption import RETRIEVAL_FILTERS
    except ImportError:
        from core.protocols.ragstress import RETRIEVAL_FILTERS  # type: ignore[no-redef]

    rng = random.Random(seed)
    questions = rng.sample(load_questions(SELECTION), n_queries)
    names = sorted(RETRIEVAL_FILTERS)
    out = []
    for q in questions:
        where = RETRIEVAL_FILTERS[rng.choice(names)]
        out.append([[h.doc_id for h in retriever.search(query_text(q), 5, "bm25")],
                    [h.doc_id for h in retriever.search(query_text(q), 5, "bm25", where=where)]])
    return out


def child(variant: str, kb: Path, n_queries: int, seed: int) -> dict:
    """Measure one variant in this (fresh) process."""
    from core.construction.corpus import load_corpus

    docs = load_corpus(kb)
    build = build_bm25s() if variant == "bm25s" else build_product()
    gc.collect()
    base = rss_kb()
    reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    index = build(docs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = peak_kb() - base
    gc.collect()
    retained = rss_kb() - base
    result = {"variant": variant, "documents": len(docs), "build_wall_s": round(wall, 2), "build_cpu_s": round(cpu, 2),
              "peak_mb": round(peak / 1024, 1), "retained_mb": round(retained / 1024, 1)}
    if variant != "bm25s" and n_queries:
        result["top5"] = top5(index, n_queries, seed)
    return result


def export_revision(rev: str, into: Path) -> Path:
    """The core/ package of git revision `rev`, extracted under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "core"], check=True, capture_output=True).stdout
    tar = into / "core.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as fh:
        fh.extractall(into, filter="data")
    return into


def run_child(variant: str, pythonpath: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", variant, "--kb", str(args.kb), "--queries", str(args.queries),
           "--seed", str(args.seed)]
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def report(runs: dict[str, list[dict]]) -> dict:
    """Median figures per variant, product / bm25s ratios and the top-5 equivalence."""
    keys = ("build_wall_s", "build_cpu_s", "peak_mb", "retained_mb")
    table = {v: {k: median([r[k] for r in rs]) for k in keys} for v, rs in runs.items()}
    out: dict = {"documents": runs["product"][0]["documents"], "runs_per_variant": len(runs["product"]),
                 "median": table, "ratio_product_to_bm25s": {k: round(table["product"][k] / table["bm25s"][k], 2)
                                                             for k in keys}}
    if "main" in runs:
        out["ratio_main_to_bm25s"] = {k: round(table["main"][k] / table["bm25s"][k], 2) for k in keys}
        if "top5" in runs["main"][0]:
            new, old = runs["product"][0]["top5"], runs["main"][0]["top5"]
            out["top5_same_as_main"] = {"queries": len(new), "unfiltered": sum(a[0] == b[0] for a, b in zip(new, old, strict=True)),
                                        "filtered": sum(a[1] == b[1] for a, b in zip(new, old, strict=True))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--main", default=None, help="git revision to measure as 'before' (e.g. 1c78587)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kb", type=Path, default=KB)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.kb, args.queries, args.seed)))
        return
    sys.path.insert(0, str(ROOT))
    ensure_kb(args.kb)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"product": ROOT, "bm25s": ROOT}
        if args.main:
            paths["main"] = export_revision(args.main, Path(tmp))
        runs: dict[str, list[dict]] = {v: [] for v in paths}
        for _ in range(args.repeat):  # interleaved: product, bm25s, main, product, ...
            for variant, path in paths.items():
                runs[variant].append(run_child(variant, path, args))
                print(json.dumps({k: v for k, v in runs[variant][-1].items() if k != "top5"}), flush=True)
    result = report(runs)
    result["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    result["cpus"] = os.cpu_count()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
