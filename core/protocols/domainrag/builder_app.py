"""The Build benchmark tab's build of DomainRAG (declared as the package's Builder)."""

from __future__ import annotations

from pathlib import Path

from core.protocols.base import BuildResult
from core.protocols.domainrag.builder import BuildOptions, build_instances, write_jsonl
from core.protocols.progress import Progress


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """`gauntlet domainrag build` from the release folder: out_dir/instances.jsonl and its counts."""
    payloads, report = build_instances(BuildOptions(data=source, embedder=None if bm25_only else "minilm-onnx",
                                                    limit=limit), progress)
    count = write_jsonl(payloads, out_dir / "instances.jsonl")
    lines = [f"{kind}: {n} instances" for kind, n in sorted(report.instances.items())]
    lines += [f"{setting} documents: {n}" for setting, n in sorted(report.documents.items())]
    return BuildResult(out_dir / "instances.jsonl", count, lines)
