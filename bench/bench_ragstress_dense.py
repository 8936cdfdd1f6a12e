"""RAGStress's dense preset at the paper's scale, one run: the knowledge base of every MMLU test question (14,042
questions -> 182,546 entries), indexed by the preset (`retrieval_config(..., mode="dense")`: document-level chunks,
a faiss flat inner-product index, each condition searched by faiss's filtered nearest-neighbour search) with a
scripted embedder (core.testing.embedders.ScriptedEmbedder: a deterministic 384-dimension unit vector per text, the
bundled MiniLM's dimension, so the index and the searches cost what they would with real vectors while the embedding
itself costs nearly nothing), then the 700-question selection retrieved under its conditions (14 filters a question)
exactly as `build_ragstress` does.

Measured in this process: wall and CPU seconds of the knowledge base, the index build and the retrievals; peak
resident memory of this process (VmHWM, its own pages only: ru_maxrss would carry the peak of the parent that started
it, such as a pytest worker; core.testing.memory); the index's own bytes; and the embedding estimate printed before
the build starts (texts, tokens, cost at `--price` USD per million tokens: an example price, the user gives theirs).
Reference: the issue's limit, 2 GB of memory for the paper-scale build.

Run:  PYTHONPATH=$PWD .venv/bin/python bench/bench_ragstress_dense.py [--kb-questions N] [--questions 700]
      (--kb-questions N: a knowledge base of the selection's first N questions only, the smoke test's setting)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.construction.embedders import estimate_embedding  # noqa: E402
from core.construction.retrieval import Retriever  # noqa: E402
from core.protocols.kb_corruption import TOP_K  # noqa: E402
from core.protocols.kb_corruption.builder import (  # noqa: E402
    applicable_conditions,
    load_questions,
    retrieval_config,
    retrieve,
    write_knowledge_base,
)
from core.testing.embedders import ScriptedEmbedder  # noqa: E402
from core.testing.memory import peak_rss_mb  # noqa: E402

MMLU = ROOT.parent / "shared" / "datasets" / "mmlu"
SELECTION = MMLU / "ragstress_eval700_stratified_seed42.jsonl"
LIMIT_MB = 2048.0
EXAMPLE_PRICE = 0.02  # USD per million tokens, an example (a small hosted embedding model's list price)


def timed(step, *args):
    """(result, wall seconds, CPU seconds) of step(*args)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = step(*args)
    return out, round(time.perf_counter() - wall, 2), round(time.process_time() - cpu, 2)


def knowledge_base(kb_questions: int | None):
    """The knowledge base's documents and the questions it holds (all MMLU test questions, or the selection's first
    N)."""
    questions = load_questions(MMLU / "test") if kb_questions is None else load_questions(SELECTION)[:kb_questions]
    with tempfile.TemporaryDirectory() as tmp:  # streamed to disk as build_ragstress writes it
        docs, _, _ = write_knowledge_base(questions, Path(tmp) / "knowledge_base.jsonl", seed=0)
    return docs, questions


def run(kb_questions: int | None, n_questions: int, dim: int, price: float) -> dict:
    """Build and search as the dense preset does; every figure of the run."""
    (docs, kb_held), kb_wall, kb_cpu = timed(knowledge_base, kb_questions)
    kb = {d.doc_id: d for d in docs}
    estimate = estimate_embedding((d.text for d in docs), price)
    print(f"before the build: {estimate.text()}", file=sys.stderr, flush=True)
    embedder = ScriptedEmbedder(dim)
    config = retrieval_config("scripted", None, TOP_K, mode="dense")
    index, index_wall, index_cpu = timed(lambda: Retriever(docs, config, embedder=embedder))
    held = {q.qid for q in kb_held}
    questions = [q for q in load_questions(SELECTION) if q.qid in held][:n_questions]

    def search() -> int:
        return sum(len(retrieve(index, q, applicable_conditions(q, kb), TOP_K, "dense")) for q in questions)

    retrievals, search_wall, search_cpu = timed(search)
    assert index.dense is not None
    peak = peak_rss_mb()
    return {"entries": len(docs), "kb_questions": len(kb_held), "dim": dim, "dense_search": config.dense_search,
            "embedded_texts": embedder.texts, "questions": len(questions), "filtered_retrievals": retrievals,
            "estimate": {"texts": estimate.texts, "tokens": estimate.tokens, "usd_at_example_price": estimate.usd,
                         "example_price_per_million": price},
            "seconds": {"knowledge_base": {"wall": kb_wall, "cpu": kb_cpu},
                        "index": {"wall": index_wall, "cpu": index_cpu},
                        "retrieve": {"wall": search_wall, "cpu": search_cpu}},
            "index_mb": round(index.dense.ntotal * index.dense.d * 4 / 2**20, 1),
            "peak_rss_mb": round(peak, 1), "limit_mb": LIMIT_MB,
            "ratio_to_limit": round(peak / LIMIT_MB, 3), "within_limit": peak <= LIMIT_MB}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb-questions", type=int, default=None, help="only the selection's first N questions")
    parser.add_argument("--questions", type=int, default=700)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--price", type=float, default=EXAMPLE_PRICE)
    args = parser.parse_args()
    print(json.dumps(run(args.kb_questions, args.questions, args.dim, args.price), indent=2))


if __name__ == "__main__":
    main()
