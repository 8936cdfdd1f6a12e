"""Authorised builds of each protocol's benchmark file, as the app runs them: the same core builders the
`gauntlet <protocol> build` commands call, each re-checking the admin's role (build_benchmark) first."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine

from core.protocols.progress import Progress
from core.review.auth import Principal, authorize


@dataclass(frozen=True)
class ProtocolBuild:
    """A built, importable benchmark file: its protocol, path, instance count, summary lines and skipped items."""

    protocol: str
    out: Path
    instances: int
    summary: list[str]
    skipped: list[str] = field(default_factory=list)


def build_kb_corruption(engine: Engine, principal: Principal | None, questions: Path, out_dir: Path, *, seed: int = 0,
                        limit: int | None = None, bm25_only: bool = True,
                        progress: Progress | None = None) -> ProtocolBuild:
    """RAG-Stress knowledge-base corruption (`gauntlet kb-corruption build`): out_dir/instances.jsonl."""
    from core.protocols.kb_corruption.builder import build_ragstress

    authorize(engine, principal, "build_benchmark")
    report = build_ragstress(questions, out_dir, seed, embedder=None if bm25_only else "minilm-onnx", limit=limit,
                             progress=progress)
    lines = [f"{report.questions} questions, {report.kb_documents} knowledge-base entries "
             f"({report.retrievable_documents} retrievable), retriever {report.retriever['mode']}"]
    lines += [f"{name}: {row['queries']} queries, own entry first {row['own_entry_first']:.1%}"
              for name, row in report.conditions.items()]
    return ProtocolBuild("kb_corruption", out_dir / "instances.jsonl", report.questions, lines)


def build_misleading_evidence(engine: Engine, principal: Principal | None, source: Path, fmt: str, out: Path, *,
                              seed: int = 0, limit: int | None = None,
                              progress: Progress | None = None) -> ProtocolBuild:
    """RAG-Stress misleading evidence (`gauntlet misleading-evidence build`) from a HotpotQA or MedQA file."""
    from core.protocols.misleading_evidence.builder_plans import build_stress_file

    authorize(engine, principal, "build_benchmark")
    result, items, _ = build_stress_file(source, fmt, out, seed, limit=limit, progress=progress)
    lines = [f"{items} source items: {len(result.instances)} built, {len(result.skipped)} without a safe edit"]
    lines += [f"skipped, {reason}: {count}" for reason, count in result.reasons().items()]
    return ProtocolBuild("misleading_evidence", out, len(result.instances), lines,
                         [f"{s.id}: {s.reason}" for s in result.skipped])


def build_domainrag(engine: Engine, principal: Principal | None, data: Path, out: Path, *, limit: int | None = None,
                    bm25_only: bool = True, progress: Progress | None = None) -> ProtocolBuild:
    """DomainRAG (`gauntlet domainrag build`) from the shared release folder."""
    from core.protocols.domainrag.builder import BuildOptions, build_instances, write_jsonl

    authorize(engine, principal, "build_benchmark")
    payloads, report = build_instances(BuildOptions(data=data, embedder=None if bm25_only else "minilm-onnx",
                                                    limit=limit), progress)
    count = write_jsonl(payloads, out)
    lines = [f"{kind}: {n} instances" for kind, n in sorted(report.instances.items())]
    lines += [f"{setting} documents: {n}" for setting, n in sorted(report.documents.items())]
    return ProtocolBuild("domainrag", out, count, lines)
