"""Dense embedder benchmark: documents/s per core, fp32 (the shipped graph as loaded before) vs int8 products.

All parts run on one thread (intra-op threads = 1), pinned to one core (--cpu), timed by CPU time (time.process_time,
the whole process) with wall time beside it, variants interleaved, best of --reps:
  bound      - the product against this core's limit, in one run: the int8 embedder's documents/s on texts of exactly
               64 and 256 tokens (embed_ids with the product's default batching), and the bound from this core's
               measured matrix-multiply rates (onnxruntime MatMulInteger uint8 x int8 and fp32 MatMul, 2048 rows, at
               the model's weight shapes): 1 / (weight MACs / int8 rate + attention MACs / fp32 rate), attention
               (Q.K^T and P.V) being fp32 in this path; the stricter bound with every product at the int8 rate too;
  ragstress  - (--ragstress N) N entries of the 182,546-entry RAGStress knowledge base (all 14,042 MMLU test
               questions x 13 variants; random questions, all their variants) embedded with the defaults; the full
               base's dense indexing time EXTRAPOLATED from that slice's CPU and wall time;
  throughput - documents/s at fixed token lengths (16, 64, 128, 256) for each batch size, on real corpus text
               (token windows of the bundled corpus, [CLS] ... [SEP], no padding inside a batch);
  batching   - embed() over every chunk of the bundled corpus (360 chunks of 35-138 tokens): fp32 in batches of
               32 (the old default), the defaults, and int8 with length-sorted calls of at most --budgets tokens;
  quality    - recall@10 and MRR@10 of dense and hybrid retrieval on the bundled corpus and its 72 queries with
               supporting documents, fp32 vs int8 (batched, and one text per call), and the cosine of every
               chunk's int8 vector to its fp32 vector.

Run:  .venv/bin/python bench/bench_embedder.py [--cpu 1] [--reps 2] [--docs 64] [--only-bound] [--ragstress 2600]
                                              [--json var/bench/embedder.json]
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

import numpy as np
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
MMLU = REPO.parent / "shared" / "datasets" / "mmlu"
RAGSTRESS_ENTRIES = 182_546
BOUND_LENGTHS = (64, 256)
LAYERS, HIDDEN = 6, 384
WEIGHT_SHAPES = [(HIDDEN, HIDDEN)] * 4 + [(HIDDEN, 4 * HIDDEN), (4 * HIDDEN, HIDDEN)]  # Q, K, V, out; FFN in, out
GEMM_ROWS = 2048
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


def weight_macs(tokens: int) -> int:
    """Multiply-accumulates of the 36 weight products for one text of `tokens` tokens."""
    return tokens * LAYERS * sum(k * n for k, n in WEIGHT_SHAPES)


def attention_macs(tokens: int) -> int:
    """Multiply-accumulates of Q.K^T and P.V over all heads and layers for one text of `tokens` tokens."""
    return LAYERS * 2 * tokens * tokens * HIDDEN


def gemm_session(kind: str, k: int, n: int):
    """A one-node onnxruntime session (one thread) multiplying (GEMM_ROWS, k) activations by a constant (k, n) weight:
    kind "int8" is MatMulInteger uint8 x int8 -> int32, "fp32" is MatMul."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, (k, n), dtype=np.int8)
    if kind == "int8":
        types, op, feed = (TensorProto.UINT8, TensorProto.INT32), "MatMulInteger", rng.integers(0, 256, (GEMM_ROWS, k),
                                                                                               dtype=np.uint8)
    else:
        types, op, feed = (TensorProto.FLOAT, TensorProto.FLOAT), "MatMul", rng.standard_normal((GEMM_ROWS, k),
                                                                                               dtype=np.float32)
        weight = weight.astype(np.float32)
    graph = helper.make_graph([helper.make_node(op, ["a", "w"], ["y"])], "gemm",
                              [helper.make_tensor_value_info("a", types[0], [GEMM_ROWS, k])],
                              [helper.make_tensor_value_info("y", types[1], [GEMM_ROWS, n])],
                              [numpy_helper.from_array(weight, "w")])
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, {"a": feed})


