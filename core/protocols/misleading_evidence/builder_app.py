"""The Build benchmark tab's build of RAG-Stress misleading evidence (declared as the package's Builder)."""

from __future__ import annotations

from pathlib import Path

from core.protocols.base import BuildResult
from core.protocols.misleading_evidence.builder_plans import build_stress_file
from core.protocols.progress import Progress


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """`gauntlet misleading-evidence build` from a HotpotQA or MedQA file: out_dir/instances.jsonl, the skipped items
    with their reasons."""
    result, items, _ = build_stress_file(source, fmt, out_dir / "instances.jsonl", seed, limit=limit, progress=progress)
    lines = [f"{items} source items: {len(result.instances)} built, {len(result.skipped)} without a safe edit"]
    lines += [f"skipped, {reason}: {count}" for reason, count in result.reasons().items()]
    return BuildResult(out_dir / "instances.jsonl", len(result.instances), lines,
                       [f"{s.id}: {s.reason}" for s in result.skipped])
