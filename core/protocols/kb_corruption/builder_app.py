"""The Build benchmark tab's build of RAG-Stress knowledge-base corruption (declared as the package's Builder)."""

from __future__ import annotations

from pathlib import Path

from core.protocols.base import BuildResult
from core.protocols.kb_corruption.builder import build_ragstress
from core.protocols.progress import Progress


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """`gauntlet kb-corruption build` from MMLU questions: out_dir/instances.jsonl and its summary."""
    report = build_ragstress(source, out_dir, seed, embedder=None if bm25_only else "minilm-onnx", limit=limit,
                             progress=progress)
    lines = [f"{report.questions} questions, {report.kb_documents} knowledge-base entries "
             f"({report.retrievable_documents} retrievable), retriever {report.retriever['mode']}"]
    lines += [f"{name}: {row['queries']} queries, own entry first {row['own_entry_first']:.1%}"
              for name, row in report.conditions.items()]
    return BuildResult(out_dir / "instances.jsonl", report.questions, lines)
