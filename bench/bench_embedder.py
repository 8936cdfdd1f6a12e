"""Dense embedder benchmark: documents/s per core, fp32 (the shipped graph as loaded before) vs int8 products.

Three parts, all on one thread (intra-op threads = 1) and timed by CPU time (time.process_time, the whole
process), fp32 and int8 interleaved, best of --reps:
  throughput - documents/s at fixed token lengths (16, 64, 128, 256) for each batch size, on real corpus text
               (token windows of the bundled corpus, [CLS] ... [SEP], no padding inside a batch);
  batching   - embed() over every chunk of the bundled corpus (360 chunks of 35-138 tokens): fp32 in batches of
               32 (the old default), the defaults, and int8 with length-sorted calls of at most --budgets tokens;
  quality    - recall@10 and MRR@10 of dense and hybrid retrieval on the bundled corpus and its 72 queries with
               supporting documents, fp32 vs int8 (one text per call, and batched), and the cosine of every
               chunk's int8 vector to its fp32 vector.

Run:  .venv/bin/python bench/bench_embedder.py [--reps 2] [--docs 64] [--json var/bench/embedder.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tokenizers import Tokenizer

from core.construction.corpus import load_corpus
from core.construction.embedders import BATCH_TOKENS, TOKENIZER_PATH, MiniLmOnnxEmbedder
from core.construction.retrieval import (
    RetrievalConfig,
    Retriever,
    load_labelled_queries,
    retrieval_quality,
)

REPO = Path(__file__).resolve().parents[1]
LENGTHS = (16, 64, 128, 256)
BATCHES = (1, 2, 4, 8, 16, 32, 64)
CLS, SEP = 101, 102


def corpus_windows(docs, length: int, count: int) -> list[list[int]]:
    """`count` token sequences of exactly `length` ids ([CLS] + a window of corpus text + [SEP])."""
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    stream = tokenizer.encode(" ".join(d.text for d in docs), add_special_tokens=False).ids
    step = (len(stream) - length) // count
    return [[CLS, *stream[i * step : i * step + length - 2], SEP] for i in range(count)]


def cpu_seconds(fn) -> float:
    """CPU seconds of the whole process spent in fn()."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def best_of(reps: int, variants: dict[str, callable]) -> dict[str, float]:
    """Interleaved runs of every variant, `reps` rounds; the least CPU seconds of each."""
    best = {name: float("inf") for name in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            best[name] = min(best[name], cpu_seconds(fn))
    return best


def throughput(embedders: dict[str, MiniLmOnnxEmbedder], docs, n_docs: int, reps: int) -> list[dict]:
    """Documents/s per variant for every (token length, batch size)."""
    rows = []
    for length in LENGTHS:
        seqs = corpus_windows(docs, length, n_docs)
        for size in BATCHES:
            def run(e, seqs=seqs, size=size):
                return [e._run(seqs[i : i + size]) for i in range(0, len(seqs), size)]
            best = best_of(reps, {name: (lambda e=e: run(e)) for name, e in embedders.items()})
            rows.append({"tokens": length, "batch": size, **{name: round(n_docs / s, 1) for name, s in best.items()}})
            print(f"  {length:>4} tokens  batch {size:>3}  " + "  ".join(
                f"{name} {rows[-1][name]:>7} docs/s" for name in embedders), flush=True)
    return rows


def batching(texts: list[str], reps: int, budgets: list[int]) -> dict[str, float]:
    """Documents/s of embed() over the corpus chunks: the old fp32 setting, the defaults, int8 at each token budget."""
    unlimited = 1 << 30
    variants = {"before: fp32, 32 per batch": MiniLmOnnxEmbedder(precision="fp32", batch_size=32,
                                                                 batch_tokens=unlimited),
                f"fp32 default, <= {BATCH_TOKENS} padded tokens": MiniLmOnnxEmbedder(precision="fp32"),
                "int8 default, one text per call": MiniLmOnnxEmbedder(precision="int8")}
    variants |= {f"int8, <= {b} padded tokens": MiniLmOnnxEmbedder(batch_size=unlimited, batch_tokens=b)
                 for b in budgets}
    best = best_of(reps, {name: (lambda e=e: e.embed(texts)) for name, e in variants.items()})
    return {name: round(len(texts) / s, 1) for name, s in best.items()}


def quality(docs, labelled, embedders: dict[str, MiniLmOnnxEmbedder]) -> dict:
    """Recall@10 / MRR@10 of dense and hybrid retrieval per embedder, and each embedder's cosine to fp32 per chunk."""
    out: dict = {}
    vectors = {}
    for name, embedder in embedders.items():
        retriever = Retriever(docs, RetrievalConfig(index_dir=None), embedder=embedder)
        vectors[name] = retriever.dense.reconstruct_n(0, retriever.dense.ntotal)
        for mode in ("dense", "hybrid"):
            found = retrieval_quality(retriever, labelled, mode)
            out[f"{mode} {name}"] = {key: round(100 * value, 2) for key, value in found.items()}
    for name in list(embedders)[1:]:
        cosines = (vectors["fp32"] * vectors[name]).sum(axis=1)
        out[f"chunk cosine to fp32, {name}"] = {"min": round(float(cosines.min()), 4),
                                                "mean": round(float(cosines.mean()), 4)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--docs", type=int, default=64, help="documents per throughput point")
    parser.add_argument("--budgets", default="128,256,512,1024,2048,4096")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    docs = load_corpus(sorted(glob.glob(str(REPO / "data/corpus/*.jsonl"))))
    labelled = load_labelled_queries(sorted(Path(p) for p in glob.glob(str(REPO / "data/queries/*.jsonl"))))
    embedders = {"fp32": MiniLmOnnxEmbedder(precision="fp32"), "int8": MiniLmOnnxEmbedder(precision="int8")}
    results: dict = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    print(f"== quality (bundled corpus, {len(labelled)} labelled queries)")
    results["quality"] = quality(docs, labelled, {
        **embedders, f"int8 <= {BATCH_TOKENS} tokens a call": MiniLmOnnxEmbedder(batch_size=1 << 30)})
    for name, value in results["quality"].items():
        print(f"  {name:<48} {value}")
    print("== embed() over the bundled corpus chunks, docs/s per core")
    texts = [c.text for c in Retriever(docs, RetrievalConfig(embedder=None, index_dir=None)).chunks]
    results["batching"] = batching(texts, args.reps, [int(b) for b in args.budgets.split(",")])
    for name, value in results["batching"].items():
        print(f"  {name:<48} {value:>7} docs/s")
    if not args.skip_throughput:
        print("== throughput at fixed token lengths, docs/s per core")
        results["throughput"] = throughput(embedders, docs, args.docs, args.reps)
        for length in LENGTHS:
            rows = [r for r in results["throughput"] if r["tokens"] == length]
            best = {name: max(rows, key=lambda r, n=name: r[n]) for name in embedders}
            print(f"  {length:>4} tokens: best " + ", ".join(
                f"{name} {best[name][name]} docs/s at batch {best[name]['batch']}" for name in embedders)
                + f"; int8/fp32 at best {best['int8']['int8'] / best['fp32']['fp32']:.2f}x")
            by_batch = {r["batch"]: r for r in rows}
            before, after = by_batch[32]["fp32"], by_batch[1]["int8"]
            print(f"        before (fp32, 32 per batch) {before} -> after (int8 default, 1 per call) {after} docs/s:"
                  f" {after / before:.2f}x")
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"  load average before/after (2 shared cores): {results['load_average_before']} / "
          f"{results['load_average_after']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