def timed(fn) -> tuple[float, float]:
    """(CPU seconds of the whole process, wall seconds) of fn()."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def best_timed(reps: int, variants: dict[str, callable]) -> dict[str, tuple[float, float]]:
    """Interleaved runs of every variant, `reps` rounds; (CPU, wall) seconds of each one's least-CPU round."""
    best = {name: (float("inf"), float("inf")) for name in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            best[name] = min(best[name], timed(fn))
    return best


def bound(docs, n_docs: int, reps: int) -> dict:
    """The int8 embedder's documents/s at 64 and 256 tokens beside this core's bound, and their ratio."""
    embedder = MiniLmOnnxEmbedder(precision="int8")
    gemms = {kind: [gemm_session(kind, k, n) for k, n in WEIGHT_SHAPES] for kind in ("int8", "fp32")}
    seqs = {length: corpus_windows(docs, length, n_docs) for length in BOUND_LENGTHS}
    for run in (*(g for kind in gemms.values() for g in kind), *(lambda s=s: embedder.embed_ids(s)
                                                                 for s in seqs.values())):
        run()  # warm-up
    per_layer = GEMM_ROWS * sum(k * n for k, n in WEIGHT_SHAPES)
    variants = {f"gemm {kind}": (lambda runs=runs: [run() for run in runs]) for kind, runs in gemms.items()}
    variants |= {f"embed {length}": (lambda s=s: embedder.embed_ids(s)) for length, s in seqs.items()}
    best = best_timed(reps, variants)
    rate = {kind: per_layer / best[f"gemm {kind}"][0] for kind in gemms}
    out: dict = {"int8_gemm_gmac_per_cpu_s": round(rate["int8"] / 1e9, 1),
                 "fp32_gemm_gmac_per_cpu_s": round(rate["fp32"] / 1e9, 1), "lengths": {}}
    for length in BOUND_LENGTHS:
        cpu, wall = best[f"embed {length}"]
        limit = 1 / (weight_macs(length) / rate["int8"] + attention_macs(length) / rate["fp32"])
        strict = rate["int8"] / (weight_macs(length) + attention_macs(length))
        out["lengths"][length] = {"docs_per_cpu_s": round(n_docs / cpu, 1), "docs_per_wall_s": round(n_docs / wall, 1),
                                  "bound_docs_per_s": round(limit, 1), "ratio": round(n_docs / cpu / limit, 3),
                                  "strict_bound_docs_per_s": round(strict, 1),
                                  "strict_ratio": round(n_docs / cpu / strict, 3)}
    return out


def print_bound(found: dict) -> None:
    """Product, bound and ratio per token length."""
    print(f"  this core: int8 GEMM {found['int8_gemm_gmac_per_cpu_s']} GMAC/CPU-s (MatMulInteger u8 x s8), fp32 GEMM "
          f"{found['fp32_gemm_gmac_per_cpu_s']} GMAC/CPU-s")
    for length, row in found["lengths"].items():
        print(f"  {length:>4} tokens: int8 embedder {row['docs_per_cpu_s']:>6} docs/CPU-s ({row['docs_per_wall_s']} "
              f"docs/wall-s)  bound {row['bound_docs_per_s']:>6}  ratio {100 * row['ratio']:.0f}%   "
              f"(all products at the int8 rate: bound {row['strict_bound_docs_per_s']}, "
              f"ratio {100 * row['strict_ratio']:.0f}%)")


def ragstress_indexing(size: int, seed: int = 0) -> dict:
    """Dense indexing time of the 182,546-entry RAGStress base, EXTRAPOLATED from a measured slice of `size` entries."""
    import random

    try:
        from core.protocols.kb_corruption.builder import build_knowledge_base, load_questions
    except ImportError:  # a --main revision from before the protocol packages
        from core.construction.ragstress import build_knowledge_base, load_questions  # type: ignore[no-redef]

    questions = load_questions(MMLU / "test")
    picked = random.Random(seed).sample(questions, max(1, size // 13))
    texts = [f"{r['title']}. {r['text']}" for r in build_knowledge_base(picked, seed=0)][:size]
    embedder = MiniLmOnnxEmbedder()
    tokens = [len(e.ids) for e in embedder.tokenizer.encode_batch(texts)]
    cpu, wall = timed(lambda: embedder.embed(texts))
    scale = RAGSTRESS_ENTRIES / len(texts)
    return {"slice_entries": len(texts), "slice_questions": len(picked),
            "mean_tokens": round(float(np.mean(tokens)), 1),
            "slice_cpu_s": round(cpu, 2), "slice_wall_s": round(wall, 2), "docs_per_cpu_s": round(len(texts) / cpu, 1),
            "extrapolated_182546_cpu_min": round(cpu * scale / 60, 1),
            "extrapolated_182546_wall_min": round(wall * scale / 60, 1)}


def best_of(reps: int, variants: dict[str, callable]) -> dict[str, float]:
    """Interleaved runs of every variant, `reps` rounds; the least CPU seconds of each."""
    return {name: cpu for name, (cpu, _) in best_timed(reps, variants).items()}


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
                f"int8 default, one length a call, <= {BATCH_TOKENS} tokens": MiniLmOnnxEmbedder(precision="int8"),
                "int8, one text per call": MiniLmOnnxEmbedder(precision="int8", batch_size=1)}
    variants |= {f"int8, one length a call, <= {b} tokens": MiniLmOnnxEmbedder(batch_size=unlimited, batch_tokens=b)
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
    if "int8 one text per call" in vectors:
        out["int8 batched bit-identical to one text per call, every chunk"] = bool(
            np.array_equal(vectors["int8"], vectors["int8 one text per call"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--docs", type=int, default=64, help="documents per throughput point")
    parser.add_argument("--budgets", default="128,256,512,1024,2048,4096")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--only-bound", action="store_true", help="the bound part (and --ragstress) only")
    parser.add_argument("--ragstress", type=int, default=0, help="RAGStress entries to embed for the 182,546 estimate")
    parser.add_argument("--cpu", type=int, default=None, help="pin the process to this core")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    docs = load_corpus(sorted(glob.glob(str(REPO / "data/corpus/*.jsonl"))))
    labelled = load_labelled_queries(sorted(Path(p) for p in glob.glob(str(REPO / "data/queries/*.jsonl"))))
    embedders = {"fp32": MiniLmOnnxEmbedder(precision="fp32"), "int8": MiniLmOnnxEmbedder(precision="int8")}
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    results: dict = {"load_average_before": [round(x, 2) for x in os.getloadavg()],
                     "cpus": sorted(os.sched_getaffinity(0))}
    print(f"== int8 embedder against this core's bound (CPUs {results['cpus']}, one thread, {args.docs} texts per "
          f"length, best of {args.reps})")
    results["bound"] = bound(docs, args.docs, args.reps)
    print_bound(results["bound"])
    if args.ragstress:
        print(f"== RAGStress dense indexing, {args.ragstress} entries measured, 182,546 EXTRAPOLATED")
        results["ragstress"] = ragstress_indexing(args.ragstress)
        print("  " + ", ".join(f"{key} {value}" for key, value in results["ragstress"].items()))
    if args.only_bound:
        return finish(results, args.json)
    print(f"== quality (bundled corpus, {len(labelled)} labelled queries)")
    results["quality"] = quality(docs, labelled, {
        **embedders, "int8 one text per call": MiniLmOnnxEmbedder(batch_size=1)})
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
            before, after = by_batch[32]["fp32"], best["int8"]["int8"]
            print(f"        fp32, 32 per batch {before} -> int8 at its best batch {after} docs/s:"
                  f" {after / before:.2f}x")
    finish(results, args.json)


def finish(results: dict, path: Path | None) -> None:
    """Print the load average before and after; write the JSON if asked."""
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"  load average before/after (2 shared cores): {results['load_average_before']} / "
          f"{results['load_average_after']}")
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
